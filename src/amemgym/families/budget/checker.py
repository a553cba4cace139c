"""The rule checker: is a reply right, by number, name, text, date or refusal?

Rules:
- integers must match exactly; floats within 2 % (relative; 0.01 absolute near zero);
- the reply must commit to one answer: two different numbers, dates, names or category values make it
  wrong, so listing every candidate never scores (a known exploit of the original checker). One exception:
  a current number may come with its previous value when a label says so ("510 (revised from 480)",
  "510, was 480", "previously 480; now 510"), exactly one such labelled value and no hedging word;
- entity names and text compare after normalisation (case, punctuation, spacing, a leading "the");
- what the question names (its entities and numbers) may be restated; on a change question a decrease word
  makes the number negative; a counterfactual takes the labelled earlier value (docs/budget.md);
- a refusal is right only for an abstention question, and only with a refusal phrase and no digits.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from ...textsim import UNSPACED
from .model import Question
from .reading import NUMBER, normalise, numbers
from .world import MONTHS

FLOAT_TOLERANCE = 0.02
REFUSAL_PHRASES = ("don't know", "do not know", "not in my memory", "no record", "cannot answer", "can't answer",
                   "unknown", "never appeared", "no information", "not stored", "not sure", "no such",
                   "never mentioned", "not found", "i refuse", "unable to answer", "cannot find", "can't find",
                   "not in memory", "n/a")
_ISO = re.compile(r"\b(\d{4})[-/](\d{1,2})[-/](\d{1,2})\b")
#: A month by name or its first three letters ("Sep." and "Sept" too); ordinals as in "12th".
_MONTH = r"(" + "|".join(m[:3] + f"(?:{m[3:]}|t)?" if m.startswith("Sep") else m[:3] + f"(?:{m[3:]})?"
                          for m in MONTHS) + r")\.?"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_LONG = re.compile(r"\b" + _MONTH + r"\s+" + _DAY + r",?\s+(\d{4})\b", re.I)
_DMY = re.compile(r"\b" + _DAY + r"\s+(?:of\s+)?" + _MONTH + r",?\s+(\d{4})\b", re.I)
#: A label that marks the number right after it as a previous value, not the answer.
_PREVIOUS = re.compile(r"\b(?:was|previously|formerly|originally|(?:revised|changed|corrected|updated|up|down) from"
                       r"|first reported as|before that|previous(?: value)?|prior(?: value)?|old value)\s*:?\s*$",
                       re.I)
#: How far before a number (characters) its previous-value label may start.
LABEL_REACH = 40
#: Words that hedge between values; with one of them no number is taken as committed.
_HEDGE = re.compile(r"\b(?:or|either|between|maybe|perhaps|possibly|probably|likely|unsure|not sure|could be"
                    r"|might be|somewhere|range)\b", re.I)
_DECREASE = re.compile(r"\b(decrease[ds]?|fell|fall|dropped|down|lower|declined?|less)\b", re.I)


@dataclass(frozen=True)
class Verdict:
    """A checked reply: right or not, and why."""

    correct: bool
    reason: str
    abstained: bool = False
    #: The reply named several candidate answers (never right, and never sent to a judge).
    listed: bool = False


def dates(text: str) -> set[str]:
    """Every date in ``text`` as ISO strings."""
    found: set[str] = set()
    months = {m[:3].lower(): i + 1 for i, m in enumerate(MONTHS)}
    for y, m, d in _ISO.findall(text):
        found.add(_iso(int(y), int(m), int(d)))
    for mon, d, y in _LONG.findall(text):
        found.add(_iso(int(y), months[mon[:3].lower()], int(d)))
    for d, mon, y in _DMY.findall(text):
        found.add(_iso(int(y), months[mon[:3].lower()], int(d)))
    return found


def _iso(y: int, m: int, d: int) -> str:
    try:
        return dt.date(y, m, d).isoformat()
    except ValueError:
        return f"invalid:{y}-{m}-{d}"


def committed_number(reply: str, previous: bool = False) -> float | None:
    """The one current number of a reply that also states a clearly labelled previous value (with ``previous``,
    for a question that asks for the earlier value, the labelled one), else None.

    Exactly one number must follow a previous-value label, exactly one other distinct number must remain,
    and no hedging word may appear; anything else is a list of candidates.
    """
    if _HEDGE.search(reply) or len({round(x, 9) for x in numbers(reply)}) != 2:
        return None
    labelled: list[float] = []
    others: list[float] = []
    for m in NUMBER.finditer(reply):
        sign, whole, frac = m.groups()
        x = float(whole.replace(",", "") + (frac or ""))
        x = -x if sign else x
        # A label sits right before its number; looking a short way back keeps this linear in the reply.
        (labelled if _PREVIOUS.search(reply[max(0, m.start() - LABEL_REACH): m.start()]) else others).append(x)
    current = {round(x, 9) for x in others}
    if len(labelled) != 1 or len(current) != 1:
        return None
    return labelled[0] if previous else others[0]


def is_refusal(reply: str) -> bool:
    """A refusal phrase and not a single digit."""
    low = reply.lower().replace("\u2019", "'")
    return any(p in low for p in REFUSAL_PHRASES) and not re.search(r"\d", reply)


def _contains(haystack: str, needle: str) -> bool:
    """Whole-token containment of normalised text (both sides are space-separated tokens); a name in a script
    written without spaces is found anywhere ("答えは東京銀行です" names 東京銀行)."""
    if not needle:
        return False
    if UNSPACED.search(needle):
        return needle in haystack
    return f" {needle} " in f" {haystack} "


def close(x: float, gold: float, integer: bool) -> bool:
    """Whether ``x`` matches ``gold``: exactly for integers, within the float tolerance otherwise. Near zero, where
    2 % is nothing, a floor of 0.01 holds, or half a unit of the gold's last decimal when that is finer (a ratio
    of 0.0003 is not matched by 0.01)."""
    if integer:
        return x == gold
    text = repr(float(gold))
    decimals = len(text.split(".")[1]) if "." in text and "e" not in text else 0
    floor = min(0.01, 0.5 * 10.0 ** -decimals) if decimals else 0.01
    return abs(x - gold) <= max(FLOAT_TOLERANCE * abs(gold), floor)


#: Kinds whose answer is a signed change: "fell by 5" answers -5.
SIGNED_KINDS = frozenset({"delta", "comparison", "temporal_trend"})


def _asked(question: Question) -> tuple[str, set[float]]:
    """The question's text normalised and its numbers: a reply may restate them without naming a candidate."""
    return normalise(question.text), {round(x, 9) for x in numbers(question.text)}


def check(question: Question, reply: str | None, names: list[str]) -> Verdict:
    """Check ``reply`` against the question's gold. ``names`` are every entity name of the episode."""
    if reply is None or not reply.strip():
        return Verdict(False, "no answer (skipped)")
    refused = is_refusal(reply)
    if question.answer_type == "refuse":
        return Verdict(refused, "refused" if refused else "answered a question about an entity never seen",
                       abstained=refused)
    if refused:
        return Verdict(False, "refused a question that has an answer", abstained=True)
    gold = question.gold
    asked_text, asked_numbers = _asked(question)
    if question.answer_type in ("int", "float"):
        assert isinstance(gold, int | float)
        found = numbers(reply)
        # Numbers the question itself holds ("of the 16 companies", "as of 2023") restate it; unless nothing else
        # is left, they are not the reply's answer.
        found = [x for x in found if round(x, 9) not in asked_numbers] or found
        distinct = {round(x, 9) for x in found}
        if not found:
            return Verdict(False, "no number")
        x = found[0]
        if len(distinct) > 1:
            current = committed_number(reply, previous=question.kind == "counterfactual")
            if current is None:
                return Verdict(False, f"{len(distinct)} different numbers (one answer expected)", listed=True)
            x = current
        integer = question.answer_type == "int"
        if question.kind in SIGNED_KINDS and x > 0 and _DECREASE.search(reply):
            x = -x  # "decreased by 7742" states -7742, whatever the gold's sign
        if close(x, float(gold), integer):
            return Verdict(True, "number matches")
        if question.kind not in SIGNED_KINDS and gold < 0 < x and _DECREASE.search(reply) and close(
                -x, float(gold), integer):
            return Verdict(True, "magnitude of a stated decrease matches")
        return Verdict(False, f"number {x:g} differs from {gold:g}")
    if question.answer_type == "date":
        found_dates = dates(reply)
        if len(found_dates) != 1:
            return Verdict(False, f"{len(found_dates)} dates (one expected)", listed=len(found_dates) > 1)
        ok = found_dates == {gold}
        return Verdict(ok, "date matches" if ok else "date differs")
    text = normalise(reply)
    pool = names if question.answer_type == "name" else question.candidates
    mentioned = {normalise(c) for c in pool if _contains(text, normalise(c))}
    target = normalise(str(gold))
    # A longer candidate that contains the gold (e.g. "Blue Works" in "Apex Blue Works") is a different answer.
    mentioned = {m for m in mentioned if not any(m != o and _contains(o, m) for o in mentioned)}
    # The question's own subject, restated ("Nimbus Group competes with Cinder Foods"), is no second candidate.
    mentioned = {m for m in mentioned if m == target or not _contains(asked_text, m)}
    if target not in mentioned and not _contains(text, target):
        return Verdict(False, "expected answer not named", listed=len(mentioned) > 1)
    others = mentioned - {target}
    if others:
        return Verdict(False, f"names {len(others) + 1} candidates (one answer expected)", listed=True)
    return Verdict(True, "matches")
