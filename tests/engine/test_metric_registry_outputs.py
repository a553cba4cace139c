"""A metric registered in a test reaches every output of a run, and unregistering it restores them byte for byte.

The run directories are made once with the CLI against the fake endpoint; every output is then derived
from the same records with and without the test's metrics, and the CLI is run again with them registered.
No module of amemgym is touched: registering is the whole change.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from amemgym.cli import app
from amemgym.config import load_config
from amemgym.engine.trials import trial_run_dirs
from amemgym.families.statetrack.data import load_environment
from amemgym.families.statetrack.generate.procedural import tiny_environment_path
from amemgym.families.statetrack.layout import RunDir
from amemgym.families.statetrack.metrics import Cell
from amemgym.families.statetrack.results import compute_metrics
from amemgym.families.statetrack.trials import pooled_metrics, trial_spread
from amemgym.report.build import build_report
from amemgym.report.leaderboard import columns, display_columns, display_rows, leaderboard, to_csv, to_markdown
from amemgym.report.load import load_runs
from amemgym.scoring.registry import metric, ratio, unregister
from amemgym.testing.fake_endpoint import FakeEndpoint
from amemgym.testing.run_script import responder_for
from amemgym.testing.scripted_model import scripted_client
from amemgym.train import MemoryEnv

NEW = ("lucky_guesses", "lucky", "lucky_rate")


def _lucky(cell: Cell) -> list[bool]:
    # Right although a required variable was probed wrong.
    return [o.score == 1.0 and not all(o.probe.values()) for o in cell.outcomes]


def _register() -> None:
    metric("lucky_guesses", "share of a cell's questions answered right with a required variable probed wrong",
           label="lucky guesses")(lambda cell: sum(_lucky(cell)) / len(cell.outcomes))
    metric("lucky", "questions answered right with a required variable probed wrong", level="count",
           define=False)(lambda cell: sum(_lucky(cell)))
    ratio("lucky_rate", "lucky answers / questions, pooled over cells", "lucky", "questions", label="lucky rate",
          short="luck", percent=True)


@pytest.fixture
def registered_new() -> Iterator[None]:
    _register()
    try:
        yield
    finally:
        for name in NEW:
            unregister(name)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("registry")
    mp = pytest.MonkeyPatch()
    mp.setenv("AMEMGYM_CACHE_DIR", str(root / "cache"))
    try:
        with FakeEndpoint() as ep:
            mp.setenv("OPENAI_BASE_URL", ep.base_url)
            gen = CliRunner().invoke(app, ["generate", "--config", "tiny", "--users", "3", "--out", str(root / "env")])
            assert gen.exit_code == 0, gen.output
            for name, trials in (("pooled", "2"), ("single", "1")):
                res = CliRunner().invoke(app, ["run", "--env", str(root / "env" / "data.json"), "--config", "tiny",
                                               "--agent", "native", "--out", str(root / name), "--trials", trials])
                assert res.exit_code == 0, res.output
    finally:
        mp.undo()
    return root


def _outputs(root: Path) -> dict[str, str]:
    """Every metric-bearing output of the two runs, as text."""
    env = load_environment(root / "env" / "data.json")
    dirs = trial_run_dirs(root / "pooled")
    run_dirs = [root / "single", root / "pooled"]
    entries = leaderboard(load_runs(run_dirs))
    dump = lambda obj: json.dumps(obj, indent=1)  # noqa: E731
    return {
        "metrics.json": dump(compute_metrics(env, RunDir(root / "single"))),
        "pooled metrics.json": dump(pooled_metrics(env, dirs)),
        "trials.json": dump(trial_spread(dirs)),
        "leaderboard.csv": to_csv(entries),
        "leaderboard.md": to_markdown(entries),
        "leaderboard display": dump([list(display_columns()), *display_rows(entries)]),
        "report.html": build_report(run_dirs).html,
    }


def test_a_registered_metric_reaches_every_output_and_leaves_no_trace(runs: Path) -> None:
    before = _outputs(runs)
    assert not any(name in text for text in before.values() for name in ("lucky", "Lucky"))
    _register()
    try:
        during = _outputs(runs)
        metrics = json.loads(during["metrics.json"])
        cell = metrics["per_user"][next(iter(metrics["per_user"]))]["0"]
        assert {"lucky_guesses", "lucky"} <= set(cell)
        assert all("lucky_guesses" in row and "lucky_rate" in row for row in metrics["per_period"])
        assert metrics["overall"]["lucky_guesses"]["n"] == 3 and "lucky_rate" in metrics["overall"]
        assert set(metrics["definitions"]) >= {"lucky_guesses", "lucky_rate"}
        # The pooled rate is the pooled counts' ratio.
        rows = [c for u in metrics["per_user"].values() for c in u.values()]
        assert metrics["overall"]["lucky_rate"] == sum(r["lucky"] for r in rows) / sum(r["questions"] for r in rows)
        trials = json.loads(during["trials.json"])
        assert all("lucky_guesses" in row for row in trials["trials"]) and "lucky_guesses" in trials["spread"]
        assert "lucky_guesses" in json.loads(during["pooled metrics.json"])["trials"]["spread"]
        assert columns()[8:11] == ("overall", "upper bound", "random")
        assert columns()[11:16] == ("lucky guesses", "write", "read", "utilization", "lucky rate")
        assert during["leaderboard.csv"].splitlines()[0].count("lucky") == 2
        assert "| lucky guesses |" in during["leaderboard.md"]
        assert display_columns()[5:10] == ("overall", "UB", "random", "lucky guesses", "write/read/util")
        assert display_columns()[10] == "luck"
        html = during["report.html"]
        assert "<th>lucky guesses</th>" in html and "<th>lucky rate</th>" in html
        assert '{"name":"lucky_guesses","title":"Lucky guesses","signed":false}' in html
    finally:
        for name in NEW:
            unregister(name)
    after = _outputs(runs)
    for name, text in before.items():
        assert after[name] == text, f"{name} changed after unregistering"


def test_a_run_made_with_a_registered_metric_writes_it(runs: Path, registered_new: None, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AMEMGYM_CACHE_DIR", str(runs / "cache"))
    out = tmp_path / "run"
    with FakeEndpoint() as ep:
        monkeypatch.setenv("OPENAI_BASE_URL", ep.base_url)
        res = CliRunner().invoke(app, ["run", "--env", str(runs / "env" / "data.json"), "--config", "tiny",
                                       "--agent", "native", "--out", str(out), "--trials", "2"],
                                 env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    assert "lucky rate" in res.output
    written: dict[str, Any] = json.loads((out / "trial_1" / "metrics.json").read_text())
    assert "lucky_guesses" in written["overall"] and "lucky_rate" in written["per_period"][0]
    assert "lucky_guesses" in json.loads((out / "trials.json").read_text())["spread"]
    board = CliRunner().invoke(app, ["leaderboard", str(out), "--out-csv", str(tmp_path / "b.csv")],
                               env={"COLUMNS": "300"})
    assert board.exit_code == 0, board.output
    assert "lucky guesses" in (tmp_path / "b.csv").read_text().splitlines()[0]
    rep = CliRunner().invoke(app, ["report", str(out), "--out", str(tmp_path / "r.html")])
    assert rep.exit_code == 0, rep.output
    assert "<th>lucky guesses</th>" in (tmp_path / "r.html").read_text()
    assert os.path.exists(tmp_path / "r.html")


def test_the_gym_episode_reports_a_registered_metric(registered_new: None) -> None:
    environment = load_environment(tiny_environment_path())
    user = environment.users[0]
    env = MemoryEnv(environment, llm=scripted_client(responder_for(user)), config=load_config("tiny"),
                    upper_bound=False, probes=True)
    try:
        env.reset(seed=0, options={"user": user.id})
        outcomes: list[dict[str, Any]] = []
        while True:
            # Always the first option, and no usable probe: every right answer is a lucky one.
            _, _, terminated, truncated, info = env.step('{"answer": 1}')
            outcomes += info["outcomes"]
            if terminated or truncated:
                break
    finally:
        env.close()
    periods = [o for o in outcomes if o["kind"] == "period"]
    assert len(periods) == len(user.periods)
    for period in periods:
        right = [o["score"] for o in outcomes if o["kind"] == "evaluation" and o["period"] == period["period"]]
        assert period["lucky_guesses"] == sum(right) / len(right)
    assert any(p["lucky_guesses"] > 0 for p in periods)
    assert "lucky_rate" in info["metrics"]["overall"]
