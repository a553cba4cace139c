"""The offline, deterministic generator and its content packs (docs/design.md)."""

from __future__ import annotations

from pathlib import Path

from .generator import generate_procedural
from .pack import Domain, Question, Value, Variable, pack_problems
from .packs import PackError, all_domains, load_pack, pack_stats, select_domains

__all__ = [
    "Domain",
    "PackError",
    "Question",
    "Value",
    "Variable",
    "all_domains",
    "generate_procedural",
    "load_pack",
    "pack_problems",
    "pack_stats",
    "select_domains",
    "tiny_environment_path",
]


def tiny_environment_path() -> Path:
    """The shipped ``tiny`` environment: ``generate_procedural(env_preset("tiny"), seed=42)``."""
    return Path(__file__).parent.parent / "data" / "tiny.json"
