"""The budget family's own options of ``generate`` and ``validate`` (its ``run`` takes only the shared ones)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class GenerateOptions:
    """The tier and domain template of one episode, or ``official``: every built-in domain at the official
    seeds; ``packs`` (``--pack``) are folders or files of further domains."""

    tier: str = "lite"
    domain: str | None = None
    official: bool = False
    packs: tuple[Path, ...] = ()


@dataclass(frozen=True)
class ValidateOptions:
    """``seeds``: also validate seeds 0..N-1 of every domain at the file's tier."""

    seeds: int = 0
