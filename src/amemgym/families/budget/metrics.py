"""The budget family's axes and composite as registered unit metrics (their formulas live in ``scoring.py``).

Each reads one episode's ``score`` block of its results record; the engine averages them over episodes per
tier with a t-interval, ranks boards by the composite and writes their definitions into ``metrics.json``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ...scoring.registry import unit_metric, unit_metrics
from .model import FAMILY
from .scoring import DEFINITIONS

__all__ = ["register"]

#: What efficiency measures the writes against, in the words the results records carry too.
REFERENCE_WRITES = DEFINITIONS["reference_writes"]

#: name -> (description, label, bounded, higher is better, headline)
_METRICS: dict[str, tuple[str, str, bool, bool | None, bool]] = {
    "composite": ("0.30 breadth + 0.25 maintenance + 0.25 reasoning + 0.20 efficiency, per episode", "composite",
                  True, True, True),
    "breadth": ("accuracy on retrieval questions", "breadth", True, True, False),
    "maintenance": ("accuracy on update, delta and counterfactual questions times the storage gate", "maintenance",
                    True, True, False),
    "reasoning": ("accuracy on the reasoning question kinds", "reasoning", True, True, False),
    "efficiency": ("non-abstention accuracy times min(1, reference writes / writes used)", "efficiency", True, True,
                   False),
    "abstention": ("accuracy on questions whose answer is not in the stream (reported apart, not in the composite)",
                   "abstention", True, True, False),
    "accuracy": ("share of all questions answered right (a skipped question is wrong)", "accuracy", True, True,
                 False),
    "writes_used": ("writes the episode's store charged", "writes used", False, False, False),
    "reference_writes": (REFERENCE_WRITES, "reference writes", False, None, False),
}


def _reader(name: str) -> Callable[[Mapping[str, Any]], Any]:
    def read(record: Mapping[str, Any]) -> Any:
        return (record.get("score") or {}).get(name)

    return read


def register() -> None:
    """Register the metrics once (importing this module does it)."""
    if unit_metrics(FAMILY):
        return
    for name, (description, label, bounded, better, headline) in _METRICS.items():
        unit_metric(FAMILY, name, description, label=label, bounded=bounded, higher_is_better=better,
                    headline=headline, trials=name != "reference_writes", column=name != "accuracy")(_reader(name))


register()
