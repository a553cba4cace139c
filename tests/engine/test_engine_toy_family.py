"""A third family, defined only in tests/toy_family.py, runs through everything the engine offers.

Run, resume after a kill, trials, Ray, report, leaderboard and compare: none of it needs a line of engine
code for this family (the toy module only implements the contract and registers one metric).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

from amemgym.cli import app
from amemgym.config import load_config
from amemgym.engine.runner import RunOptions, run_units
from amemgym.llm.client import LLMClient
from amemgym.testing.fake_endpoint import FakeEndpoint
from amemgym.testing.scripted_model import ScriptedBackend
from toy_family import NAME, answer, register, write_quiz


@pytest.fixture(scope="module", autouse=True)
def toy() -> Iterator[Any]:
    from amemgym.families import unregister_family
    from amemgym.scoring.registry import unregister_unit_metrics

    yield register()
    unregister_family(NAME)
    unregister_unit_metrics(NAME)


@pytest.fixture(scope="module")
def quizzes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("quizzes")
    write_quiz(root / "easy" / "a" / "data.json", "easy", [(1, 1), (2, 3), (4, 4)])
    write_quiz(root / "easy" / "b" / "data.json", "easy", [(5, 5), (1, 2)])
    write_quiz(root / "hard" / "c" / "data.json", "hard", [(10, 20), (7, 8), (3, 3), (9, 9)])
    return root


def reply_to(body: dict[str, Any]) -> str:
    return answer(str(body["messages"][-1]["content"]))


@pytest.fixture
def endpoint(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeEndpoint]:
    with FakeEndpoint(responder=reply_to) as ep:
        monkeypatch.setenv("OPENAI_BASE_URL", ep.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "k")
        yield ep


def cli(*args: str) -> Any:
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "300"})


def test_run_writes_the_engine_run_directory(quizzes: Path, tmp_path: Path, endpoint: FakeEndpoint) -> None:
    res = cli("run", "--env", str(quizzes), "--out", str(tmp_path / "o"))
    assert res.exit_code == 0, res.output
    assert "toy quiz: 3 quizzes scored" in res.output
    root = tmp_path / "o"
    assert {p.name for p in root.iterdir() if p.is_file()} >= {"manifest.json", "metrics.json", "usage.json",
                                                              "failures.json"}
    metrics = json.loads((root / "metrics.json").read_text())
    assert metrics["family"] == NAME and sorted(metrics["groups"]) == ["easy", "hard"]
    assert metrics["per_unit"]["easy/a"]["right"] == pytest.approx(2 / 3)  # 2+3 is odd: answered 6
    assert json.loads((root / "usage.json").read_text())["cumulative"]["total"]["calls"] == endpoint.calls == 9


def test_a_killed_run_resumes_without_repeating_answered_questions(quizzes: Path, tmp_path: Path) -> None:
    seen: list[str] = []

    def script(limit: int | None) -> Any:
        def respond(req: Any) -> str:
            if limit is not None and len(seen) >= limit:
                raise KeyboardInterrupt
            seen.append(str(req.messages[-1]["content"]))
            return answer(seen[-1])
        return lambda cfg: LLMClient(backends={"agent": ScriptedBackend(respond)})

    family = register().units
    opts = RunOptions(agent="native", serial=True)
    with pytest.raises(KeyboardInterrupt):
        run_units(family, load_config("tiny"), quizzes, tmp_path / "o", opts, console=Console(file=io.StringIO()),
                  make_client=script(4))
    assert len(seen) == 4
    assert run_units(family, load_config("tiny"), quizzes, tmp_path / "o", opts,
                     console=Console(file=io.StringIO()), make_client=script(None)) == 0
    assert len(seen) == 9 and len(set(seen)) == 9  # every question asked once over both invocations
    usage = json.loads((tmp_path / "o" / "usage.json").read_text())["cumulative"]["total"]["calls"]
    assert usage == 9


def test_trials_leaderboard_report_and_compare(quizzes: Path, tmp_path: Path, endpoint: FakeEndpoint) -> None:
    assert cli("run", "--env", str(quizzes), "--out", str(tmp_path / "t"), "--trials", "2").exit_code == 0
    summary = json.loads((tmp_path / "t" / "trials.json").read_text())
    assert [t["run_seed"] for t in summary["trials"]] == [0, 1]
    assert {v["k"] for v in summary["pooled"].values()} == {2}
    assert cli("run", "--env", str(quizzes / "easy"), "--out", str(tmp_path / "e")).exit_code == 0
    board = cli("leaderboard", str(tmp_path / "t"), str(tmp_path / "e"), "--out-csv", str(tmp_path / "b.csv"))
    assert board.exit_code == 0, board.output
    rows = list(csv.DictReader(io.StringIO((tmp_path / "b.csv").read_text())))
    assert {(r["run"], r["unit group"], r["quizzes"], r["trials"]) for r in rows} == {
        ("t", "easy", "2", "2"), ("t", "hard", "1", "2"), ("e", "easy", "2", "1")}
    rep = cli("report", str(tmp_path / "t"), "--out", str(tmp_path / "r.html"))
    assert rep.exit_code == 0, rep.output
    assert "Content-Security-Policy" in (tmp_path / "r.html").read_text()
    assert cli("run", "--env", str(quizzes / "hard"), "--out", str(tmp_path / "h")).exit_code == 0
    # One trial's easy quizzes against the separate easy run: the same quizzes, the same answers.
    cmp = cli("compare", str(tmp_path / "e"), str(tmp_path / "t" / "trial_1" / "easy"))
    assert cmp.exit_code == 0 and "+0.0000" in " ".join(cmp.output.split()), cmp.output
    cmp = cli("compare", str(tmp_path / "h"), str(tmp_path / "t"))
    assert cmp.exit_code == 2 and "more than one agent" in " ".join(cmp.output.split())


def test_compare_pairs_quizzes(quizzes: Path, tmp_path: Path, endpoint: FakeEndpoint) -> None:
    assert cli("run", "--env", str(quizzes / "easy"), "--out", str(tmp_path / "a")).exit_code == 0
    other_seed = cli("run", "--env", str(quizzes / "easy"), "--out", str(tmp_path / "b"), "--set", "run.seed=3")
    assert other_seed.exit_code == 0
    cmp = cli("compare", str(tmp_path / "a"), str(tmp_path / "b"), "--bootstrap", "100")
    assert cmp.exit_code == 0, cmp.output
    assert "shared quizzes" in cmp.output and "+0.0000" in " ".join(cmp.output.split())


def test_ray_plays_each_quiz_as_a_task(quizzes: Path, tmp_path: Path, endpoint: FakeEndpoint) -> None:
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'amemgym[ray]')")
    import sys

    import toy_family

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        ray.cloudpickle.register_pickle_by_value(toy_family)  # workers cannot import the tests folder
        ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
        cfg = load_config("tiny")
        cfg.llm.default.base_url = endpoint.base_url
        code = run_units(register().units, cfg, quizzes, tmp_path / "o", RunOptions(agent="native", executor="ray"),
                         console=Console(file=io.StringIO()))
    finally:
        ray.shutdown()
    assert code == 0
    metrics = json.loads((tmp_path / "o" / "metrics.json").read_text())
    assert metrics["complete"] and metrics["per_unit"]["hard/c"]["right"] == pytest.approx(3 / 4)
    assert json.loads((tmp_path / "o" / "usage.json").read_text())["cumulative"]["total"]["calls"] == 9


def test_run_workers_spread_the_quizzes_over_processes_with_the_same_results(quizzes: Path, tmp_path: Path,
                                                                            endpoint: FakeEndpoint) -> None:
    from amemgym.engine.contract import Unit
    from amemgym.engine.executor import PlayContext
    from amemgym.engine.processes import ProcessUnitExecutor

    handed: list[int] = []

    class Spy(ProcessUnitExecutor):
        async def play(self, ctx: PlayContext, units: list[Unit]) -> list[dict[str, Any]]:
            handed.append(self.workers)
            return await super().play(ctx, units)

    runs = {}
    for workers in (1, 2):
        cfg = load_config("tiny")
        cfg.llm.default.base_url = endpoint.base_url
        cfg.run.workers = workers
        out = tmp_path / f"w{workers}"
        family = register().units
        if workers > 1:
            import amemgym.engine.runner as runner  # where the executor is chosen

            original = runner.ProcessUnitExecutor
            runner.ProcessUnitExecutor = Spy  # type: ignore[misc]
        try:
            assert run_units(family, cfg, quizzes, out, RunOptions(agent="native"),
                             console=Console(file=io.StringIO())) == 0
        finally:
            if workers > 1:
                runner.ProcessUnitExecutor = original  # type: ignore[misc]
        runs[workers] = json.loads((out / "metrics.json").read_text())
    assert handed == [2]  # run.workers=2 played on two processes; 1 on this loop
    assert runs[1]["per_unit"] == runs[2]["per_unit"] and runs[2]["complete"]
    # The workers' usage reached the driver's usage book.
    assert runs[2]["usage"]["cumulative"]["total"]["calls"] + runs[2]["usage"]["cumulative"]["total"]["cache_hits"] \
        == 9
    for q in ("easy/a", "easy/b", "hard/c"):
        assert (tmp_path / "w1" / q / "results.json").exists() and (tmp_path / "w2" / q / "results.json").exists()


def test_a_ceiling_below_the_worker_count_is_never_exceeded(quizzes: Path, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    # Each worker process holds at least one call in flight: two workers under --max-connections 1 made two.
    with FakeEndpoint(responder=reply_to, latency=0.05) as ep:
        monkeypatch.setenv("OPENAI_API_KEY", "k")
        cfg = load_config("tiny")
        cfg.llm.default.base_url = ep.base_url
        cfg.llm.default.max_concurrency = 1
        cfg.run.workers = 2
        assert run_units(register().units, cfg, quizzes, tmp_path / "o", RunOptions(agent="native"),
                         console=Console(file=io.StringIO())) == 0
        assert ep.max_in_flight == 1 and ep.calls == 9
