"""Budget scores on official lite episodes are pinned: refactoring the run path must not move any number.

The pinned values (``fixtures/budget_scores_pinned.json``) were computed by the code before the budget family
moved onto the engine. Two paths are pinned: every scripted strategy and attack of the validity suite scored on
the episode directly, and full runs of the harness (``amemgym run``'s path) with a scripted tool agent, one of
them answering one domain wrong, and the long-context reference.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from amemgym.config import load_config
from amemgym.families.budget.domain import load_domain
from amemgym.families.budget.generate import build_episode
from amemgym.families.budget.scoring import score_episode
from amemgym.families.budget.strategies import ATTACKS, STRATEGIES, run_strategy
from amemgym.families.budget.validity import judge
from amemgym.testing.budget import BudgetScript, client_factory, write_episodes

PINNED = Path(__file__).parents[1] / "fixtures" / "budget_scores_pinned.json"
#: Official lite episodes (seeds 0 and 1 are official seeds) across domains of different shapes.
STRATEGY_EPISODES = (("lite", "cities", 0), ("lite", "films", 1), ("lite", "hospitals", 0),
                     ("lite", "code_modules", 1))
RUN_EPISODES = (("lite", "cities", 0), ("lite", "films", 0), ("lite", "companies", 1))


def strategy_scores() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for tier, domain, seed in STRATEGY_EPISODES:
        episode = build_episode(tier, domain, seed)
        template = load_domain(domain)
        for name in STRATEGIES + ATTACKS:
            run = run_strategy(name, episode, template)
            score = score_episode(episode, judge(episode, run.answers), run.store.writes_used, run.store.ledger)
            out[f"{tier}/{domain}/seed{seed}/{name}"] = score.to_dict()
    return out


def run_scores(tmp: Path) -> dict[str, Any]:
    from amemgym.engine.runner import RunOptions, run_units
    from amemgym.families.budget.units import UNITS

    env = tmp / "env"
    episodes = write_episodes(env, RUN_EPISODES)
    out: dict[str, Any] = {}
    for label, agent, wrong in (("native", "native", ()), ("native-films-wrong", "native", ("films",)),
                                ("long-context", "long-context", ())):
        script = BudgetScript(episodes, wrong_domains=wrong)
        run_dir = tmp / label
        code = run_units(UNITS, load_config("tiny"), env, run_dir, RunOptions(agent=agent, serial=True),
                         console=Console(file=io.StringIO()), make_client=client_factory(script))
        assert code == 0
        for rel, results in sorted((p.parent.relative_to(run_dir).as_posix(), p) for p in run_dir.rglob("*")
                                   if p.name == "results.json"):
            out[f"{label}/{rel}"] = json.loads(results.read_text())["score"]
    return out


@pytest.fixture(scope="module")
def pinned() -> dict[str, Any]:
    return json.loads(PINNED.read_text(encoding="utf-8"))


def test_scripted_strategy_scores_are_unchanged(pinned: dict[str, Any]) -> None:
    assert strategy_scores() == pinned["strategies"]


def test_scripted_runs_score_exactly_as_before(pinned: dict[str, Any], tmp_path: Path) -> None:
    assert run_scores(tmp_path) == pinned["runs"]


if __name__ == "__main__":  # regenerate only on purpose, from a tree whose numbers are trusted
    import sys
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        PINNED.write_text(json.dumps({"strategies": strategy_scores(), "runs": run_scores(Path(d))}, indent=1,
                                     sort_keys=True) + "\n", encoding="utf-8")
    sys.exit(0)
