"""The budget family on the engine: what the engine owns for every family, checked on budget runs.

Preflight before the first call (issue 31.2), usage across a SIGKILL and a resume, redaction of a key a 401
echoes, the progress line on a hung endpoint, the report's Content-Security-Policy and escaping, and the
export of a memory-agent episode and of a --trials folder (issue 31.3).
"""

from __future__ import annotations

import asyncio
import csv
import html
import io
import json
import re
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

from amemgym.cli import app
from amemgym.config import load_config
from amemgym.engine.progress import UnitProgress
from amemgym.engine.runner import RunOptions, run_units
from amemgym.engine.trials import run_unit_trials
from amemgym.families import get_family
from amemgym.families.budget.units import UNITS
from amemgym.testing.budget import BudgetScript, client_factory, write_episodes
from amemgym.testing.fake_endpoint import FakeEndpoint
from amemgym.testing.runs import start_run, wait_for_work

SECRET = "sk-test-SECRET-98765"


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Any]]:
    root = tmp_path_factory.mktemp("budget-env")
    return root, write_episodes(root, (("lite", "cities", 0), ("lite", "films", 0)))


def one_episode(env: tuple[Path, list[Any]]) -> Path:
    return env[0] / "cities" / "seed0" / "data.json"


def cli(*args: str, key: str | None = "k") -> Any:
    extra = {"OPENAI_API_KEY": key} if key is not None else {}
    return CliRunner().invoke(app, ["run", *args, "--set", "budget.tools=text"], env={"COLUMNS": "300", **extra})


# ---- preflight (issue 31.2) -------------------------------------------------------------------------------
def test_an_unserved_model_exits_2_before_any_call(env: tuple[Path, list[Any]], tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    script = BudgetScript(env[1])
    with FakeEndpoint(responder=script.body_reply, model="served-model") as ep:
        monkeypatch.setenv("OPENAI_BASE_URL", ep.base_url)
        res = cli("--env", str(env[0]), "--out", str(tmp_path / "o"), "--model", "not-served")
        assert ep.calls == 0
    assert res.exit_code == 2 and "not-served" in res.output and "not served" in res.output, res.output
    assert len(res.output.strip().splitlines()) == 1 and not (tmp_path / "o").exists()


def test_the_run_records_the_model_that_answered(env: tuple[Path, list[Any]], tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    script = BudgetScript(env[1])
    with FakeEndpoint(responder=script.body_reply, model="served-model") as ep:
        monkeypatch.setenv("OPENAI_BASE_URL", ep.base_url)
        res = cli("--env", str(one_episode(env)), "--out", str(tmp_path / "o"))
    assert res.exit_code == 0, res.output
    manifest = json.loads((tmp_path / "o" / "manifest.json").read_text())
    assert manifest["models"]["agent"]["served"] == "served-model"
    # The same root files as a statetrack run, report included.
    assert {p.name for p in (tmp_path / "o").iterdir() if p.is_file()} >= {
        "manifest.json", "metrics.json", "usage.json", "failures.json", "report.html"}
    assert json.loads((tmp_path / "o" / "results.json").read_text())["agent_model"] == "served-model"


def test_an_unreachable_url_exits_2(env: tuple[Path, list[Any]], tmp_path: Path,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    res = cli("--env", str(one_episode(env)), "--out", str(tmp_path / "o"))
    assert res.exit_code == 2 and "unreachable" in res.output and not (tmp_path / "o").exists(), res.output


class _KeyRequired(BaseHTTPRequestHandler):
    """A server that answers 401 to any request without its bearer key (and counts what reaches it)."""

    hits = 0

    def do_GET(self) -> None:  # noqa: N802 - the http.server hook name
        type(self).hits += 1
        if self.headers.get("Authorization") != "Bearer the-right-key":
            self.send_response(401)
            self.end_headers()
            return
        body = json.dumps({"data": [{"id": "m"}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_POST = do_GET

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def key_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _KeyRequired)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()


def test_a_missing_key_is_refused_up_front(env: tuple[Path, list[Any]], tmp_path: Path, key_server: str,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", key_server)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    res = cli("--env", str(one_episode(env)), "--out", str(tmp_path / "o"), key=None)
    assert res.exit_code == 2 and "rejected the API key" in res.output, res.output
    assert not (tmp_path / "o").exists()


# ---- redaction ---------------------------------------------------------------------------------------------
def test_a_401_echoing_the_key_leaves_no_trace_of_it(env: tuple[Path, list[Any]], tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    script = BudgetScript(env[1])
    with FakeEndpoint(responder=script.body_reply, force_faults={"*": "echo_auth_401"}) as ep:
        monkeypatch.setenv("OPENAI_BASE_URL", ep.base_url)
        res = cli("--env", str(env[0]), "--out", str(tmp_path / "o"), key=SECRET)
        assert f"Bearer {SECRET}" in ep.authorizations and ep.faults["echo_auth_401"] > 0  # the key was echoed
    files = [p for p in (tmp_path / "o").rglob("*") if p.is_file()]
    assert any(p.name == "failures.json" for p in files) or any(p.name == "trace.jsonl" for p in files)
    for path in files:
        assert SECRET.encode() not in path.read_bytes(), path
    assert SECRET not in res.output


class HangingAfter:
    """A budget endpoint's responder that answers ``n`` calls, then holds the next one (``hanging`` is set)
    until ``release``: the run is killed while it waits."""

    def __init__(self, script: BudgetScript, n: int) -> None:
        self.script, self.n = script, n
        self.hanging, self.release, self.answered = threading.Event(), threading.Event(), 0
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> str:
        with self.lock:
            hang = self.answered == self.n and not self.release.is_set()
        if hang:
            self.hanging.set()
            self.release.wait(60)
            raise RuntimeError("the caller was killed")
        reply = self.script.body_reply(body)
        with self.lock:
            self.answered += 1
        return reply


# ---- usage across a kill and a resume ------------------------------------------------------------------------
def resume_after_kill(proc: Any, ep: FakeEndpoint, args: list[str], cache: Path, respond: HangingAfter,
                      out: Path) -> None:
    """After the SIGKILL of ``proc`` (held at its hanging call): ``usage.json`` says the invocation was still
    running; release the endpoint, resume the same command to its end, and check that the cumulative usage
    counts every call served."""
    proc.communicate(timeout=30)
    assert respond.answered == respond.n and json.loads((out / "usage.json").read_text())["running"]
    respond.release.set()
    again = start_run(ep, args, cache)
    output, _ = again.communicate(timeout=300)
    assert again.returncode == 0, output
    usage = json.loads((out / "usage.json").read_text())
    assert usage["cumulative"]["total"]["calls"] == respond.answered > respond.n


def test_usage_after_sigkill_and_resume_equals_the_calls_the_endpoint_served(env: tuple[Path, list[Any]],
                                                                              tmp_path: Path) -> None:
    respond = HangingAfter(BudgetScript(env[1]), 8)
    hang_after = respond.n
    out, cache = tmp_path / "o", tmp_path / "cache"
    args = ["run", "--env", str(env[0]), "--out", str(out), "--set", "budget.tools=text", "--serial"]
    with FakeEndpoint(responder=respond) as ep:
        proc = start_run(ep, args, cache)
        wait_for_work(ep, proc, 0)
        deadline = time.monotonic() + 60
        pending = out / "usage.pending.json"
        # Killed once its flushed usage holds every answered call (the next one hangs, so nothing else comes).
        while time.monotonic() < deadline and proc.poll() is None:
            if pending.exists():
                try:
                    calls = json.loads(pending.read_text())["usage"]["total"]["calls"]
                except (ValueError, KeyError):
                    calls = -1
                if calls == hang_after:
                    break
            time.sleep(0.05)
        proc.kill()
        resume_after_kill(proc, ep, args, cache, respond, out)


def test_usage_is_exact_when_the_kill_comes_right_after_a_call_before_any_flush(env: tuple[Path, list[Any]],
                                                                                tmp_path: Path) -> None:
    # The periodic flush alone would lose every call since the last flush (all of them here: the kill comes
    # well inside the first flush interval); the call journal keeps each finished call.
    respond = HangingAfter(BudgetScript(env[1]), 5)
    out, cache = tmp_path / "o", tmp_path / "cache"
    args = ["run", "--env", str(env[0]), "--out", str(out), "--set", "budget.tools=text", "--serial"]
    with FakeEndpoint(responder=respond) as ep:
        proc = start_run(ep, args, cache)
        assert respond.hanging.wait(120)
        proc.kill()  # a serial run sends its next call only after the last reply is counted
        resume_after_kill(proc, ep, args, cache, respond, out)
    assert not (out / "usage.journal").exists()


# ---- progress ------------------------------------------------------------------------------------------------
def test_the_progress_line_reports_a_hung_endpoint_within_30_seconds() -> None:
    p = UnitProgress(live=False)
    assert p.stall_seconds + p.tick_seconds <= 30  # reported at the first tick after the threshold


def test_a_hung_call_shows_on_the_progress_line(env: tuple[Path, list[Any]], tmp_path: Path) -> None:
    from amemgym.llm.client import LLMClient
    from amemgym.testing.scripted_model import ScriptedBackend

    class HoldsTheFirstCall(ScriptedBackend):
        held = False

        async def complete(self, req: Any) -> Any:
            if not self.held:
                self.held = True
                await asyncio.sleep(1.0)  # the endpoint holds the first call; the run has nothing else to do
            return await super().complete(req)

    log = io.StringIO()
    progress = UnitProgress(Console(file=log, width=200), noun="episodes", live=False, tick_seconds=0.05,
                            stall_seconds=0.3)
    backend = HoldsTheFirstCall(BudgetScript(env[1]))
    cfg = load_config("tiny")
    cfg.budget.tools = "text"  # no probe: the held call is the episode's first
    code = run_units(UNITS, cfg, one_episode(env), tmp_path / "o",
                     RunOptions(agent="native", serial=True), console=Console(file=io.StringIO()),
                     make_client=lambda cfg: LLMClient(backends={"agent": backend}), progress=progress)
    assert code == 0
    assert re.search(r"episodes 0/1; .*1 call waiting > 0\.3 s \(longest \d+ s\)", log.getvalue()), log.getvalue()


# ---- report ----------------------------------------------------------------------------------------------------
def _csp(page: str) -> str:
    m = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', page)
    assert m is not None
    return html.unescape(m.group(1))


def test_the_budget_report_has_the_statetrack_policy_and_escapes_everything(env: tuple[Path, list[Any]],
                                                                            tmp_path: Path) -> None:
    from amemgym.report.html import page_csp

    code = run_units(UNITS, load_config("tiny"), env[0], tmp_path / "o", RunOptions(agent="native"),
                     console=Console(file=io.StringIO()), make_client=client_factory(BudgetScript(env[1])))
    assert code == 0
    record = tmp_path / "o" / "films" / "seed0" / "results.json"
    data = json.loads(record.read_text())
    evil = "</script><script>document.title='PWNED'</script><img src=x onerror=alert(1)>"
    first = next(iter(data["answers"]))
    data["answers"][f"{first}{evil}"] = {**data["answers"].pop(first), "reply": evil}
    record.write_text(json.dumps(data))
    out = tmp_path / "r.html"
    assert get_family("budget").report([tmp_path / "o"], out, env=None, figures=None,
                                       console=Console(file=io.StringIO())) == 0
    page = out.read_text()
    assert _csp(page) == page_csp()
    assert "<img src=x" not in page and "<script>document.title" not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page
    assert not re.search(r'(src|href)="?https?:', page)  # self-contained: nothing loaded from the network


def test_the_statetrack_report_carries_the_same_policy(tmp_path: Path) -> None:
    from test_report_runs import build_two_runs

    from amemgym.report.build import build_report
    from amemgym.report.html import page_csp

    _, a, _ = build_two_runs(tmp_path)
    assert _csp(build_report([a]).html) == page_csp()


# ---- export (issue 31.3) --------------------------------------------------------------------------------------
def test_a_memory_agent_episode_exports(env: tuple[Path, list[Any]], tmp_path: Path) -> None:
    from amemgym.families.budget.export import export_budget_run
    from amemgym.testing.scripted_model import scripted_client

    llm = scripted_client(lambda req: "Noted.", cache=None)
    code = run_units(UNITS, load_config("tiny"), one_episode(env), tmp_path / "rag", RunOptions(agent="rag"),
                     console=Console(file=io.StringIO()), make_client=lambda cfg: llm)
    assert code == 0
    for fmt in ("openai-chat", "jsonl"):
        res = export_budget_run(tmp_path / "rag", tmp_path / f"x.{fmt}", fmt=fmt, with_evaluation=True)
        lines = [json.loads(x) for x in (tmp_path / f"x.{fmt}").read_text().splitlines()]
        assert res.lines == len(lines) > 0
    chat = [json.loads(x) for x in (tmp_path / "x.openai-chat").read_text().splitlines()]
    assert all(m["role"] != "system" for line in chat for m in line["messages"])


def test_a_trials_folder_exports_every_episode_of_every_trial(env: tuple[Path, list[Any]], tmp_path: Path) -> None:
    from amemgym.families.budget.export import export_budget_run

    code = run_unit_trials(UNITS, load_config("tiny"), env[0], tmp_path / "t", RunOptions(agent="native"), 2,
                           console=Console(file=io.StringIO()), make_client=client_factory(BudgetScript(env[1])))
    assert code == 0
    one = export_budget_run(tmp_path / "t" / "trial_1" / "cities" / "seed0", tmp_path / "one.jsonl", fmt="jsonl")
    res = export_budget_run(tmp_path / "t", tmp_path / "all.jsonl", fmt="jsonl")
    rows = [json.loads(x) for x in (tmp_path / "all.jsonl").read_text().splitlines()]
    assert {r["run"] for r in rows} == {f"trial_{k}/{e}/seed0" for k in (1, 2) for e in ("cities", "films")}
    assert res.lines == len(rows) > 2 * one.lines


# ---- files written before the engine ------------------------------------------------------------------------
def test_a_checkpoint_written_before_the_engine_resumes(env: tuple[Path, list[Any]], tmp_path: Path) -> None:
    from amemgym.families.budget.units import run_episode
    from amemgym.llm.client import LLMClient
    from amemgym.testing.scripted_model import ScriptedBackend

    def client(script: BudgetScript) -> LLMClient:
        return LLMClient(backends={"agent": ScriptedBackend(script)})

    reference = BudgetScript(env[1])
    full = asyncio.run(run_episode(one_episode(env), "native", tmp_path / "ref", client(reference)))
    killed = BudgetScript(env[1])
    killed.kill_at = 9
    with pytest.raises(KeyboardInterrupt):
        asyncio.run(run_episode(one_episode(env), "native", tmp_path / "old", client(killed)))
    # The harness's own flat format: identity keys beside the state, no format_version.
    path = tmp_path / "old" / "checkpoint.json"
    saved = json.loads(path.read_text())
    path.write_text(json.dumps({"digest": saved["identity"]["digest"], "policy": "budget", **saved["state"]}))
    again = BudgetScript(env[1])
    res = asyncio.run(run_episode(one_episode(env), "native", tmp_path / "old", client(again)))
    # Resumed from the migrated checkpoint (not from the first event), to the same score.
    assert res["score"] == full["score"] and 0 < sum(again.calls.values()) < sum(reference.calls.values())


# ---- worker processes ------------------------------------------------------------------------------------------
def test_budget_episodes_on_two_worker_processes_score_and_count_as_on_one(env: tuple[Path, list[Any]],
                                                                            tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    # The engine's process executor with a real family: the same records and the same usage as one process,
    # with every call the workers made in usage.json (their reports and their journal lines).
    import amemgym.engine.runner as runner  # where the executor is chosen

    handed: list[int] = []

    class Spy(runner.ProcessUnitExecutor):
        async def play(self, ctx: Any, units: list[Any]) -> list[dict[str, Any]]:
            handed.append(self.workers)
            return await super().play(ctx, units)

    monkeypatch.setattr(runner, "ProcessUnitExecutor", Spy)
    script = BudgetScript(env[1])
    runs: dict[int, tuple[dict[str, Any], int, int]] = {}
    with FakeEndpoint(responder=script.body_reply) as ep:
        monkeypatch.setenv("OPENAI_BASE_URL", ep.base_url)
        for workers in (1, 2):
            before = ep.served
            out = tmp_path / f"w{workers}"
            res = cli("--env", str(env[0]), "--out", str(out), "--set", f"run.workers={workers}",
                      "--set", f"run.seed={workers}")  # its own seed: the second run must not replay the cache
            assert res.exit_code == 0, res.output
            usage = json.loads((out / "usage.json").read_text())["cumulative"]
            chat = sum(u["calls"] for role, u in usage.items() if role not in ("total", "embedder"))
            runs[workers] = ({p.parent.relative_to(out).as_posix(): json.loads(p.read_text())["score"]
                              for p in sorted(out.rglob("results.json"))}, chat, ep.served - before)
    (one, calls_one, served_one), (two, calls_two, served_two) = runs[1], runs[2]
    assert handed == [2]  # two processes played the second run; the first stayed on the driver's loop
    assert one == two and len(one) == 2
    assert calls_one == served_one and calls_two == served_two > 0
    assert not (tmp_path / "w2" / "usage.journal").exists()


def test_a_resume_with_other_sampling_settings_is_refused(env: tuple[Path, list[Any]], tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    script = BudgetScript(env[1])
    out = tmp_path / "o"
    with FakeEndpoint(responder=script.body_reply) as ep:
        monkeypatch.setenv("OPENAI_BASE_URL", ep.base_url)
        assert cli("--env", str(one_episode(env)), "--out", str(out)).exit_code == 0
        calls = ep.calls
        for setting in ("llm.default.temperature=0.9", "llm.roles.agent.temperature=1.3",
                        "llm.default.max_tokens=99"):
            res = cli("--env", str(one_episode(env)), "--out", str(out), "--set", setting)
            assert res.exit_code == 2 and "refusing to mix results" in res.output, (setting, res.output)
            assert "agent calls used" in " ".join(res.output.split())
        assert ep.calls == calls  # refused before any call
        same = cli("--env", str(one_episode(env)), "--out", str(out), "--set", "llm.roles.agent.temperature=0.0")
        assert same.exit_code == 0, same.output  # the agent's own default, spelled out: the same run


def test_report_refuses_flags_a_budget_report_does_not_use(env: tuple[Path, list[Any]], tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    script = BudgetScript(env[1])
    with FakeEndpoint(responder=script.body_reply) as ep:
        monkeypatch.setenv("OPENAI_BASE_URL", ep.base_url)
        assert cli("--env", str(one_episode(env)), "--out", str(tmp_path / "o")).exit_code == 0
    for flag, value in (("--env", str(tmp_path / "nowhere.json")), ("--figures", str(tmp_path / "figs"))):
        res = CliRunner().invoke(app, ["report", str(tmp_path / "o"), "-o", str(tmp_path / "r.html"), flag, value])
        assert res.exit_code == 2 and f"{flag} is not" in res.output, (flag, res.output)
        assert not (tmp_path / "r.html").exists()


def test_every_unit_of_a_run_resumed_on_another_model_is_kept_off_the_board(
        env: tuple[Path, list[Any]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = BudgetScript(env[1])
    out = tmp_path / "o"
    with FakeEndpoint(responder=script.body_reply, model="model-a") as ep:
        monkeypatch.setenv("OPENAI_BASE_URL", ep.base_url)
        assert cli("--env", str(env[0]), "--out", str(out), "--limit", "1").exit_code == 0
    with FakeEndpoint(responder=script.body_reply, model="model-b") as ep:
        monkeypatch.setenv("OPENAI_BASE_URL", ep.base_url)
        res = cli("--env", str(env[0]), "--out", str(out), "--allow-model-change")
        assert res.exit_code == 0, res.output
    board = CliRunner().invoke(app, ["leaderboard", str(out), "--out-csv", str(tmp_path / "b.csv")],
                               env={"COLUMNS": "300"})
    assert board.exit_code == 0, board.output
    rows = list(csv.DictReader((tmp_path / "b.csv").open()))
    # One row per model: the unit played on model-a before the change is flagged too, not ranked as model-a's.
    assert len(rows) == 2 and all(r["rank"] in ("", "-") and "model changed" in r["flags"] for r in rows), rows
