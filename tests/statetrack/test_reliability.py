"""Runs survive faults and kills: same metrics, every fault counted, failures recorded as data, no secrets written."""

from __future__ import annotations

import io
import json
import random
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from amemgym.agents import resolve_agent
from amemgym.config import AppConfig, EndpointConfig, LLMConfig, load_config
from amemgym.families.statetrack.data import load_environment
from amemgym.families.statetrack.driver import run_command
from amemgym.families.statetrack.runner import Runner
from amemgym.llm import LLMClient, ResponseCache
from amemgym.testing.fake_endpoint import FakeEndpoint
from amemgym.testing.runs import damaged_files, kill_after, start_run, wait_for_work

SECRET = "sk-test-SECRET-123456"
SRC = Path(__file__).resolve().parents[2] / "src"
FIXTURE = Path(__file__).parents[1] / "fixtures" / "original_shape.json"
# Transport and body faults map onto these client-side kinds (schema breaks do not occur: no structured calls).
CLIENT_KIND = {"http_429": "http_429", "http_429_retry_after": "http_429", "http_500": "http_500",
               "http_502": "http_502", "http_503": "http_503", "reset": "connection", "timeout": "timeout",
               "truncated": "malformed_body", "malformed": "malformed_body", "empty_choices": "empty_choices"}


def scores(metrics: dict[str, Any]) -> dict[str, Any]:
    """The parts of metrics.json that must not depend on faults, retries, kills or timing."""
    return {k: metrics[k] for k in ("overall", "per_period", "per_user", "complete", "missing", "answers")}


def tiny_config(ep: FakeEndpoint, **endpoint: Any) -> AppConfig:
    cfg = load_config("tiny")
    settings: dict[str, Any] = dict(base_url=ep.base_url, model="fake-model", timeout_s=1.0, max_retries=8)
    settings.update(endpoint)
    cfg.llm = LLMConfig(default=EndpointConfig(**settings))
    return cfg


async def run_in_process(ep: FakeEndpoint, out: Path, cache: Path) -> dict[str, Any]:
    cfg = tiny_config(ep)
    llm = LLMClient(cfg.llm, cache=ResponseCache(cache), backoff_base=0.001)
    try:
        outcome = await Runner(load_environment(FIXTURE), resolve_agent("native"), out, cfg, llm).run()
    finally:
        await llm.aclose()
    assert not outcome.failures
    return outcome.metrics


@pytest.fixture
def endpoint() -> Iterator[FakeEndpoint]:
    with FakeEndpoint(timeout_sleep=1.3, retry_after=0.01, seed=7) as ep:
        yield ep


# ---- faults --------------------------------------------------------------------------------------------
async def test_faulty_endpoint_gives_the_same_metrics_and_counts_every_fault(
    endpoint: FakeEndpoint, tmp_path: Path
) -> None:
    clean = await run_in_process(endpoint, tmp_path / "clean", tmp_path / "clean.sqlite")
    assert clean["complete"] and not endpoint.faults
    endpoint.reset_counters()
    endpoint.fault_rate = 0.2
    faulty = await run_in_process(endpoint, tmp_path / "faulty", tmp_path / "faulty.sqlite")
    assert scores(faulty) == scores(clean)
    injected = sum(endpoint.faults.values())
    assert injected > 0 and len(endpoint.faults) > 1
    usage = json.loads((tmp_path / "faulty" / "usage.json").read_text())["cumulative"]["total"]
    expected: dict[str, int] = {}
    for kind, n in endpoint.faults.items():
        expected[CLIENT_KIND[kind]] = expected.get(CLIENT_KIND[kind], 0) + n
    # Every injected fault is counted; a loaded machine may add a genuine client-side timeout on top.
    assert all(usage["faults"].get(kind, 0) >= n for kind, n in expected.items()), (usage, expected)
    assert usage["retries"] == sum(usage["faults"].values()) >= injected and usage["failures"] == 0
    assert usage["calls"] <= endpoint.served


def quiet() -> Console:
    return Console(file=io.StringIO(), width=200)


def test_exhausted_retries_become_a_recorded_failure_and_a_rerun_retries_only_that(
    endpoint: FakeEndpoint, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    cfg = tiny_config(endpoint, max_retries=1)
    endpoint.force_faults = {"simulator": "http_503"}
    assert run_command(cfg, FIXTURE, "native", out, off_policy=None, console=quiet()) == 1
    failures = json.loads((out / "failures.json").read_text())["failures"]
    metrics = json.loads((out / "metrics.json").read_text())
    assert [(f["user"], f["period"], f["stage"]) for f in failures] == [("u-0001", 1, "conversation")]
    assert metrics["failures"] == failures
    assert not metrics["complete"] and [m["period"] for m in metrics["missing"]] == [1, 2]
    assert [row["period"] for row in metrics["per_period"] if row["overall"]["n"]] == [0]
    assert endpoint.calls_by_kind["simulator"] == 2  # one attempt and one retry, then the user/period failed
    done_before = set(endpoint.served_keys())

    endpoint.reset_counters()
    endpoint.force_faults = {}
    assert run_command(tiny_config(endpoint, max_retries=1), FIXTURE, "native", out, off_policy=None,
                       console=quiet()) == 0
    assert not set(endpoint.served_keys()) & done_before  # finished work came from checkpoints and the cache
    assert endpoint.calls_by_kind["simulator"] == 3  # the failed turn plus the two of period 2
    final = json.loads((out / "metrics.json").read_text())
    assert final["complete"] and final["failures"] == []


# ---- kill anywhere, secrets ------------------------------------------------------------------------------
@dataclass
class CliRun:
    rundir: Path
    cache: Path
    work_seconds: float  # from the first request to the end (process start-up excluded)
    output: str


def start_cli(ep: FakeEndpoint, rundir: Path, cache: Path) -> subprocess.Popen[str]:
    return start_run(ep, ["run", "--env", str(FIXTURE), "--out", str(rundir)], cache, api_key=SECRET,
                     pythonpath=SRC)


def finish(proc: subprocess.Popen[str]) -> str:
    output, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, output
    return output


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[FakeEndpoint, CliRun]]:
    """One uninterrupted CLI run against a fake endpoint with latency, shared by the tests below."""
    root = tmp_path_factory.mktemp("reference")
    with FakeEndpoint(latency=0.05) as ep:
        proc = start_cli(ep, root / "run", root / "cache")
        wait_for_work(ep, proc, 0)
        start = time.perf_counter()
        output = finish(proc)
        yield ep, CliRun(root / "run", root / "cache", time.perf_counter() - start, output)


def every_file(*roots: Path) -> list[Path]:
    return [p for root in roots for p in root.rglob("*") if p.is_file()]


def test_api_key_is_never_written_or_printed(reference: tuple[FakeEndpoint, CliRun]) -> None:
    ep, ref = reference
    assert f"Bearer {SECRET}" in ep.authorizations  # the key was really used
    files = every_file(ref.rundir, ref.cache)
    assert any(p.suffix == ".sqlite" for p in files) and any(p.name == "manifest.json" for p in files)
    for path in files:
        assert SECRET.encode() not in path.read_bytes(), path
    assert SECRET not in ref.output


def assert_intact(rundir: Path) -> None:
    assert damaged_files(rundir) == []


def messages_of(rundir: Path) -> list[dict[str, Any]]:
    lines = []
    for trace in sorted(rundir.glob("users/*/trace.jsonl")):
        lines += [json.loads(x) for x in trace.read_text(encoding="utf-8").splitlines()]
    return [x for x in lines if x["kind"] == "message"]


def test_killed_at_random_moments_then_resumed_gives_the_same_results(
    reference: tuple[FakeEndpoint, CliRun], tmp_path: Path
) -> None:
    ep, ref = reference
    rng = random.Random(20260301)
    rundir, cache = tmp_path / "run", tmp_path / "cache"
    # Kill moments spread over the whole run: each resumed process replays finished work from its checkpoint
    # and the cache almost instantly, so the gaps between sorted cut points land at successive positions.
    cuts = sorted(rng.uniform(0.05, ref.work_seconds) for _ in range(4))
    kills = 0
    for delay in (b - a for a, b in zip([0.0, *cuts], cuts, strict=False)):
        proc = start_cli(ep, rundir, cache)
        wait_for_work(ep, proc, ep.model_calls)
        kills += kill_after(proc, delay, timeout=30)
        assert_intact(rundir)
    assert kills >= 1
    finish(start_cli(ep, rundir, cache))
    assert_intact(rundir)
    got = json.loads((rundir / "metrics.json").read_text())
    want = json.loads((ref.rundir / "metrics.json").read_text())
    assert scores(got) == scores(want)
    messages = messages_of(rundir)
    keys = [(m["period"], m["session"], m["round"], m["role"]) for m in messages]
    assert len(keys) == len(set(keys))
    assert messages == messages_of(ref.rundir)


# ---- usage of killed invocations -------------------------------------------------------------------------
async def test_usage_flushed_by_a_killed_invocation_is_added_once(endpoint: FakeEndpoint, tmp_path: Path) -> None:
    from amemgym.llm.usage import UsageLedger

    out, cache = tmp_path / "run", tmp_path / "cache"
    await run_in_process(endpoint, out, cache)
    first = json.loads((out / "usage.json").read_text())
    assert not (out / "usage.pending.json").exists()

    # What a SIGKILLed invocation leaves behind: its usage up to the last flush.
    killed = UsageLedger()
    killed.role("agent").calls = 5
    killed.role("agent").prompt_tokens = 123
    pending = {"invocation": "killed-one", "usage": killed.to_dict()}
    (out / "usage.pending.json").write_text(json.dumps(pending))
    await run_in_process(endpoint, out, cache)  # everything is done: this invocation only folds and finishes
    second = json.loads((out / "usage.json").read_text())
    total = second["cumulative"]["total"]
    assert total["calls"] == first["cumulative"]["total"]["calls"] + 5
    assert total["prompt_tokens"] == first["cumulative"]["total"]["prompt_tokens"] + 123
    assert not (out / "usage.pending.json").exists()

    # Killed after folding but before removing the pending file: the next invocation does not count it again.
    folded = json.loads((out / "usage.json").read_text())
    folded["invocation"] = "killed-two"
    (out / "usage.json").write_text(json.dumps(folded))
    (out / "usage.pending.json").write_text(json.dumps({**pending, "invocation": "killed-two"}))
    await run_in_process(endpoint, out, cache)
    assert json.loads((out / "usage.json").read_text())["cumulative"]["total"]["calls"] == total["calls"]

    (out / "usage.pending.json").write_text('{"invocation": "torn", "usa')  # torn by the kill
    await run_in_process(endpoint, out, cache)
    assert not (out / "usage.pending.json").exists()
