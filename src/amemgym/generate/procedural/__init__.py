"""The offline, deterministic generator and its content pack (SPEC §3.2)."""

from __future__ import annotations

from pathlib import Path

from .generator import generate_procedural
from .pack import Domain, Question, Value, Variable, pack_problems
from .packs import all_domains, pack_stats

__all__ = [
    "Domain",
    "Question",
    "Value",
    "Variable",
    "all_domains",
    "generate_procedural",
    "pack_problems",
    "pack_stats",
    "tiny_environment_path",
]


def tiny_environment_path() -> Path:
    """The shipped ``tiny`` environment: ``generate_procedural(env_preset("tiny"), seed=42)``."""
    return Path(__file__).parent.parent / "data" / "tiny.json"
