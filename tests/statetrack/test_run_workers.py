"""Users spread over worker processes (run.workers) leave the same run directory as one process."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from amemgym.config import AppConfig, EndpointConfig, LLMConfig, env_preset, load_config
from amemgym.engine.processes import group_config
from amemgym.families.statetrack.data.io import dump_environment
from amemgym.families.statetrack.driver import run_command
from amemgym.families.statetrack.episode import RUN_ROLES
from amemgym.families.statetrack.generate.procedural import generate_procedural
from amemgym.families.statetrack.units import USERS_PER_WORKER, auto_workers
from amemgym.testing.fake_endpoint import FakeEndpoint


def _config(ep: FakeEndpoint, cache: Path, workers: int) -> AppConfig:
    cfg = load_config("tiny")
    cfg.run.workers = workers
    cfg.llm = LLMConfig(default=EndpointConfig(base_url=ep.base_url, model="fake-model", timeout_s=20.0,
                                               max_concurrency=16), cache_path=str(cache))
    return cfg


def _files(root: Path) -> dict[str, bytes]:
    """Every file of the users' folders, by relative path."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted((root / "users").rglob("*")) if p.is_file()}


def _scores(root: Path) -> dict[str, object]:
    metrics = json.loads((root / "metrics.json").read_text())
    return {k: metrics[k] for k in ("overall", "per_period", "per_user", "complete", "missing", "answers")}


@pytest.fixture(scope="module")
def env_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    env, _ = generate_procedural(env_preset("tiny"), seed=5, num_users=5)
    path = tmp_path_factory.mktemp("env") / "data.json"
    path.write_text(dump_environment(env), encoding="utf-8")
    return path


def test_three_workers_write_the_same_files_as_one_process(env_file: Path, tmp_path: Path) -> None:
    with FakeEndpoint() as ep:
        runs = {}
        for workers in (1, 3):
            # Separate caches: the second run must compute every reply, not replay the first run's.
            out = tmp_path / f"w{workers}"
            code = run_command(_config(ep, tmp_path / f"cache{workers}.sqlite", workers), env_file, "native", out,
                               off_policy=None, console=Console(file=io.StringIO()))
            assert code == 0
            runs[workers] = out
        served = ep.served
    one, three = _files(runs[1]), _files(runs[3])
    assert len(one) > 5 * 3  # every user's sessions, checkpoints, snapshots and evaluations
    assert one.keys() == three.keys()
    assert [k for k in one if one[k] != three[k]] == []
    assert _scores(runs[1]) == _scores(runs[3])
    usage = [json.loads((r / "usage.json").read_text())["cumulative"]["agent"]["calls"]
             for r in runs.values()]
    assert usage[0] == usage[1] > 0 and sum(usage) <= served  # the workers' usage reached the driver's ledger


def test_auto_is_one_process_for_few_users_or_the_embedded_model(tmp_path: Path) -> None:
    cfg = load_config("tiny")
    assert auto_workers(cfg, 1000, RUN_ROLES) == 1  # no base_url: the embedded model
    cfg.llm = LLMConfig(default=EndpointConfig(base_url="http://127.0.0.1:9/v1", model="m"))
    assert auto_workers(cfg, USERS_PER_WORKER - 1, RUN_ROLES) == 1
    assert auto_workers(cfg, 1000, RUN_ROLES) >= 1
    cfg.run.serial = True
    assert auto_workers(cfg, 1000, RUN_ROLES) == 1


def test_a_group_gets_its_share_of_each_endpoints_concurrency() -> None:
    cfg = load_config("tiny")
    cfg.llm = LLMConfig(default=EndpointConfig(base_url="http://127.0.0.1:9/v1", model="m", max_concurrency=128))
    cfg.run.user_concurrency = 64
    group = group_config(cfg, 3, RUN_ROLES)
    assert group.llm.endpoint("agent").max_concurrency == 42
    assert group.run.user_concurrency == 21
    assert cfg.llm.endpoint("agent").max_concurrency == 128  # the run's own config is unchanged


def test_a_workers_usage_reports_add_up_to_its_last_one() -> None:
    from amemgym.engine.processes import usage_delta
    from amemgym.llm.usage import UsageLedger

    early, late = UsageLedger(), UsageLedger()
    early.role("agent").calls, early.role("agent").faults["http_429"] = 3, 1
    late.role("agent").calls, late.role("agent").faults["http_429"] = 10, 2
    late.role("simulator").calls = 4
    total = UsageLedger()
    total.merge(usage_delta(early, UsageLedger()))
    total.merge(usage_delta(late, early))
    assert total.to_dict() == late.to_dict()


async def test_a_workers_usage_reports_count_the_units_still_playing(monkeypatch: pytest.MonkeyPatch) -> None:
    # Before: a worker reported only the units that had ended, so with worker processes (the default) the progress
    # line and usage.pending.json said "calls 0" until users finished.
    import multiprocessing
    import os

    from amemgym.engine import processes
    from amemgym.engine.usage import LiveUsage
    from amemgym.llm.client import LLMClient
    from amemgym.llm.usage import UsageLedger
    from amemgym.testing.scripted_model import ScriptedBackend

    ours, theirs = multiprocessing.Pipe()
    monkeypatch.setattr(processes, "_reports", theirs)
    monkeypatch.setattr(processes, "_driver", os.getppid())
    monkeypatch.setattr(processes, "USAGE_REPORT_SECONDS", 0.01)
    llm = LLMClient(backends={"agent": ScriptedBackend(lambda req: "ok")})
    live = LiveUsage(llm.ledger)

    async def unit_playing() -> None:
        ledger = UsageLedger()
        with live.unit(ledger):
            ledger.role("agent").calls = 7
            while not ours.poll():
                await asyncio.sleep(0.01)

    await processes.in_worker(3, llm, unit_playing(), live)
    kind, (group, sequence, usage) = ours.recv()
    assert (kind, group, sequence) == ("usage", 3, 1)
    assert usage["total"]["calls"] == 7


def test_killing_the_driver_stops_its_workers(env_file: Path, tmp_path: Path) -> None:
    import os
    import signal
    import subprocess
    import sys
    import time

    from amemgym.testing.runs import start_run

    def recorded(out: Path) -> int:
        return sum(p.read_bytes().count(b"\n") for p in out.glob("users/*/sessions.jsonl"))

    out = tmp_path / "run"
    with FakeEndpoint(latency=0.05) as ep:
        proc = start_run(ep, ["run", "--env", str(env_file), "--out", str(out), "--set", "run.workers=2",
                              "--set", "llm.default.model=fake-model"], tmp_path / "cache")
        deadline = time.monotonic() + 120
        while recorded(out) < 2 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.poll() is None, "the run ended before it could be killed"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        time.sleep(1.5)  # workers left behind would go on calling and writing
        calls, lines = ep.calls, recorded(out)
        time.sleep(1.5)
        assert (ep.calls, recorded(out)) == (calls, lines)
        # Nothing the driver held is left for multiprocessing's resource tracker to warn about (a report queue's
        # semaphores were).
        printed = proc.stdout.read() if proc.stdout is not None else ""
        assert "leaked semaphore" not in printed, printed[-2000:]
        # The run then resumes to the end.
        done = subprocess.run([sys.executable, "-m", "amemgym", "run", "--env", str(env_file), "--out", str(out),
                               "--set", f"llm.default.base_url={ep.base_url}", "--set",
                               "llm.default.model=fake-model"], capture_output=True, text=True, timeout=300,
                              env={**os.environ, "AMEMGYM_CACHE_DIR": str(tmp_path / "cache")})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert json.loads((out / "metrics.json").read_text())["complete"]
