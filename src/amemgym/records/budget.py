"""A budget episode's ``results.json``: the unit record with its score blocks range-checked and re-derived.

The board, report and ``compare`` read the axes and composite from ``score``; a value outside [0, 1], not a
number or not finite (a hand edit) is refused with the file and field named, never averaged. So is a number
that disagrees with the rest of the record (a composite that is not the weighted mean of its axes, an axis the
per-question outcomes do not give, or, while the episode file it played is still there, a storage gate,
maintenance or writes count its ledger does not give: ``families/budget/recheck.py``). Every unit record is
read through :func:`parse_unit_record`, which picks this model for a budget episode's record.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from ..errors import RunError
from ..families.budget.recheck import ledger_disagreement, played_episode, score_disagreement
from .base import parse_record
from .units import UnitRecord

__all__ = ["BudgetRecord", "EpisodeScores", "parse_unit_record"]

#: A share in [0, 1]: a JSON number (not a string or a boolean), finite.
Share = Annotated[float, Field(ge=0.0, le=1.0, strict=True, allow_inf_nan=False)]
#: A count of writes or questions.
Count = Annotated[int, Field(ge=0)]


class EpisodeScores(BaseModel):
    """One episode's axes, composite and the counts behind them (``families/budget/scoring.EpisodeScore``)."""

    model_config = ConfigDict(extra="allow", defer_build=True)

    breadth: Share | None = None
    maintenance: Share | None = None
    reasoning: Share | None = None
    efficiency: Share | None = None
    composite: Share | None = None
    abstention: Share | None = None
    accuracy: Share | None = None
    storage_gate: Share | None = None
    writes_used: Count | None = None
    reference_writes: Count | None = None
    questions: Count | None = None
    skipped: Count | None = None


class BudgetRecord(UnitRecord):
    """A budget episode's record: the rule scores (``score``) and, with the judge, ``score_judged``."""

    kind: ClassVar[str] = "budget results"

    score: EpisodeScores | None = None
    score_judged: EpisodeScores | None = None


def parse_unit_record(raw: Any, where: str) -> UnitRecord:
    """Validate a unit record (a budget one as :class:`BudgetRecord`); a budget ``results.json`` of
    format 1 (its own content version, written before run files were versioned) is read as unversioned with that
    number as ``results_version``.

    Raises:
        RunError: wrong shape, an unknown format version, or (a budget record) a stored number that disagrees
            with the record's own axes, answers or ledger, naming ``where`` and the field.
    """
    if isinstance(raw, dict) and raw.get("format_version") == 1 and "results_version" not in raw:
        raw = {**{k: v for k, v in raw.items() if k != "format_version"}, "results_version": 1}
    # A family whose record has fields of its own is validated with them (a budget episode's scores).
    model = BudgetRecord if isinstance(raw, dict) and raw.get("family") == "budget" else UnitRecord
    record = parse_record(raw, model, where)
    if isinstance(record, BudgetRecord):
        # The ranges hold; the numbers must also agree with what the record derives them from.
        data = record.model_dump(mode="python")
        wrong = score_disagreement(data)
        if wrong is None and (episode := played_episode(data)) is not None:
            # The gate and the maintenance it gates, worked out again from the ledger and the episode played.
            wrong = ledger_disagreement(data, episode)
        if wrong is not None:
            raise RunError(f"{where}: {wrong[0]}: {wrong[1]} (not a valid {model.kind} record: edited by hand?)")
    return record
