"""Axes and composite: a perfect agent scores 1.0 on every tier; skips are wrong; abstention is separate."""

from __future__ import annotations

import pytest

from amemgym.families.budget.checker import Verdict
from amemgym.families.budget.domain import load_domain
from amemgym.families.budget.generate import build_episode
from amemgym.families.budget.scoring import aggregate, score_episode
from amemgym.families.budget.strategies import run_strategy
from amemgym.families.budget.tiers import TIERS
from amemgym.families.budget.validity import judge


@pytest.mark.parametrize("tier", sorted(TIERS))
def test_perfect_reaches_composite_one_on_every_tier(tier: str) -> None:
    ep = build_episode(tier, "cities", 1)
    run = run_strategy("perfect", ep, load_domain("cities"))
    s = score_episode(ep, judge(ep, run.answers), run.store.writes_used, list(run.store.notes.values()))
    assert (s.breadth, s.maintenance, s.reasoning, s.efficiency, s.composite) == (1.0, 1.0, 1.0, 1.0, 1.0)
    assert run.store.writes_used <= ep.tier.writes


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
    verdicts = {q.id: Verdict(True, "") for q in ep.questions}
    notes = [" ".join(ep.entity_names)]
    at_ref = score_episode(ep, verdicts, ep.reference_writes, notes)
    double = score_episode(ep, verdicts, 2 * ep.reference_writes, notes)
    assert at_ref.efficiency == 1.0 and double.efficiency == pytest.approx(0.5)


def test_maintenance_is_gated_by_what_was_stored() -> None:
    ep = build_episode("lite", "films", 0)
    verdicts = {q.id: Verdict(True, "") for q in ep.questions}
    s = score_episode(ep, verdicts, ep.reference_writes, [])
    assert s.storage_gate == 0.0 and s.maintenance == 0.0 and s.breadth == 1.0


def test_aggregate_gives_a_mean_and_an_interval() -> None:
    ep = build_episode("lite", "films", 0)
    a = score_episode(ep, {q.id: Verdict(True, "") for q in ep.questions}, 1, [" ".join(ep.entity_names)])
    b = score_episode(ep, {}, 0, [])
    agg = aggregate([a, b])
    assert agg["accuracy"]["mean"] == 0.5 and agg["accuracy"]["n"] == 2
    assert agg["accuracy"]["lo"] is not None and agg["accuracy"]["lo"] < 0.5 < agg["accuracy"]["hi"]
