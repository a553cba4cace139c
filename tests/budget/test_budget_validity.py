"""The validity gate catches each hole of issue 28 when it is planted back, and passes on fresh seeds."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from amemgym.cli import app
from amemgym.families.budget import generate, scoring, strategies, stream
from amemgym.families.budget.domain import load_domain
from amemgym.families.budget.generate import build_episode
from amemgym.families.budget.io import save_episode
from amemgym.families.budget.solve import axis_of
from amemgym.families.budget.tiers import TIERS
from amemgym.families.budget.validity import validate_episode

runner = CliRunner()


def _failures(tier: str = "lite", domain: str = "films", seed: int = 0) -> list[str]:
    return validate_episode(build_episode(tier, domain, seed), f"{tier}/{domain}/seed{seed}").failures


def _names_open_the_gate(monkeypatch: pytest.MonkeyPatch) -> None:
    # The old gate: any stored name opened it (names_plus_changes stores every name).
    monkeypatch.setattr(scoring, "maintenance_credit",
                        lambda ep, ledger: {q.id: True for q in ep.questions if axis_of(q.kind) == "maintenance"})


def _labelled_event(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(stream.SHOWN_KIND, "contradiction", "contradiction")


def _labelled_document(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stream, "contradiction_text",
                        lambda domain, doc: stream.documents_text(domain, [doc.replace("\n", " (field report)\n", 1)]))


def _worded_document(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stream, "contradiction_text",
                        lambda domain, doc: stream.documents_text(domain, [doc + " These figures were revised."]))


def _silent_only_counterfactual(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(generate, "maintenance_kind", lambda i: "counterfactual" if i % 2 == 0 else "update")


def _reference_knows_the_questions(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(generate, "coverage_writes",  # the reference budget the generator sets
                        lambda ep: strategies.run_strategy("perfect", ep, load_domain(ep.domain)).store.writes_used)


PLANTS = {
    "names open the maintenance gate": (_names_open_the_gate, "names_plus_changes reached maintenance"),
    "the event says contradiction": (_labelled_event, "is shown as 'contradiction'"),
    "the document says field report": (_labelled_document, "does not open as a one-document event"),
    "the document says it was revised": (_worded_document, "which no ordinary document says"),
    "silent changes only asked for their old value": (_silent_only_counterfactual,
                                                      "ignoring silent contradictions kept maintenance"),
    "the reference knows the questions": (_reference_knows_the_questions, "spends the whole budget"),
}


@pytest.mark.parametrize("plant", sorted(PLANTS))
def test_validate_fails_when_a_hole_is_planted_back(plant: str, monkeypatch: pytest.MonkeyPatch,
                                                    tmp_path: Path) -> None:
    assert _failures() == []
    apply, words = PLANTS[plant]
    apply(monkeypatch)
    assert any(words in f for f in _failures()), _failures()
    env = tmp_path / "data.json"
    save_episode(build_episode("lite", "films", 0), env)
    res = runner.invoke(app, ["validate", "--env", str(env)])
    assert res.exit_code == 1 and words in " ".join(res.output.split()), res.output


@pytest.mark.parametrize("tier", sorted(TIERS))
def test_fresh_seeds_of_every_tier_pass_the_gate(tier: str) -> None:
    for domain, seed in (("companies", 101), ("hospitals", 202)):
        result = validate_episode(build_episode(tier, domain, seed), f"{tier}/{domain}/{seed}")
        assert result.failures == []
        s = result.scores
        assert s["names_plus_changes"].maintenance == 0.0
        assert s["ignore_contradictions"].maintenance is not None and s["ignore_contradictions"].maintenance <= 0.75
        assert s["perfect"].maintenance == 1.0 and s["perfect"].composite == pytest.approx(1.0)
        assert s["template_expert"].writes_used <= TIERS[tier].writes


def test_every_plan_asks_a_silent_change_for_its_current_value() -> None:
    for tier in TIERS:
        ep = build_episode(tier, "films", 3)
        silent = {(c.entity, c.attr) for c in ep.changes if c.kind == "silent"}
        notice = {(c.entity, c.attr) for c in ep.changes if c.kind == "notice"}
        current = [(q.spec.entities[0], q.spec.attrs[0]) for q in ep.questions if q.kind in ("update", "delta")]
        on_silent, on_notice = sum(k in silent for k in current), sum(k in notice for k in current)
        assert on_silent >= 1 and on_silent == on_notice, tier
        assert len(ep.questions) == TIERS[tier].questions


@pytest.mark.parametrize("tier", sorted(TIERS))
def test_guessers_stay_clearly_under_the_ceiling_on_one_seed_alone(tier: str) -> None:
    # Before: seed 731 alone on the multi tier failed the 0.05 ceiling at exactly 0.050.
    # bench/bench_budget_validity.py checks a wider range of seeds the same way.
    from amemgym.families.budget.domain import domain_names
    from amemgym.families.budget.validity import GUESS_CEILING, judge

    for name in ("guess_blind", "guess_smart"):
        right = total = 0
        for domain in domain_names():
            ep = build_episode(tier, domain, 731)
            verdicts = judge(ep, strategies.run_strategy(name, ep, load_domain(domain)).answers)
            right += sum(v.correct for v in verdicts.values())
            total += len(verdicts)
        assert right / total <= GUESS_CEILING - 0.02, (name, right, total)


def test_validate_pools_each_seed_on_its_own() -> None:
    from amemgym.families.budget.validity import EpisodeResult, pool_failures

    lucky = validate_episode(build_episode("lite", "films", 1), "lite/films/seed1")
    honest = [validate_episode(build_episode("lite", d, 0), f"lite/{d}/seed0")
              for d in ("films", "cities", "companies", "hospitals", "universities", "code_modules", "agent_teams",
                        "sports_teams", "research_labs", "software_projects")]
    # One seed's pool where the blind guesser is right on every question it was asked.
    rigged = [EpisodeResult(r.label.replace("seed0", "seed9"), {**r.scores, "guess_blind": r.scores["perfect"]},
                            r.attack_hits) for r in honest]
    seeds = {r.label: 0 for r in honest} | {r.label: 9 for r in rigged} | {lucky.label: 1}
    pooled_only, _ = pool_failures(honest + rigged + [lucky])
    per_seed, _ = pool_failures(honest + rigged + [lucky], seeds)
    assert any("seed 9" in f for f in per_seed) and not any("seed 0" in f for f in per_seed)
    assert not any("seed" in f for f in pooled_only)
