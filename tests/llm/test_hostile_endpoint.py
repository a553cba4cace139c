"""Hostile conditions: two writers on one run directory, servers that echo keys, send empty, huge or no
replies, URLs that cannot work, and names that try to inject Markdown or HTML."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from amemgym.cli import app
from amemgym.config import EndpointConfig, LLMConfig
from amemgym.engine.lock import run_lock
from amemgym.errors import LLMError, RunError
from amemgym.families.statetrack.progress import stall_text
from amemgym.llm.cache import ResponseCache
from amemgym.llm.client import LLMClient
from amemgym.llm.health import endpoint_problems
from amemgym.llm.redact import redact, register_secret
from amemgym.llm.timeouts import HOSTED_DEFAULTS, LOCAL_DEFAULTS, resolve_timeouts
from amemgym.llm.usage import UsageLedger
from amemgym.report.leaderboard import leaderboard, to_markdown
from amemgym.report.load import RunRecord
from amemgym.testing.fake_endpoint import FakeEndpoint
from amemgym.testing.runs import start_run, wait_for_work
from amemgym.testing.scripted_model import scripted_client

SRC = Path(__file__).resolve().parents[2] / "src"
#: A key that matches no credential pattern: only the registered-key redaction can hide it.
PLAIN_KEY = "plainKEYvalue4242zz"
FAST = ["--set", "llm.default.max_retries=1", "--set", "llm.default.model=fake-model"]


def all_text(root: Path) -> str:
    return "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in sorted(root.rglob("*")) if p.is_file())


# ---- 1. one writer per run directory ---------------------------------------------------------------------
def test_the_same_run_started_twice_at_once_runs_once(tmp_path: Path) -> None:
    out = tmp_path / "run"
    # Slow enough (>= 10 s a run) that both processes reach the lock before either could finish.
    with FakeEndpoint(latency=0.3) as ep:
        procs = [start_run(ep, ["run", "--out", str(out)], tmp_path / f"c{k}", pythonpath=SRC) for k in (1, 2)]
        texts = [p.communicate(timeout=300)[0] for p in procs]
    codes = [p.returncode for p in procs]
    assert sorted(codes) == [0, 2], texts
    loser = texts[codes.index(2)]
    lines = [line for line in loser.splitlines() if line.strip()]
    assert len(lines) == 1 and "in use by pid" in lines[0] and "amemgym run" in lines[0], loser
    assert str(procs[codes.index(0)].pid) in lines[0]


def test_a_second_writer_with_another_agent_is_refused_by_name(tmp_path: Path) -> None:
    out = tmp_path / "run"
    # 0.6 s a call keeps the first run (a chain of ~35 calls) busy for >= 20 s, far longer than the second
    # process needs to start, even on a machine loaded several times over (at 0.3 s it once lost that race).
    with FakeEndpoint(latency=0.6) as ep:
        first = start_run(ep, ["run", "--out", str(out)], tmp_path / "c1", pythonpath=SRC)
        try:
            wait_for_work(ep, first, 0)
            assert first.poll() is None, first.communicate()[0]
            second = start_run(ep, ["run", "--out", str(out), "--agent", "rag"], tmp_path / "c2", pythonpath=SRC)
            text, _ = second.communicate(timeout=120)
            assert second.returncode == 2, text
            assert "in use by pid" in text and str(first.pid) in text, text
        finally:
            text, _ = first.communicate(timeout=300)
        assert first.returncode == 0, text
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["protocol"]["agent"]["name"] == "native"


def test_a_lock_left_by_a_killed_holder_is_taken_over(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import sys, time
            sys.path.insert(0, {str(SRC)!r})
            from amemgym.engine.lock import run_lock
            with run_lock(__import__("pathlib").Path({str(tmp_path)!r}), "holder"):
                print("locked", flush=True)
                time.sleep(600)
        """)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        with pytest.raises(RunError, match=f"pid {holder.pid}.*holder"), run_lock(tmp_path, "second"):
            pass
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(timeout=30)
        with run_lock(tmp_path, "third") as path:  # the kernel released the dead holder's lock
            assert json.loads(path.read_text())["command"] == "third"
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()


# ---- 2. secrets echoed by a server -----------------------------------------------------------------------
def test_an_echoed_key_reaches_no_file_and_no_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "run"
    with FakeEndpoint(force_faults={"*": "echo_auth_401"}) as ep:
        monkeypatch.setenv("OPENAI_BASE_URL", ep.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", PLAIN_KEY)
        result = CliRunner().invoke(app, ["run", "--out", str(out), *FAST])
        assert ep.authorizations == {f"Bearer {PLAIN_KEY}"}  # the server did see it, and echoed it
        gen = CliRunner().invoke(app, ["generate", "--generator", "llm", "--users", "1", "--out",
                                       str(tmp_path / "gen"), *FAST])
    assert result.exit_code == 1, result.output
    failures = json.loads((out / "failures.json").read_text())["failures"]
    assert failures and "401" in failures[0]["error"] and "[REDACTED]" in failures[0]["error"]
    assert gen.exit_code != 0
    assert (tmp_path / "gen" / "generation_report.json").exists()
    for text in (all_text(tmp_path), result.output, gen.output):
        assert PLAIN_KEY not in text


def test_audit_sim_judge_fails_when_every_judge_call_failed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "run"
    with FakeEndpoint() as ep:
        monkeypatch.setenv("OPENAI_BASE_URL", ep.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", PLAIN_KEY)
        assert CliRunner().invoke(app, ["run", "--out", str(out), *FAST]).exit_code == 0
        ep.force_faults = {"*": "echo_auth_401"}
        result = CliRunner().invoke(app, ["audit-sim", str(out), "--judge", *FAST])
    assert result.exit_code == 1, result.output
    assert "every judge call(s) failed" in result.output
    audit = json.loads((out / "sim_audit.json").read_text())
    assert audit["judge_failures"] == audit["turns"] > 0
    assert PLAIN_KEY not in all_text(out) and PLAIN_KEY not in result.output


def test_redact_hides_registered_keys_and_credential_shapes() -> None:
    register_secret("another-plain-secret")
    text = redact("401: key another-plain-secret; Authorization: Bearer abc.def-123; sk-proj-ABCDEF123456; "
                  "http://me:pw@host/v1; token expired")
    for secret in ("another-plain-secret", "abc.def-123", "sk-proj-ABCDEF123456", "me:pw"):
        assert secret not in text
    assert "token expired" in text  # ordinary words survive


# ---- 3. empty and unusable replies ------------------------------------------------------------------------
def test_empty_replies_are_failures_and_never_served_from_the_cache(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeEndpoint(force_faults={"*": "empty_content"}) as ep:
        monkeypatch.setenv("OPENAI_BASE_URL", ep.base_url)
        broken = CliRunner().invoke(app, ["run", "--out", str(tmp_path / "a"), *FAST])
        metrics = json.loads((tmp_path / "a" / "metrics.json").read_text())
        assert broken.exit_code == 1, broken.output
        assert not metrics["complete"] and metrics["failures"]
        assert "empty_reply" in metrics["failures"][0]["error"]
        assert "agent" in [p["role"] for p in metrics["endpoint_problems"]]
        assert "endpoint problem" in broken.output and "hardly use the state" not in broken.output
        ep.force_faults = {}  # the server is fixed
        ep.reset_counters()
        fixed = CliRunner().invoke(app, ["run", "--out", str(tmp_path / "b"), *FAST])
        assert fixed.exit_code == 0, fixed.output
        assert ep.served > 0
    replies = [q["reply"] for p in (tmp_path / "b" / "users").rglob("eval/*.json")
               for q in json.loads(p.read_text())["questions"]]
    assert replies and all(r.strip() for r in replies)


def test_a_reply_that_fails_its_check_is_not_cached(tmp_path: Path) -> None:
    schema = {"type": "object"}

    def check(value: Any) -> str | None:
        return None if value.get("ok") is True else "not ok"

    async def go(texts: list[str]) -> tuple[Any, list[str], int]:
        # The replies in order; the count is of the calls that reached the model.
        llm = scripted_client(lambda req: texts.pop(0), cache=tmp_path / "c.sqlite", roles=("judge",),
                              embedder=False)
        value, _ = await llm.chat_json("judge", [{"role": "user", "content": "q"}], schema, check=check)
        assert llm.cache is not None
        llm.cache.flush()  # stored replies wait in memory until a batch is written (llm/cache.py)
        stored = [json.loads(v)["text"] for (v,) in llm.cache._conn.execute("SELECT value FROM responses")]
        llm.cache.close()
        return value, stored, len(llm.scripted.requests)

    value, stored, _ = asyncio.run(go(['{"ok": false}', '{"ok": true}']))
    assert value == {"ok": True} and stored == ['{"ok": true}']
    # A second process asks again: the first seed's failed reply is not replayed, the endpoint is asked.
    value, _, calls = asyncio.run(go(['{"ok": true}']))
    assert value == {"ok": True} and calls == 1


def test_endpoint_problems_need_a_majority_of_unusable_attempts() -> None:
    usage = {"agent": {"calls": 10, "faults": {"empty_reply": 3}, "unusable": 0},
             "judge": {"calls": 2, "faults": {"malformed_body": 5}, "unusable": 1},
             "generator": {"calls": 10, "faults": {}, "unusable": 9},  # a weak model, not a broken server
             "total": {"calls": 12, "faults": {"empty_reply": 3, "malformed_body": 5}}}
    assert [p["role"] for p in endpoint_problems(usage)] == ["judge"]


# ---- 4. reply size ------------------------------------------------------------------------------------------
def test_a_huge_reply_is_a_clean_failure_not_retried_or_cached(tmp_path: Path) -> None:
    async def go(url: str) -> None:
        cache = ResponseCache(tmp_path / "c.sqlite")
        llm = LLMClient(LLMConfig(default=EndpointConfig(base_url=url, model="fake-model")), cache=cache,
                        backoff_base=0.001)
        try:
            with pytest.raises(LLMError, match="reply_too_large"):
                await llm.chat("agent", [{"role": "user", "content": "hi"}])
        finally:
            await llm.aclose()
        assert len(cache) == 0
        cache.close()

    with FakeEndpoint(force_faults={"*": "huge"}, huge_bytes=5_000_000) as ep:
        asyncio.run(go(ep.base_url))
        assert ep.calls == 1


# ---- 6. hung endpoints ---------------------------------------------------------------------------------------
def test_a_hung_call_fails_within_its_timeouts_and_bounded_retries() -> None:
    async def go(url: str) -> str:
        cfg = LLMConfig(default=EndpointConfig(base_url=url, model="fake-model", read_timeout_s=0.2,
                                               max_retries=5, max_timeout_retries=1))
        llm = LLMClient(cfg, backoff_base=0.001)
        try:
            with pytest.raises(LLMError) as info:
                await llm.chat("agent", [{"role": "user", "content": "hi"}])
            return str(info.value)
        finally:
            await llm.aclose()

    with FakeEndpoint(force_faults={"*": "timeout"}, timeout_sleep=3.0) as ep:
        message = asyncio.run(go(ep.base_url))
        assert ep.calls == 2  # one attempt and one timeout retry, not six
    assert "timeout" in message and "2 attempt" in message


def test_timeout_defaults_differ_for_local_and_hosted_endpoints() -> None:
    assert resolve_timeouts("http://127.0.0.1:8000/v1", None, None, None) == \
        resolve_timeouts("http://192.168.1.5/v1", None, None, None)
    local = resolve_timeouts("http://localhost:8000/v1", None, None, None)
    hosted = resolve_timeouts("https://api.example.com/v1", None, None, None)
    assert (local.connect, local.read, local.total) == LOCAL_DEFAULTS
    assert (hosted.connect, hosted.read, hosted.total) == HOSTED_DEFAULTS
    capped = resolve_timeouts("https://api.example.com/v1", None, None, 1.0)
    assert capped.read == capped.connect == capped.total == 1.0


def test_the_progress_line_names_stalled_calls() -> None:
    ledger = UsageLedger()
    with ledger.waiting(), ledger.waiting():
        assert stall_text(ledger) == ""
        for token in list(ledger._started):
            ledger._started[token] -= 95  # as if both had been waiting 95 s
        assert stall_text(ledger).startswith("2 calls waiting > 30 s (longest 9")
    assert ledger.in_flight == 0 and stall_text(ledger) == ""


# ---- 7. URLs that cannot work ------------------------------------------------------------------------------------
@pytest.mark.parametrize(("url", "words"), [
    ("ftp://127.0.0.1:{port}/v1", "http:// or https://"),
    ("http://user:pass@127.0.0.1:{port}/v1", "credentials"),
])
def test_an_unusable_base_url_is_a_config_error(url: str, words: str, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeEndpoint() as ep:
        for how in ("env", "set"):
            full = url.format(port=ep.port)
            args = ["run", "--out", str(tmp_path / how)]
            if how == "env":
                monkeypatch.setenv("OPENAI_BASE_URL", full)
            else:
                monkeypatch.delenv("OPENAI_BASE_URL")
                args += ["--set", f"llm.default.base_url={full}"]
            result = CliRunner().invoke(app, args)
            assert result.exit_code == 2, result.output
            assert words in result.output and len(result.output.strip().splitlines()) == 1
            assert "malformed_body" not in result.output and full not in result.output
        assert ep.calls == 0 and ep.model_calls == 0


# ---- 8. leaderboard Markdown -------------------------------------------------------------------------------------
def test_markdown_leaderboard_escapes_names() -> None:
    name = "<img src=x onerror=alert(1)>|`code`\n[link](javascript:x) run_b"
    record = RunRecord(Path("r"), name, {"protocol": {"environment_sha256": "a" * 64}},
                       {"agent": name, "complete": True,
                        "overall": {"memory_score": {"mean": 0.5, "lo": 0.4, "hi": 0.6, "n": 3}}})
    md = to_markdown(leaderboard([record]))
    row = md.splitlines()[2]
    assert "<img" not in md and "&lt;img" in row
    assert "\\|" in row and "\\`code\\`" in row and "\\[link\\](javascript:x) run_b" in row
    assert len(md.splitlines()[0].split(" | ")) == len(row.split(" | "))  # no cell was split


@pytest.mark.parametrize("resp", [
    # Two choices for a request of one: the one marked index 1 first, as a found server sent them.
    {"model": "m", "choices": [{"index": 1, "message": {"content": "list"}},
                               {"index": 0, "message": {"content": "a"}}]},
    {"model": "m", "choices": {"0": {"message": {"content": "a"}}}},
    {"model": 123, "choices": [{"index": 0, "message": {"content": "a"}}]},
])
def test_a_reply_with_several_choices_or_a_model_that_is_no_name_is_malformed(resp: dict[str, Any]) -> None:
    from amemgym.llm.backends import TransientError
    from amemgym.llm.openai_backend import _chat_result

    with pytest.raises(TransientError) as err:
        _chat_result(resp, "m", 0.1)
    assert err.value.kind == "malformed_body"
