"""Axes and composite: a perfect agent scores 1.0 on every tier; skips are wrong; abstention is separate;
maintenance needs the original fact stored before its change; efficiency does not punish using the budget."""

from __future__ import annotations

import pytest

from amemgym.families.budget.checker import Verdict
from amemgym.families.budget.domain import load_domain
from amemgym.families.budget.generate import build_episode
from amemgym.families.budget.model import Episode
from amemgym.families.budget.scoring import aggregate, originals_stored, score_episode
from amemgym.families.budget.store import LedgerEntry
from amemgym.families.budget.strategies import coverage_writes, fact_line, run_strategy
from amemgym.families.budget.tiers import TIERS
from amemgym.families.budget.validity import judge


def _all_right(ep: Episode) -> dict[str, Verdict]:
    return {q.id: Verdict(True, "") for q in ep.questions}


def _arrival(ep: Episode, change: int) -> int:
    return next(ev.index for ev in ep.events if ev.change == change)


@pytest.mark.parametrize("tier", sorted(TIERS))
def test_perfect_reaches_composite_one_on_every_tier(tier: str) -> None:
    ep = build_episode(tier, "cities", 1)
    run = run_strategy("perfect", ep, load_domain("cities"))
    s = score_episode(ep, judge(ep, run.answers), run.store.writes_used, run.store.ledger)
    assert (s.breadth, s.maintenance, s.reasoning, s.efficiency, s.composite) == (1.0, 1.0, 1.0, 1.0, 1.0)
    assert run.store.writes_used <= ep.tier.writes


@pytest.mark.parametrize("tier", sorted(TIERS))
def test_a_perfect_answerer_spending_the_whole_budget_keeps_efficiency(tier: str) -> None:
    # Before: the reference was the 3-12 writes of a strategy that knew the questions, so spending the whole
    # budget cut efficiency to 0.20 and the composite to 0.84.
    ep = build_episode(tier, "films", 5)
    run = run_strategy("perfect", ep, load_domain("films"))
    s = score_episode(ep, judge(ep, run.answers), ep.tier.writes, run.store.ledger)
    assert s.efficiency is not None and s.efficiency >= 0.5
    assert s.composite == pytest.approx(1.0)


def test_the_reference_does_not_know_the_questions() -> None:
    ep = build_episode("standard", "films", 2)
    other = ep.model_copy(update={"questions": ep.questions[:1]})
    assert coverage_writes(ep) == coverage_writes(other) > ep.tier.writes
    assert ep.reference_writes == ep.tier.writes


def test_skipped_questions_count_as_wrong() -> None:
    ep = build_episode("lite", "films", 0)
    s = score_episode(ep, {}, 0, [])
    assert s.accuracy == 0.0 and s.skipped == len(ep.questions) and s.composite == 0.0


def test_abstention_is_reported_apart_from_the_axes() -> None:
    ep = build_episode("lite", "films", 0)
    verdicts = {q.id: Verdict(q.kind == "abstention", "") for q in ep.questions}
    s = score_episode(ep, verdicts, 0, [])
    assert s.abstention == 1.0 and s.composite == 0.0 and s.accuracy > 0


def test_efficiency_falls_with_writes_beyond_the_reference() -> None:
    ep = build_episode("lite", "films", 0)
    at_ref = score_episode(ep, _all_right(ep), ep.reference_writes, [])
    double = score_episode(ep, _all_right(ep), 2 * ep.reference_writes, [])
    assert at_ref.efficiency == 1.0 and double.efficiency == pytest.approx(0.5)


def test_maintenance_needs_something_stored() -> None:
    ep = build_episode("lite", "films", 0)
    s = score_episode(ep, _all_right(ep), ep.reference_writes, [])
    assert s.storage_gate == 0.0 and s.maintenance == 0.0 and s.breadth == 1.0


def test_a_note_of_names_earns_no_maintenance() -> None:
    # Before: the gate asked only that an entity's name appear in some note, so this scored 1.0.
    ep = build_episode("lite", "films", 0)
    names = LedgerEntry(0, "write", 1, False, 1, text=", ".join(ep.entity_names))
    s = score_episode(ep, _all_right(ep), 1, [names])
    assert s.maintenance == 0.0 and s.storage_gate == 0.0


def test_the_original_fact_counts_only_when_stored_before_its_change() -> None:
    ep = build_episode("lite", "films", 0)
    c = ep.changes[0]
    line = f"{c.entity}: {c.attr} {c.old}"
    before = LedgerEntry(_arrival(ep, 0) - 1, "write", 1, False, 1, text=line)
    at = LedgerEntry(_arrival(ep, 0), "write", 1, False, 1, text=line)
    other = LedgerEntry(0, "write", 1, False, 1, text=f"{c.entity}: something else\n{ep.entity_names[0]} {c.old}"
                        if ep.entity_names[0] != c.entity else f"{c.entity}: something else")
    assert originals_stored(ep, [before])[0] is True
    assert originals_stored(ep, [at])[0] is False
    assert originals_stored(ep, [other])[0] is False
    refunded = LedgerEntry(0, "write", 1, True, 1, text=line)
    assert originals_stored(ep, [refunded])[0] is False


def test_a_relation_named_before_the_value_does_not_take_it() -> None:
    """Found by probing: "A (competes with B): share 13.49" gave A's stored value to B, so an honest note that puts
    relations first earned no maintenance."""
    from amemgym.families.budget.domain import episode_domain

    ep = build_episode("lite", "films", 0)
    c = ep.changes[0]
    phrase = episode_domain(ep).relations[0].phrase
    other = next(n for n in ep.entity_names if n != c.entity)
    for text in (f"{c.entity} ({phrase} {other}): {c.attr} {c.old}", f"{c.entity} {phrase} {other}; {c.attr} {c.old}"):
        assert originals_stored(ep, [LedgerEntry(0, "write", 1, False, 1, text=text)])[0] is True, text
    # The other way round, the value is the other entity's: no credit for the changed one.
    swapped = LedgerEntry(0, "write", 1, False, 1, text=f"{other} {phrase} {c.entity}: {c.attr} {c.old}")
    assert originals_stored(ep, [swapped])[0] is False


def test_the_perfect_strategys_notes_pass_the_gate_in_their_own_format() -> None:
    ep = build_episode("lite", "films", 0)
    c = ep.changes[0]
    note = LedgerEntry(0, "write", 1, False, 1, text="facts\n" + fact_line(c.entity, c.attr, c.old) + "\n")
    assert originals_stored(ep, [note])[0] is True


def test_aggregate_gives_a_mean_and_an_interval() -> None:
    ep = build_episode("lite", "films", 0)
    a = score_episode(ep, _all_right(ep), 1, [])
    b = score_episode(ep, {}, 0, [])
    agg = aggregate([a, b])
    assert agg["accuracy"]["mean"] == 0.5 and agg["accuracy"]["n"] == 2
    assert agg["accuracy"]["lo"] is not None and agg["accuracy"]["lo"] < 0.5 < agg["accuracy"]["hi"]
