"""A lone surrogate from outside (a model's reply, a plug-in's return value) never ends a run in a traceback.

Before: ``json.loads`` of the escape ``"\\ud800"`` (in a plug-in's tool call, or in a reply body, which the
client then cached) gave a string that no file could encode, and every run, re-runs included, died in
``storage.append_text`` with a UnicodeEncodeError. Now the character becomes U+FFFD where it enters.
"""

from __future__ import annotations

import asyncio
import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from amemgym.agents.guard import call_plugin, call_plugin_sync
from amemgym.cli import app
from amemgym.errors import RunError
from amemgym.families.budget.protocol import parse_call
from amemgym.families.budget.tool_agents import canonical_reply
from amemgym.llm.parsing import parse_json_reply
from amemgym.llm.types import ToolCallOut
from amemgym.storage import append_jsonl, atomic_write_json, atomic_write_text
from amemgym.testing.fake_endpoint import FakeEndpoint
from amemgym.testing.responder import default_responder
from amemgym.textclean import clean_text, clean_value

LONE = "\ud800"
FFFD = "\ufffd"
FAST = ["--set", "llm.default.max_retries=1"]


def _cli(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(app, list(args))
    # A traceback shows as an exception other than the SystemExit of typer's exit code.
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    assert "Traceback" not in res.output
    return res.exit_code, res.output


def test_clean_text_replaces_only_lone_surrogates() -> None:
    assert clean_text(f"a{LONE}b\udfff") == f"a{FFFD}b{FFFD}"
    assert clean_text("\ud83d\ude00") == "\U0001f600"  # a pair is the character it encodes
    plain = "déjà vu \U0001f600"
    assert clean_text(plain) is plain


def test_clean_value_walks_containers_and_keeps_clean_ones() -> None:
    snapshot: dict[str, Any] = {"notes": ["ok", 3, None], "meta": {"k": ("x", 1.5)}}
    assert clean_value(snapshot) is snapshot
    dirty = {f"k{LONE}": [f"v{LONE}", {"deep": (LONE,)}], "n": 1}
    assert clean_value(dirty) == {f"k{FFFD}": [f"v{FFFD}", {"deep": (FFFD,)}], "n": 1}
    json.dumps(clean_value(dirty), ensure_ascii=False).encode("utf-8")


def test_json_decoded_from_replies_is_clean() -> None:
    escaped = json.dumps({"tool": "write", "args": {"text": f"note {LONE}"}})  # ASCII, with the escape
    assert "\\ud800" in escaped
    assert parse_call(escaped).args == {"text": f"note {FFFD}"}
    assert parse_json_reply(json.dumps({"answer": f"1{LONE}"})) == {"answer": f"1{FFFD}"}
    native = canonical_reply((ToolCallOut("c0", "write", json.dumps({"text": LONE})),), "")
    assert native.encode("utf-8") and json.loads(native)["args"]["text"] == FFFD


def test_plugin_returns_are_cleaned_by_the_guard() -> None:
    class Agent:
        def reply(self, message: str, *, time: str) -> str:
            return f"hi {LONE}"

        def stats(self) -> dict[str, Any]:
            return {f"n{LONE}": [LONE]}

    agent = Agent()
    reply = asyncio.run(call_plugin("p", "reply", agent.reply, "m", time="t", expect=str))
    assert reply == f"hi {FFFD}"
    assert call_plugin_sync("p", "stats", agent.stats, expect=dict) == {f"n{FFFD}": [FFFD]}


def test_storage_refuses_unencodable_text_in_one_error_naming_the_file(tmp_path: Path) -> None:
    for write in (lambda p: atomic_write_text(p, f"x{LONE}"), lambda p: atomic_write_json(p, {"a": LONE}),
                  lambda p: append_jsonl(p, [{"a": LONE}])):
        path = tmp_path / "f.json"
        with pytest.raises(RunError, match=r"f\.json: cannot write text holding the lone surrogate '\\ud800'"):
            write(path)
        assert not path.exists() or path.read_bytes() == b""
        assert not list(tmp_path.glob(".f.json.*.tmp"))


PLUGIN = """
import json

class A:
    def act(self, messages, *, event):
        return json.dumps({{"tool": "write", "args": {{"text": "note \\ud800"}}}}, ensure_ascii={ascii})

def make(llm, ctx):
    return A()

make.roles = ("agent",)
"""


@pytest.mark.parametrize("ascii_only", [True, False], ids=["escaped", "raw"])
def test_a_budget_plugin_writing_a_lone_surrogate_runs_and_reruns(ascii_only: bool, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # escaped: the surrogate appears only when the harness decodes the tool call; raw: the act string holds it.
    (tmp_path / "surr.py").write_text(textwrap.dedent(PLUGIN.format(ascii=ascii_only)), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    code, text = _cli("generate", "--family", "budget", "--domain", "films", "--seed", "0", "--out", "env")
    assert code == 0, text
    with FakeEndpoint() as ep:
        run = ["run", "--env", "env/data.json", "--agent", "./surr.py:make", "--set",
               f"llm.default.base_url={ep.base_url}", "--set", "llm.default.model=fake-model", *FAST]
        code, text = _cli(*run, "--out", "s1")
        assert code == 0, text
        trace = (tmp_path / "s1" / "trace.jsonl").read_text(encoding="utf-8")  # strict UTF-8
        assert f"note {FFFD}" in trace
        code, text = _cli(*run, "--out", "s1")  # a resume of the finished run
        assert code == 0, text
        code, text = _cli(*run, "--out", "s2")  # and a fresh run records the same thing
        assert code == 0, text
    assert (tmp_path / "s2" / "trace.jsonl").read_text() == trace


def surrogate_replies(body: dict[str, Any]) -> str | dict[str, Any]:
    """The default replies, each plain-text one with a lone surrogate (sent by the endpoint as ``\\ud800``)."""
    reply = default_responder(body)
    if isinstance(reply, str) and not reply.lstrip().startswith(("{", "[")):
        return f"{reply} {LONE}"
    return reply


def _sessions(out: Path) -> list[str]:
    texts = []
    for path in sorted(out.rglob("sessions.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            texts.extend(m["content"] for m in json.loads(line).get("messages", []) if isinstance(m, dict))
    return texts


def test_a_statetrack_run_with_surrogate_replies_records_fffd(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AMEMGYM_CACHE_DIR", str(tmp_path / "cache"))
    with FakeEndpoint(responder=surrogate_replies) as ep:
        monkeypatch.setenv("OPENAI_BASE_URL", ep.base_url)
        code, text = _cli("run", "--out", str(tmp_path / "a"), "--limit", "1", *FAST)
        assert code == 0, text
        first = _sessions(tmp_path / "a")
        assert any(t.endswith(f" {FFFD}") for t in first) and not any(LONE in t for t in first)
        calls = ep.stats()["calls"]
        # A second run on the same cache replays the cleaned replies: the same conversation, no new call.
        code, text = _cli("run", "--out", str(tmp_path / "b"), "--limit", "1", *FAST)
        assert code == 0, text
        assert ep.stats()["calls"] == calls
    assert _sessions(tmp_path / "b") == first
