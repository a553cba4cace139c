"""Scores: four axes per episode, the composite, and means with intervals over episodes.

- breadth: accuracy on retrieval questions;
- maintenance: accuracy on update, delta and counterfactual questions, times the storage gate (the share
  of entities the non-abstention questions need whose name appears in a stored note at the end), so keeping
  facts right only counts as far as facts were kept at all; computed the same way for every agent;
- reasoning: accuracy on the reasoning kinds;
- efficiency: accuracy on non-abstention questions times min(1, reference writes / writes used), where the
  reference is what the perfect scripted strategy spent on this episode; it never exceeds accuracy, and a
  perfect agent that spends no more than the reference scores 1.0.
composite = 0.30 breadth + 0.25 maintenance + 0.25 reasoning + 0.20 efficiency, so a perfect agent reaches
1.0 on every tier. Abstention accuracy is reported on its own. A skipped question counts as wrong.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

from ...scoring.metrics import mean_ci
from .checker import Verdict, normalise
from .model import Episode
from .solve import axis_of

WEIGHTS: dict[str, float] = {"breadth": 0.30, "maintenance": 0.25, "reasoning": 0.25, "efficiency": 0.20}
AXES = tuple(WEIGHTS)


@dataclass(frozen=True)
class EpisodeScore:
    """One episode's axes, composite, and the counts behind them."""

    breadth: float | None
    maintenance: float | None
    reasoning: float | None
    efficiency: float | None
    composite: float | None
    abstention: float | None
    accuracy: float
    storage_gate: float
    writes_used: int
    reference_writes: int
    questions: int
    skipped: int

    def to_dict(self) -> dict[str, float | int | None]:
        """Plain values for JSON."""
        return asdict(self)


def _acc(flags: list[bool]) -> float | None:
    return sum(flags) / len(flags) if flags else None


def storage_gate(episode: Episode, notes: Sequence[str]) -> float:
    """Share of the entities non-abstention questions need that a stored note names."""
    needed = {e for q in episode.questions if q.kind != "abstention" for e, _ in q.needs}
    if not needed:
        return 1.0
    text = " " + normalise(" ".join(notes)) + " "
    return sum(1 for e in needed if f" {normalise(e)} " in text) / len(needed)


def score_episode(episode: Episode, verdicts: Mapping[str, Verdict], writes_used: int,
                  notes: Sequence[str]) -> EpisodeScore:
    """The axes of one episode. ``verdicts`` maps question id to verdict; a missing id counts as wrong."""
    by_axis: dict[str, list[bool]] = {"breadth": [], "maintenance": [], "reasoning": [], "abstention": []}
    answered: list[bool] = []
    skipped = 0
    for q in episode.questions:
        v = verdicts.get(q.id)
        ok = bool(v and v.correct)
        skipped += v is None or v.reason.startswith("no answer")
        by_axis[axis_of(q.kind)].append(ok)
        if q.kind != "abstention":
            answered.append(ok)
    gate = storage_gate(episode, notes)
    maint = _acc(by_axis["maintenance"])
    acc_non_abstain = _acc(answered) or 0.0
    ref = episode.reference_writes
    spend = 1.0 if writes_used <= ref else ref / writes_used
    axes = {
        "breadth": _acc(by_axis["breadth"]),
        "maintenance": None if maint is None else maint * gate,
        "reasoning": _acc(by_axis["reasoning"]),
        "efficiency": acc_non_abstain * spend if answered else None,
    }
    present = {k: v for k, v in axes.items() if v is not None}
    total_w = sum(WEIGHTS[k] for k in present)
    composite = sum(WEIGHTS[k] * v for k, v in present.items()) / total_w if present else None
    all_flags = [bool(verdicts.get(q.id) and verdicts[q.id].correct) for q in episode.questions]
    return EpisodeScore(**axes, composite=composite, abstention=_acc(by_axis["abstention"]),
                        accuracy=sum(all_flags) / len(all_flags), storage_gate=gate, writes_used=writes_used,
                        reference_writes=ref, questions=len(all_flags), skipped=skipped)


def aggregate(scores: Sequence[EpisodeScore]) -> dict[str, dict[str, float | int | None]]:
    """Mean and 95 % t-interval over episodes for every axis, the composite, abstention and accuracy."""
    out = {}
    for key in (*AXES, "composite", "abstention", "accuracy", "storage_gate"):
        vals = [getattr(s, key) for s in scores if getattr(s, key) is not None]
        out[key] = mean_ci(vals)
    return out
