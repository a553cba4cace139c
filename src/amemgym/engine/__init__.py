"""The family-agnostic engine: everything a run has in common, whatever family it plays.

A family that runs on the engine provides a :class:`~amemgym.engine.contract.UnitFamily` (its units, how to
plan and play one, its panels) and registers its unit metrics (:func:`amemgym.scoring.registry.unit_metric`).
The engine owns the rest (docs/design.md §11, §14, §15):

- :mod:`.runner` the run: preflight, lock, manifest, served-model pins, local executor, failures, metrics;
- :mod:`.ray` one Ray task per unit; :mod:`.trials` ``--trials`` and its summary;
- :mod:`.checkpoint` a unit's resume state and trace; :mod:`.usage` cumulative usage across kill and resume;
- :mod:`.progress` the live progress line (stalled calls reported within half a minute);
- :mod:`.pool` entries over units and trials, and pass^k; :mod:`.board` leaderboard and paired comparison;
- :mod:`.report` the self-contained HTML report with the family's panels; :mod:`.rundir` the run directory.

The statetrack family's runner (``amemgym.families.statetrack.runner``) shares the usage book, the progress
text and the report page with it.
"""

from __future__ import annotations

from .checkpoint import Checkpoint
from .contract import AgentPlan, Unit, UnitFamily, UnitRow, check_unit_family

__all__ = ["AgentPlan", "Checkpoint", "Unit", "UnitFamily", "UnitRow", "check_unit_family"]
