"""The numbers of a budget ``results.json`` worked out again from the record itself.

A record keeps its per-question outcomes (``answers``: kind, ``correct``, ``reason``, the judge's verdict) beside
the ``score`` derived from them, so a reader can tell a hand edit from a scored episode: the composite must be
the weighted mean of the axes the record holds, and breadth, reasoning, efficiency, abstention, accuracy, the
question and skip counts and ``per_kind`` must be what the answers give. Maintenance also needs the episode's
changes (which note stored which original value), so only its bounds are checked: no more than the share of
maintenance questions answered right, nor than the storage gate. A record without per-question outcomes (an
older or hand-made one) has its composite checked against its axes and nothing more.

The record also keeps the store's ledger (every note text a write or edit left) and names the episode file it
played, with that file's sha256. When the file is still there with those bytes, :func:`ledger_disagreement`
works out again what the record alone cannot: the writes charged, the storage gate and the maintenance axis it
gates (``scoring.maintenance_credit`` on the ledger), so a gate raised by hand together with maintenance is
caught too. A file that is gone or holds other bytes leaves those three checked only against their bounds.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from ...errors import DataError
from ...redact import MASK
from .io import load_episode
from .model import Episode
from .scoring import AXES, DEFINITIONS, composite_of, maintenance_credit, share, write_spend
from .solve import ABSTENTION_KINDS, ALL_KINDS, BREADTH_KINDS, MAINTENANCE_KINDS, REASONING_KINDS
from .store import LedgerEntry

__all__ = ["TOLERANCE", "ledger_disagreement", "played_episode", "score_disagreement"]

#: How far a stored number may sit from the one worked out again (floating-point noise, never a hand edit).
TOLERANCE = 1e-6

#: The kinds behind each per-question axis.
_AXIS_KINDS: dict[str, tuple[str, ...]] = {"breadth": BREADTH_KINDS, "reasoning": REASONING_KINDS,
                                          "abstention": ABSTENTION_KINDS}


def _differs(stored: Any, derived: float | int | None) -> bool:
    """Whether a stored number (or null) is not the derived one (within :data:`TOLERANCE`)."""
    if derived is None or stored is None:
        return (derived is None) != (stored is None)
    return abs(float(stored) - float(derived)) > TOLERANCE


def _show(x: float | int | None) -> str:
    return "null" if x is None else f"{x:.4f}" if isinstance(x, float) else str(x)


def _outcomes(record: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]] | None:
    """The record's answers as (kind, answer) pairs, or None when it holds no usable per-question outcomes."""
    answers = record.get("answers")
    if not isinstance(answers, dict) or not answers:
        return None
    out = []
    for a in answers.values():
        if not (isinstance(a, dict) and a.get("kind") in ALL_KINDS and isinstance(a.get("correct"), bool)):
            return None
        out.append((str(a["kind"]), a))
    return out


def _rule_right(a: Mapping[str, Any]) -> bool:
    return bool(a["correct"])


def _judged_right(a: Mapping[str, Any]) -> bool:
    """Right after the judge: by rule, or overturned by a judge verdict that did not fail."""
    j = a.get("judge")
    return bool(a["correct"]) or (isinstance(j, dict) and j.get("correct") is True and not j.get("error"))


def _block_problem(block: Mapping[str, Any], outcomes: list[tuple[str, dict[str, Any]]] | None,
                   right: Callable[[Mapping[str, Any]], bool]) -> tuple[str, str] | None:
    """The first field of one score block that disagrees with what the record derives it from."""
    if outcomes is not None:
        oks = [(kind, right(a)) for kind, a in outcomes]
        derived: dict[str, float | int | None] = {
            axis: share([ok for kind, ok in oks if kind in kinds]) for axis, kinds in _AXIS_KINDS.items()}
        derived["accuracy"] = sum(ok for _, ok in oks) / len(oks)
        derived["questions"] = len(oks)
        answered = [ok for kind, ok in oks if kind not in ABSTENTION_KINDS]
        used, ref = block.get("writes_used"), block.get("reference_writes")
        if isinstance(used, int) and isinstance(ref, int):
            derived["efficiency"] = (share(answered) or 0.0) * write_spend(used, ref) if answered else None
        reasons = [a.get("reason") for _, a in outcomes]
        if all(isinstance(r, str) for r in reasons):
            derived["skipped"] = sum(str(r).startswith("no answer") for r in reasons)
        for name, value in derived.items():
            if name in block and _differs(block[name], value):
                return name, (f"{_show(block[name])} is not what the record's answers give ({_show(value)}); "
                              "the score no longer matches its per-question outcomes")
        maintained = [ok for kind, ok in oks if kind in MAINTENANCE_KINDS]
        stored = block.get("maintenance")
        if (stored is None) != (not maintained):
            return "maintenance", (f"{_show(stored)} does not fit the record's answers ({len(maintained)} "
                                   "maintenance question(s))")
        caps = [x for x in (share(maintained), block.get("storage_gate")) if x is not None]
        if stored is not None and caps and float(stored) > min(caps) + TOLERANCE:
            return "maintenance", (f"{_show(float(stored))} is above what the record allows (at most "
                                   f"{_show(float(min(caps)))}: the share of maintenance questions answered right, "
                                   "capped by the storage gate)")
    if any(k in block for k in AXES) and _differs(block.get("composite"), composite_of(block)):
        return "composite", (f"{_show(block.get('composite'))} is not what its axes give ({DEFINITIONS['composite']} = "
                             f"{_show(composite_of(block))})")
    return None



def score_disagreement(record: Mapping[str, Any]) -> tuple[str, str] | None:
    """The first stored number of a budget record that disagrees with the record itself, as (field path,
    problem); None when everything that can be worked out again agrees."""
    outcomes = _outcomes(record)
    for name, right in (("score", _rule_right), ("score_judged", _judged_right)):
        block = record.get(name)
        if isinstance(block, Mapping):
            found = _block_problem(block, outcomes, right)
            if found is not None:
                return f"{name}.{found[0]}", found[1]
    per_kind = record.get("per_kind")
    if outcomes is not None and isinstance(per_kind, Mapping):
        counted: dict[str, list[int]] = {}
        for kind, a in outcomes:
            counted.setdefault(kind, [0, 0])
            counted[kind][0] += bool(a["correct"])
            counted[kind][1] += 1
        for kind, stats in per_kind.items():
            got = counted.get(str(kind), [0, 0])
            if not isinstance(stats, Mapping) or [stats.get("correct"), stats.get("total")] != got:
                return f"per_kind.{kind}", (f"{stats!r} is not what the record's answers give "
                                            f"({{'correct': {got[0]}, 'total': {got[1]}}})")
    return None


@lru_cache(maxsize=32)
def _episode_with_digest(path: str, digest: str) -> Episode | None:
    """The episode in ``path`` when its bytes hash to ``digest`` (parsed once per process and content)."""
    try:
        raw = Path(path).read_bytes()
    except OSError:
        return None
    if hashlib.sha256(raw).hexdigest() != digest:
        return None
    try:
        # Not regenerated: the run played these very bytes, whatever generator made them.
        episode, _ = load_episode(Path(path), verify=False)
    except DataError:
        return None
    return episode


def played_episode(record: Mapping[str, Any]) -> Episode | None:
    """The episode a record says it played (``environment_file``), if that file still holds the bytes whose
    sha256 the record keeps (``environment_sha256``); None otherwise."""
    path, digest = record.get("environment_file"), record.get("environment_sha256")
    if not isinstance(path, str) or not isinstance(digest, str) or not path:
        return None
    return _episode_with_digest(path, digest)


def _ledger_of(raw: Any) -> list[LedgerEntry] | None:
    """The record's ledger as entries, or None when it is not a list of well-formed ones."""
    if not isinstance(raw, list):
        return None
    out = []
    for e in raw:
        if not (isinstance(e, dict) and isinstance(e.get("event"), int) and isinstance(e.get("charged"), int)
                and isinstance(e.get("refunded"), bool) and isinstance(e.get("text"), str | None)):
            return None
        out.append(LedgerEntry(e["event"], str(e.get("op")), e["charged"], e["refunded"], e.get("note"),
                               str(e.get("reason") or ""), e.get("text")))
    return out


def ledger_disagreement(record: Mapping[str, Any], episode: Episode) -> tuple[str, str] | None:
    """The first of the writes charged, the storage gate and maintenance (in ``score``, then ``score_judged``)
    that is not what the record's ledger gives over ``episode`` (the episode it played), as (field path,
    problem); None when they agree."""
    if "ledger" not in record:
        # Every run writes its ledger beside the episode it names: without it nothing here can be checked.
        return "ledger", "missing (every budget record keeps the ledger its storage gate is worked out from)"
    ledger = _ledger_of(record.get("ledger"))
    if ledger is None:
        return "ledger", "not a list of ledger entries (event, op, charged, refunded, note, reason, text)"
    credit = maintenance_credit(episode, ledger)
    # A note text shaped like a key was masked on its way to disk: it may have held a value the run credited, so
    # the gate and maintenance worked out from the masked ledger are only a floor for the stored ones.
    masked = any(MASK in (e.text or "") for e in ledger)
    derived: dict[str, float | int | None] = {
        "writes_used": sum(e.charged for e in ledger if not e.refunded),
        "storage_gate": sum(credit.values()) / len(credit) if credit else 1.0}
    answers = record.get("answers")
    answers = answers if isinstance(answers, Mapping) else {}
    for name, right in (("score", _rule_right), ("score_judged", _judged_right)):
        block = record.get(name)
        if not isinstance(block, Mapping):
            continue
        # As the scorer gates it: a maintenance question counts only when right and its fact stored in time.
        derived["maintenance"] = share([isinstance(a := answers.get(qid), Mapping) and "correct" in a and right(a)
                                        and stored for qid, stored in credit.items()])
        for key, value in derived.items():
            floor_only = masked and key != "writes_used" and value is not None and block.get(key) is not None
            if floor_only and float(block[key]) >= float(value) - TOLERANCE:  # type: ignore[arg-type]
                continue
            if key in block and _differs(block[key], value):
                source = ("the record's ledger charges" if key == "writes_used" else
                          "the record's ledger gives over the changes of the episode file it played")
                return f"{name}.{key}", f"{_show(block[key])} is not what {source} ({_show(value)})"
    return None
