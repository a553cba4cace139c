"""Scores: four axes per episode, the composite, and means with intervals over episodes.

- breadth: accuracy on retrieval questions;
- maintenance: the share of update, delta and counterfactual questions answered right *and* whose fact was
  stored before its change arrived: some write or edit made before the change's event left a note stating
  the entity's original value next to its name (the ledger keeps each note's text after every write). An
  agent that stores only names and the changes it is told about earns nothing here; computed the same way
  for every agent;
- reasoning: accuracy on the reasoning kinds;
- efficiency: accuracy on non-abstention questions times min(1, reference writes / writes used), where the
  reference knows nothing of the questions: the writes needed to store every fact the documents state,
  capped by the budget (generate.py). It never exceeds accuracy; an agent that answers everything right
  scores 1.0 as long as it stays within the reference, which on every tier is the whole budget.
composite = 0.30 breadth + 0.25 maintenance + 0.25 reasoning + 0.20 efficiency, so a perfect agent reaches
1.0 on every tier. Abstention accuracy is reported on its own. A skipped question counts as wrong.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

from ...scoring.intervals import mean_ci
from .checker import Verdict, close, numbers
from .domain import episode_domain
from .model import Episode
from .solve import axis_of
from .store import LedgerEntry

WEIGHTS: dict[str, float] = {"breadth": 0.30, "maintenance": 0.25, "reasoning": 0.25, "efficiency": 0.20}
AXES = tuple(WEIGHTS)
#: How the composite and the axes that are not plain accuracies are computed, written into every results file.
DEFINITIONS: dict[str, str] = {
    "composite": "0.30 breadth + 0.25 maintenance + 0.25 reasoning + 0.20 efficiency",
    "maintenance": "share of update, delta and counterfactual questions answered right whose original value was "
                   "stored (next to the entity's name) by a write made before the change arrived",
    "efficiency": "non-abstention accuracy x min(1, reference writes / writes used); the reference is the writes "
                  "storing every documented fact would take, capped by the budget (it does not know the questions)",
    "storage_gate": "share of maintenance questions whose original value was stored before the change arrived",
    "reference_writes": "writes storing every fact the documents state would take (one fact a line, packed into "
                        "notes of the cap), capped by the tier's write budget; it knows nothing of the questions",
}


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
    #: Share of the maintenance questions whose fact was stored before its change arrived (1.0 without any).
    storage_gate: float
    writes_used: int
    reference_writes: int
    questions: int
    skipped: int

    def to_dict(self) -> dict[str, float | int | None]:
        """Plain values for JSON."""
        return asdict(self)


def share(flags: Sequence[bool]) -> float | None:
    """The share of ``flags`` that are true (None for none at all)."""
    return sum(flags) / len(flags) if flags else None


def write_spend(writes_used: int, reference_writes: int) -> float:
    """Efficiency's factor for the writes spent: 1 up to the reference, then reference / used."""
    ref = max(reference_writes, 0)
    return 1.0 if writes_used <= ref else ref / writes_used


def composite_of(axes: Mapping[str, float | None]) -> float | None:
    """The weighted mean of the axes present (weights renormalised over them; None when none is)."""
    present = {k: float(v) for k in AXES if (v := axes.get(k)) is not None}
    total = sum(WEIGHTS[k] for k in present)
    return sum(WEIGHTS[k] * v for k, v in present.items()) / total if present else None


def _mentions(names: Sequence[str]) -> re.Pattern[str]:
    """Any entity name as a whole phrase, case-insensitive, longest first (a name inside a longer one is not
    a mention of it)."""
    alternatives = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    return re.compile(r"(?<![\w])(" + alternatives + r")(?![\w])", re.I)


#: What may stand between two targets of one relation ("competes with A, B and C").
_LIST_GAP = re.compile(r"\s*(?:,|;|&|and|,\s*and)\s*", re.I)


def _linking(phrases: Sequence[str]) -> re.Pattern[str] | None:
    """A relation phrase right before a mention ("competes with (", "supplies to: "): the mention is its target."""
    if not phrases:
        return None
    alternatives = "|".join(re.escape(p) for p in sorted(phrases, key=len, reverse=True))
    return re.compile(r"(?:" + alternatives + r")[\s:(\[\"']*$", re.I)


def _segments(text: str, pattern: re.Pattern[str], linking: re.Pattern[str] | None = None) -> dict[str, list[str]]:
    """The stretches of ``text`` after each mention of an entity (lower-cased name), up to the next mention that
    starts a new subject. A relation's targets ("Tidal Brands (competes with Orchid Works): share 13.49") are not
    subjects: what follows them still belongs to the entity the note is about."""
    hits = list(pattern.finditer(text))
    subjects = []
    target = False
    for i, m in enumerate(hits):
        before = text[hits[i - 1].end() if i else 0: m.start()]
        target = bool(i) and linking is not None and (
            linking.search(before) is not None or (target and _LIST_GAP.fullmatch(before) is not None))
        if not target:
            subjects.append(m)
    out: dict[str, list[str]] = {}
    for i, m in enumerate(subjects):
        end = subjects[i + 1].start() if i + 1 < len(subjects) else len(text)
        out.setdefault(m.group(1).lower(), []).append(text[m.end():end])
    return out


def originals_stored(episode: Episode, ledger: Sequence[LedgerEntry]) -> list[bool]:
    """Per change: whether a write or edit made before the change's event left a note that states the
    original value after the entity's name (before the next entity's name)."""
    if not episode.changes:
        return []
    event_of = {ev.change: ev.index for ev in episode.events if ev.change is not None}
    pattern = _mentions(episode.entity_names)
    linking = _linking([r.phrase for r in episode_domain(episode).relations])
    wanted = {c.entity.lower() for c in episode.changes}
    # Per ledger text, the numbers stated in each changed entity's stretches.
    stated = []
    for e in ledger:
        if e.text and not e.refunded:
            segs = _segments(e.text, pattern, linking)
            found = {k: [x for seg in v for x in numbers(seg)] for k, v in segs.items() if k in wanted}
            stated.append((e.event, found))
    out = []
    for i, c in enumerate(episode.changes):
        arrived = event_of.get(i, -1)
        integer = isinstance(c.old, int)
        out.append(any(close(x, float(c.old), integer)
                       for event, found in stated if event < arrived for x in found.get(c.entity.lower(), [])))
    return out


def maintenance_credit(episode: Episode, ledger: Sequence[LedgerEntry]) -> dict[str, bool]:
    """Per maintenance question: whether its fact was stored before its change arrived."""
    stored = originals_stored(episode, ledger)
    change_of = {(c.entity, c.attr): i for i, c in enumerate(episode.changes)}
    out = {}
    for q in episode.questions:
        if axis_of(q.kind) == "maintenance":
            i = change_of.get((q.spec.entities[0], q.spec.attrs[0])) if q.spec.entities and q.spec.attrs else None
            out[q.id] = i is not None and stored[i]
    return out


def score_episode(episode: Episode, verdicts: Mapping[str, Verdict], writes_used: int,
                  ledger: Sequence[LedgerEntry]) -> EpisodeScore:
    """The axes of one episode. ``verdicts`` maps question id to verdict; a missing id counts as wrong.

    ``ledger`` is the store's (or meter's) ledger: the maintenance gate reads the note texts it recorded.
    """
    by_axis: dict[str, list[bool]] = {"breadth": [], "maintenance": [], "reasoning": [], "abstention": []}
    answered: list[bool] = []
    skipped = 0
    credit = maintenance_credit(episode, ledger)
    for q in episode.questions:
        v = verdicts.get(q.id)
        ok = bool(v and v.correct)
        skipped += v is None or v.reason.startswith("no answer")
        axis = axis_of(q.kind)
        by_axis[axis].append(ok and credit[q.id] if axis == "maintenance" else ok)
        if q.kind != "abstention":
            answered.append(ok)
    gate = sum(credit.values()) / len(credit) if credit else 1.0
    acc_non_abstain = share(answered) or 0.0
    ref = max(episode.reference_writes, 0)
    axes = {
        "breadth": share(by_axis["breadth"]),
        "maintenance": share(by_axis["maintenance"]),
        "reasoning": share(by_axis["reasoning"]),
        "efficiency": acc_non_abstain * write_spend(writes_used, ref) if answered else None,
    }
    all_flags = [bool(verdicts.get(q.id) and verdicts[q.id].correct) for q in episode.questions]
    return EpisodeScore(**axes, composite=composite_of(axes), abstention=share(by_axis["abstention"]),
                        accuracy=sum(all_flags) / len(all_flags) if all_flags else 0.0, storage_gate=gate,
                        writes_used=writes_used,
                        reference_writes=ref, questions=len(all_flags), skipped=skipped)


def aggregate(scores: Sequence[EpisodeScore]) -> dict[str, dict[str, float | int | None]]:
    """Mean and 95 % t-interval over episodes for every axis, the composite, abstention and accuracy."""
    out = {}
    for key in (*AXES, "composite", "abstention", "accuracy", "storage_gate"):
        vals = [getattr(s, key) for s in scores if getattr(s, key) is not None]
        out[key] = mean_ci(vals)
    return out
