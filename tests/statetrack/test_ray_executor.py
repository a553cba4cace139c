"""The Ray executor on a real local Ray cluster: same metrics as local, survives a killed worker, resumes free."""

from __future__ import annotations

import asyncio
import io
import json
import os
import shutil
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'amemgym[ray]')")

from amemgym.agents import resolve_agent  # noqa: E402
from amemgym.config import AppConfig, EndpointConfig, LLMConfig, load_config  # noqa: E402
from amemgym.engine.executor import RayUnitExecutor as RayExecutor  # noqa: E402
from amemgym.engine.runner import RunOutcome  # noqa: E402
from amemgym.families.statetrack.data import load_environment  # noqa: E402
from amemgym.families.statetrack.driver import run_command  # noqa: E402
from amemgym.families.statetrack.generate.procedural import tiny_environment_path  # noqa: E402
from amemgym.families.statetrack.layout import RunDir  # noqa: E402
from amemgym.families.statetrack.runner import Runner  # noqa: E402
from amemgym.llm import LLMClient  # noqa: E402
from amemgym.testing.fake_endpoint import FakeEndpoint  # noqa: E402

ENV = tiny_environment_path()


@pytest.fixture(scope="module", autouse=True)
def ray_cluster() -> Iterator[None]:
    # One local cluster for the module: starting Ray costs several seconds.
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    # Workers cannot import this test module, so the fault-injecting client factory travels by value.
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def shared_endpoint() -> Iterator[FakeEndpoint]:
    with FakeEndpoint(latency=0.01) as ep:
        yield ep


@pytest.fixture
def endpoint(shared_endpoint: FakeEndpoint) -> FakeEndpoint:
    shared_endpoint.reset_counters()
    return shared_endpoint


@pytest.fixture(scope="module")
def local_metrics(shared_endpoint: FakeEndpoint, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The reference: the same run with the local executor."""
    root = tmp_path_factory.mktemp("local")
    metrics = asyncio.run(run(config(shared_endpoint, root / "local.sqlite"), root / "local"))
    assert metrics["complete"]
    return {"metrics": metrics, "root": root / "local"}


def scores(metrics: dict[str, Any]) -> dict[str, Any]:
    """The parts of metrics.json that do not depend on where or how fast the episodes ran."""
    return {k: metrics[k] for k in ("overall", "per_period", "per_user", "complete", "missing", "answers")}


def config(ep: FakeEndpoint, cache: Path, max_concurrency: int = 8) -> AppConfig:
    cfg = load_config("tiny")
    cfg.llm = LLMConfig(default=EndpointConfig(base_url=ep.base_url, model="fake-model", timeout_s=20.0,
                                               max_concurrency=max_concurrency), cache_path=str(cache))
    return cfg


async def run(cfg: AppConfig, out: Path, executor: RayExecutor | None = None) -> dict[str, Any]:
    return (await played(cfg, out, executor)).metrics


async def played(cfg: AppConfig, out: Path, executor: RayExecutor | None = None) -> RunOutcome:
    llm = LLMClient.from_config(cfg.llm)
    try:
        outcome = await Runner(load_environment(ENV), resolve_agent("native"), out, cfg, llm).run(executor=executor)
    finally:
        await llm.aclose()
    assert not outcome.failures, outcome.failures
    return outcome


def skipped(outcome: RunOutcome) -> list[str]:
    """The users the run found finished and did not start."""
    return sorted(r.unit.label for r in outcome.rows if "skipped" in r.status)


@dataclass(frozen=True)
class DieOnce:
    """A task client factory whose process exits at its ``at_call``-th chat, once across the whole cluster."""

    marker: Path
    at_call: int

    def __call__(self, cfg: AppConfig) -> LLMClient:
        llm = LLMClient.from_config(cfg.llm, backoff_base=0.001)
        chat: Callable[..., Any] = llm.chat
        count = 0
        marker, at_call = self.marker, self.at_call

        async def dying_chat(*args: Any, **kwargs: Any) -> Any:
            nonlocal count
            count += 1
            if count == at_call:
                try:
                    os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
                except FileExistsError:
                    pass
                else:
                    os._exit(1)  # a dead worker, as after a node loss: no cleanup, no exception
            return await chat(*args, **kwargs)

        llm.chat = dying_chat  # type: ignore[method-assign]
        return llm


def files_of(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


async def test_ray_run_gives_the_local_metrics_and_the_same_files(
    endpoint: FakeEndpoint, local_metrics: dict[str, Any], tmp_path: Path
) -> None:
    distributed = await run(config(endpoint, tmp_path / "ray.sqlite", max_concurrency=2), tmp_path / "ray",
                            RayExecutor())
    assert scores(distributed) == scores(local_metrics["metrics"])
    assert endpoint.max_in_flight <= 2  # the endpoint's limit held across both tasks
    assert files_of(tmp_path / "ray") == files_of(local_metrics["root"])
    for user in load_environment(ENV).users:
        trace = f"users/{user.id}/trace.jsonl"
        assert (tmp_path / "ray" / trace).read_text() == (local_metrics["root"] / trace).read_text()
    usage = json.loads((tmp_path / "ray" / "usage.json").read_text())["cumulative"]["total"]
    assert usage["calls"] == endpoint.served > 0  # the tasks' ledgers were merged on the driver


async def test_a_worker_killed_mid_episode_is_retried_and_the_run_completes(
    endpoint: FakeEndpoint, local_metrics: dict[str, Any], tmp_path: Path
) -> None:
    marker = tmp_path / "killed"
    executor = RayExecutor(make_client=DieOnce(marker, at_call=6), max_retries=2)
    distributed = await run(config(endpoint, tmp_path / "ray.sqlite"), tmp_path / "ray", executor)
    assert marker.exists()  # a worker really died mid-episode
    assert scores(distributed) == scores(local_metrics["metrics"])


async def test_a_ray_rerun_skips_finished_users_and_calls_nothing(endpoint: FakeEndpoint, tmp_path: Path) -> None:
    cfg = config(endpoint, tmp_path / "ray.sqlite")
    first = await run(cfg, tmp_path / "ray", RayExecutor())
    endpoint.reset_counters()
    again = await played(cfg, tmp_path / "ray", RayExecutor())
    users = sorted(u.id for u in load_environment(ENV).users)
    assert endpoint.served == 0 and skipped(again) == users
    assert scores(again.metrics) == scores(first)


async def test_a_ray_rerun_of_a_lost_user_is_served_from_the_shared_cache(
    endpoint: FakeEndpoint, tmp_path: Path
) -> None:
    cfg = config(endpoint, tmp_path / "ray.sqlite")
    first = await run(cfg, tmp_path / "ray", RayExecutor())
    lost, kept = sorted(u.id for u in load_environment(ENV).users)
    shutil.rmtree(RunDir(tmp_path / "ray").user(lost))
    endpoint.reset_counters()
    again = await played(cfg, tmp_path / "ray", RayExecutor())
    assert skipped(again) == [kept] and endpoint.served == 0  # the lost user was replayed from the cache
    assert scores(again.metrics) == scores(first)


def test_the_run_command_drives_ray_with_a_models_file(endpoint: FakeEndpoint, tmp_path: Path) -> None:
    models = tmp_path / "models.yaml"
    models.write_text(f"agent:\n  base_url: {endpoint.base_url}\n  model: fake-model\n  max_concurrency: 3\n",
                      encoding="utf-8")
    cfg = config(endpoint, tmp_path / "ray.sqlite")
    out = tmp_path / "run"
    code = run_command(cfg, ENV, "native", out, off_policy=None, console=Console(file=io.StringIO()),
                       executor="ray", models=models)
    metrics = json.loads((out / "metrics.json").read_text())
    assert code == 0 and metrics["complete"]
    assert json.loads((out / "manifest.json").read_text())["config"]["llm"]["roles"]["agent"]["max_concurrency"] == 3


def test_a_plugin_file_agent_plays_on_ray(endpoint: FakeEndpoint, tmp_path: Path) -> None:
    # Before: every task failed with "No module named 'amemgym_plugin_...'", the name the driver imported the
    # file under, which no Ray worker could import.
    from notes_plugin import NOTES_METHODS

    plugin = tmp_path / "ray_notes.py"
    plugin.write_text("import json\n\n\nclass Agent:\n    def __init__(self):\n        self.notes = []\n\n"
                      "    async def reply(self, message, *, time=None):\n        self.notes.append(message)\n"
                      "        return 'noted'\n" + NOTES_METHODS.lstrip("\n")
                      + "\n\ndef make(llm, ctx):\n    return Agent()\n\n\nmake.roles = ('agent',)\n", encoding="utf-8")
    out = tmp_path / "run"
    code = run_command(config(endpoint, tmp_path / "ray.sqlite"), ENV, f"{plugin}:make", out, off_policy=None,
                       console=Console(file=io.StringIO()), executor="ray")
    failures = out / "failures.json"
    assert not failures.exists() or not json.loads(failures.read_text())["failures"], failures.read_text()
    assert code == 0 and json.loads((out / "metrics.json").read_text())["complete"]


def test_progress_under_ray_counts_what_the_tasks_finish(endpoint: FakeEndpoint, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    env = load_environment(ENV)
    sessions = sum(len(p.sessions) for u in env.users for p in u.periods)
    evaluations = sum(len(u.periods) for u in env.users)
    log = io.StringIO()
    code = run_command(config(endpoint, tmp_path / "ray.sqlite"), ENV, "native", tmp_path / "run", off_policy=None,
                       console=Console(file=log, width=200), executor="ray")
    assert code == 0
    progress = " ".join(capsys.readouterr().err.split())  # the progress log goes to stderr, wrapped
    assert f"sessions {sessions}/{sessions}, evaluations {evaluations}/{evaluations}" in progress


def test_file_progress_reports_only_new_complete_records(tmp_path: Path) -> None:
    from amemgym.families.statetrack.episode import EpisodeEvents
    from amemgym.families.statetrack.progress import FileProgress

    user = load_environment(ENV).users[0]
    rd = RunDir(tmp_path)
    rd.sessions(user.id).parent.mkdir(parents=True)
    rd.sessions(user.id).write_text('{"period": 0}\n')  # finished before this invocation: not reported
    seen: list[str] = []
    events = EpisodeEvents()
    events.on_session = lambda u, p, s: seen.append("session")
    events.on_eval = lambda u, p: seen.append(f"eval {p}")
    watcher = FileProgress(rd, [user], events)
    with rd.sessions(user.id).open("a") as fh:
        fh.write('{"period": 0}\n{"period": 1, "mess')  # one complete record, one being written
    rd.evaluation(user.id, 1).parent.mkdir(parents=True, exist_ok=True)
    rd.evaluation(user.id, 1).write_text("{}")
    watcher.poll()
    watcher.poll()
    assert seen == ["session", "eval 1"]
