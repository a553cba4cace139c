"""The statetrack family's own options of ``generate``, ``validate`` and ``run`` (beyond the shared ones).

The command builds these after resolving the family (:func:`amemgym.families.family_options`), so the budget
family never sees them and a statetrack command never sees the budget family's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class GenerateOptions:
    """``--generator`` picks the procedural generator or the LLM pipeline; ``domains`` and ``packs`` are the
    procedural generator's content, ``allow_partial`` and ``strict_checks`` the LLM pipeline's."""

    generator: str = "procedural"
    users: int | None = None
    personas: Path | None = None
    domains: str | None = None
    packs: Sequence[Path] = ()
    allow_partial: bool = False
    strict_checks: bool = False


@dataclass(frozen=True)
class ValidateOptions:
    """The shortcut suite's margin, recorded seed and embedder, the prior gate and when the judge reads exposure."""

    margin: float = 0.03
    seed: int = 0
    embedder: str = "auto"
    gate_prior: bool = False
    judge: bool | None = None  # the exposure judge: True always, False never, None auto (docs/design.md §8)


@dataclass(frozen=True)
class RunOptions:
    """Replaying a recorded run (``off_policy``), redrawing leaking simulator turns, and the estimate and JSON
    outputs of the statetrack runner."""

    off_policy: Path | None = None
    resimulate_leaks: bool = False
    dry_run: bool = False
    json: bool = False
