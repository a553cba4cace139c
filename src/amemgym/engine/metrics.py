"""``metrics.json`` of a unit-family run: every registered unit metric per unit, and per group over units."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..scoring.registry import unit_metrics
from .pool import Found, build_entries

__all__ = ["unit_run_metrics"]


def unit_run_metrics(family: str, found: Sequence[Found], planned: Sequence[str]) -> dict[str, Any]:
    """Per unit (by id) each metric's value; per group each metric's mean with its 95 % t-interval over units.

    ``planned`` are the ids of every unit the run planned: those without a record are ``missing``, and the run
    is ``complete`` only without any.
    """
    metrics = unit_metrics(family)
    per_unit = {str(f.record.get("unit")): {"label": f.label, "group": f.record.get("group"),
                                            **{m.name: f.value(m) for m in metrics}} for f in found}
    groups: dict[str, dict[str, Any]] = {}
    for e in build_entries(found):
        groups[e.group] = {"units": len(e.unit_set), "protocol": e.protocol,
                           **{m.name: e.stat(m) for m in metrics}}
    missing = [u for u in planned if u not in per_unit]
    return {"family": family, "per_unit": per_unit, "groups": groups, "complete": not missing,
            "missing": missing, "definitions": {m.name: m.description for m in metrics}}
