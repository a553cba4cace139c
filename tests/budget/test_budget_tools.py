"""Native tool calls, the protocol choice, plug-in tool agents and the optional judge of the budget family."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from amemgym.cli import app
from amemgym.config import AppConfig, EndpointConfig, LLMConfig
from amemgym.engine.checkpoint import read_trace
from amemgym.families.budget.generate import build_episode
from amemgym.families.budget.io import save_episode
from amemgym.families.budget.model import Episode
from amemgym.families.budget.protocol import TOOLS, ProtocolError, function_tools, parse_call
from amemgym.families.budget.stream import shown_kind
from amemgym.families.budget.tool_agents import (
    _PROBED,
    ENDED,
    SEVERAL_CALLS,
    canonical_reply,
    probe_native,
    to_native,
)
from amemgym.families.budget.units import BudgetUnits, run_episode
from amemgym.llm.cache import ResponseCache
from amemgym.llm.client import LLMClient
from amemgym.llm.types import ChatRequest, ChatResult, ToolCallOut
from amemgym.testing.budget import OPENING as _OPENING
from amemgym.testing.budget import BudgetScript, NativeBudgetScript, native_body, native_result, served_episode
from amemgym.testing.budget import tool_call as call
from amemgym.testing.fake_endpoint import FakeEndpoint
from amemgym.testing.scripted_model import ScriptedBackend


@pytest.fixture(scope="module")
def episode() -> Episode:
    return build_episode("lite", "films", 0)


@pytest.fixture(autouse=True)
def _fresh_probes() -> None:
    _PROBED.clear()  # every test's endpoint is new; a probe result must not leak between tests


def served(episode: Episode, tmp_path: Path, *, native: bool, judge: Any = None) -> tuple[Path, Any]:
    """The episode as a file, and a fake-endpoint responder playing the budget stand-in (natively or in text)."""
    env, text_reply = served_episode(episode, tmp_path)

    def respond(body: dict[str, Any]) -> Any:
        first = str(body["messages"][0].get("content"))
        if judge is not None and "You grade one answer" in first:
            return judge(body)
        if not any(_OPENING.search(str(m.get("content"))) for m in body["messages"]):
            return native_body(call("done"), "p") if native else "I cannot call functions."
        reply = text_reply(body)
        return native_body(reply) if native else reply

    return env, respond


def cli(*args: str) -> Any:
    return CliRunner().invoke(app, ["run", *args])


# ---- the tool schema and the translation ----------------------------------------------------------------
def test_function_tools_come_from_the_protocol_table() -> None:
    tools = function_tools()
    assert [t["function"]["name"] for t in tools] == list(TOOLS)
    for t in tools:
        params = t["function"]["parameters"]
        assert params["required"] == list(TOOLS[t["function"]["name"]])
        assert set(params["required"]) <= set(params["properties"])


def test_history_translates_to_native_messages_and_back() -> None:
    write = call("write", text="Film A: budget 3")
    messages = [{"role": "system", "content": "rules"}, {"role": "user", "content": "Memory: x\n\nEvent 1 of 9"},
                {"role": "assistant", "content": "Sure, one moment."},
                {"role": "user", "content": "protocol error: not a single JSON object. Reply with one call."},
                {"role": "assistant", "content": write}, {"role": "user", "content": "result: wrote note 1"},
                {"role": "assistant", "content": call("done")},
                {"role": "user", "content": "Memory: 1 note\n\nEvent 2 of 9"}]
    native = to_native(messages)
    assert native[0]["role"] == "system" and native[0]["content"].startswith("rules")
    assert "function" in native[0]["content"]
    assert native[2] == {"role": "assistant", "content": "Sure, one moment."}  # not a call: stays text
    assert native[3]["role"] == "user"
    written = {"name": "write", "arguments": json.dumps({"text": "Film A: budget 3"})}
    assert native[4]["tool_calls"][0]["function"] == written
    cid = native[4]["tool_calls"][0]["id"]
    assert native[5] == {"role": "tool", "tool_call_id": cid, "content": "result: wrote note 1"}
    # done ended the event: no feedback followed, so its result is the fixed "ok" and the opening stays a user turn
    assert native[7]["content"] == ENDED and native[8]["role"] == "user"
    assert to_native(messages) == native  # ids depend on positions only


def test_one_call_becomes_the_canonical_reply_and_several_are_a_protocol_error() -> None:
    one = canonical_reply((ToolCallOut("a", "write", '{"text": "x"}'),), "ignored prose")
    assert parse_call(one).tool == "write" and json.loads(one) == {"tool": "write", "args": {"text": "x"}}
    assert canonical_reply((), "plain text") == "plain text"
    two = canonical_reply((ToolCallOut("a", "write", '{"text": "x"}'), ToolCallOut("b", "done", "{}")), "")
    with pytest.raises(ValueError):
        parse_call(two)
    bad_args = canonical_reply((ToolCallOut("a", "write", "{not json"),), "")
    with pytest.raises(ValueError, match="args must be an object"):
        parse_call(bad_args)
    native = to_native([{"role": "system", "content": "s"}, {"role": "user", "content": "Memory: -"},
                        {"role": "assistant", "content": two}, {"role": "user", "content": "protocol error: x"}])
    assert len(native[2]["tool_calls"]) == 2
    assert [m["content"] for m in native[3:]] == [SEVERAL_CALLS, SEVERAL_CALLS]


@pytest.mark.parametrize(("reply", "error"), [
    ('{"tool": "read", "args": {"id": "\u00b2"}}', "read.id must be a int"),  # a digit int() refuses
    ('{"tool": "read", "args": {"id": "\u0663"}}', None),  # an Arabic-Indic three: a decimal digit
    ("[" * 5_000 + "]" * 5_000, "nested too deeply"),
])
def test_odd_digits_and_deep_nesting_are_protocol_errors_not_crashes(reply: str, error: str | None) -> None:
    if error is None:
        assert parse_call(reply).args == {"id": 3}
        return
    with pytest.raises(ProtocolError, match=error):
        parse_call(reply)
    native = canonical_reply((ToolCallOut("a", "read", reply.split('"args": ')[-1].rstrip("}") or "{}"),), "")
    with pytest.raises(ProtocolError):
        parse_call(native)


def test_several_calls_run_nothing_and_the_agent_is_told(episode: Episode, tmp_path: Path) -> None:
    env = tmp_path / "data.json"
    save_episode(episode, env)
    agent = BudgetScript([episode], writes_per_doc=2)  # it counts the rejected reply as its first step
    seen: list[ChatRequest] = []

    def script(req: ChatRequest) -> ChatResult:
        seen.append(req)
        if req.messages[-1]["role"] == "user" and "(documents)" in req.messages[-1]["content"]:
            return ChatResult(text="", model="s", tool_calls=(ToolCallOut("a", "write", '{"text": "a"}'),
                                                              ToolCallOut("b", "write", '{"text": "b"}')))
        return native_result(agent(req))

    llm = LLMClient(backends={"agent": ScriptedBackend(script)})
    res = asyncio.run(run_episode(env, "native", tmp_path / "r", llm, tools="native"))
    trace = read_trace(tmp_path / "r")
    first = next(t for t in trace if t.get("kind") == "documents")
    assert first["step"] == 0 and "error" in first and first["writes_used"] == 0
    assert any(m.get("content") == SEVERAL_CALLS for r in seen for m in r.messages if m["role"] == "tool")
    docs = sum(shown_kind(e.kind) == "documents" for e in episode.events)
    assert res["score"]["writes_used"] == docs  # only the single calls that followed were run


# ---- native mode scores as text mode does --------------------------------------------------------------
def test_a_native_session_scores_exactly_as_the_same_decisions_in_text(episode: Episode, tmp_path: Path) -> None:
    env = tmp_path / "data.json"
    save_episode(episode, env)
    text = asyncio.run(run_episode(env, "native", tmp_path / "text",
                                   LLMClient(backends={"agent": ScriptedBackend(BudgetScript([episode]))})))
    scripted = NativeBudgetScript([episode])
    native = asyncio.run(run_episode(env, "native", tmp_path / "nat", LLMClient(backends={"agent": ScriptedBackend(
        scripted)}), tools="native"))
    assert native["tool_protocol"] == "native" and text["tool_protocol"] == "text"
    assert native["score"] == text["score"] and native["answers"] == text["answers"]
    assert native["ledger"] == text["ledger"] and native["writes_over_time"] == text["writes_over_time"]
    assert read_trace(tmp_path / "nat") == read_trace(tmp_path / "text")  # same calls, replies, results
    assert all(r.tools is not None and len(r.tools) == len(TOOLS) for r in scripted.requests)
    assert any(m["role"] == "tool" for r in scripted.requests for m in r.messages)


def test_the_request_log_shows_tools_in_native_mode_only(episode: Episode, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    scores = {}
    for mode in ("native", "text"):
        env, respond = served(episode, tmp_path, native=mode == "native")
        with FakeEndpoint(responder=respond) as ep:
            monkeypatch.setenv("OPENAI_BASE_URL", ep.base_url)
            out = tmp_path / mode
            result = cli("--env", str(env), "--out", str(out), "--set", f"budget.tools={mode}", "--no-cache")
            assert result.exit_code == 0, result.output
            assert f"tool protocol: {mode}" in " ".join(result.output.split())
            log = list(ep.log)
        assert log and all(r.fault is None for r in log)
        if mode == "native":
            assert all(r.tools is not None and set(r.tools) == set(TOOLS) for r in log)
        else:
            assert all(r.tools is None for r in log)
        results = json.loads((out / "results.json").read_text())
        assert results["tool_protocol"] == mode
        scores[mode] = results["score"]
    assert scores["native"] == scores["text"] and scores["native"]["accuracy"] == 1.0


# ---- auto: the probe, the fallback and the pin ----------------------------------------------------------
def test_auto_falls_back_to_text_on_a_server_that_rejects_tools(episode: Episode, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    env, respond = served(episode, tmp_path, native=False)
    with FakeEndpoint(responder=respond, reject_tools=True) as ep:
        monkeypatch.setenv("OPENAI_BASE_URL", ep.base_url)
        result = cli("--env", str(env), "--out", str(tmp_path / "r"), "--no-cache")
        log = list(ep.log)
    assert result.exit_code == 0, result.output
    results = json.loads((tmp_path / "r" / "results.json").read_text())
    assert results["tool_protocol"] == "text" and "tools" in results["tool_protocol_reason"]
    assert log[0].tools is not None and log[0].fault == "tools_400"  # one probe, then text only
    assert all(r.tools is None for r in log[1:]) and results["score"]["accuracy"] == 1.0


def test_auto_picks_native_where_the_forced_call_is_made_and_a_resume_keeps_it(
        episode: Episode, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env, respond = served(episode, tmp_path, native=True)
    out = tmp_path / "r"
    with FakeEndpoint(responder=respond) as ep:
        monkeypatch.setenv("OPENAI_BASE_URL", ep.base_url)
        first = cli("--env", str(env), "--out", str(out))
        assert first.exit_code == 0, first.output
        assert ep.log[0].tool_choice == {"type": "function", "function": {"name": "done"}}
        assert json.loads((out / "results.json").read_text())["tool_protocol"] == "native"
        ep.reset_counters()
        again = cli("--env", str(env), "--out", str(out))  # auto again: the pinned protocol, no new probe
        assert again.exit_code == 0 and not ep.log
        other = cli("--env", str(env), "--out", str(out), "--set", "budget.tools=text")
        assert other.exit_code == 2 and "native" in other.output


def test_a_server_that_ignores_a_forced_call_gets_text(tmp_path: Path) -> None:
    llm = LLMClient(backends={"agent": ScriptedBackend(lambda req: '{"name": "done", "arguments": {}}')})
    choice = asyncio.run(probe_native(llm))
    assert choice.protocol == "text" and "no call" in choice.reason


def test_the_embedded_model_uses_text_without_a_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    choice = asyncio.run(probe_native(LLMClient(LLMConfig())))
    assert choice.protocol == "text" and "embedded" in choice.reason


def test_a_bad_tools_setting_is_one_line(episode: Episode, tmp_path: Path) -> None:
    env = tmp_path / "data.json"
    save_episode(episode, env)
    result = cli("--env", str(env), "--out", str(tmp_path / "r"), "--set", "budget.tools=fancy")
    assert result.exit_code == 2 and "budget.tools" in result.output


# ---- the LLM seam --------------------------------------------------------------------------------------
def test_tool_calls_replay_exactly_from_the_cache(tmp_path: Path) -> None:
    calls = (ToolCallOut("call_7", "edit", '{"id": 2, "old": "3", "new": "4"}'),)
    backend = ScriptedBackend(lambda req: ChatResult(text="", model="m", tool_calls=calls))
    msgs = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "", "tool_calls": [calls[0].to_wire()]},
            {"role": "tool", "tool_call_id": "call_7", "content": "result: ok"}]
    tools = function_tools()
    first = LLMClient(cache=ResponseCache(tmp_path / "c.sqlite"), backends={"agent": backend})
    a = asyncio.run(first.chat("agent", msgs, tools=tools))
    assert a.tool_calls == calls and not a.cached
    assert backend.requests[0].messages[1]["tool_calls"] == [calls[0].to_wire()]  # not stripped to role+content
    assert backend.requests[0].messages[2]["tool_call_id"] == "call_7"
    second = LLMClient(cache=ResponseCache(tmp_path / "c.sqlite"), backends={"agent": backend})
    b = asyncio.run(second.chat("agent", msgs, tools=tools))
    assert b.cached and b.tool_calls == calls and len(backend.requests) == 1
    c = asyncio.run(second.chat("agent", msgs))  # the same messages without tools are another request
    assert not c.cached and len(backend.requests) == 2


def test_the_http_backend_sends_tools_and_reads_calls_with_empty_content() -> None:
    wire = {"id": "z", "type": "function", "function": {"name": "read", "arguments": {"id": 3}}}
    with FakeEndpoint(responder=lambda body: {"content": "", "tool_calls": [wire]}) as ep:
        llm = LLMClient(LLMConfig(default=EndpointConfig(base_url=ep.base_url, model="fake-model"), cache=False))

        async def go() -> ChatResult:
            try:
                return await llm.chat("agent", [{"role": "user", "content": "x"}], tools=function_tools(),
                                      tool_choice="required")
            finally:
                await llm.aclose()

        res = asyncio.run(go())
        assert ep.log[0].tools == tuple(TOOLS) and ep.log[0].tool_choice == "required" and ep.calls == 1
    assert res.text == "" and res.tool_calls == (ToolCallOut("z", "read", '{"id": 3}'),)


# ---- plug-in tool agents -------------------------------------------------------------------------------
PLUGIN = '''
import json


class Keeper:
    """Writes each document's first line and answers every question with "I don't know"."""

    async def act(self, messages, *, event):
        steps = sum(1 for m in messages if m["role"] == "assistant")
        if event.kind == "question":
            return json.dumps({"tool": "submit_answer", "args": {"answer": "I don't know"}})
        if event.kind == "documents" and steps == 0:
            return json.dumps({"tool": "write", "args": {"text": event.text.splitlines()[0][:200]}})
        return json.dumps({"tool": "done", "args": {}})


def factory(llm, ctx):
    assert ctx.episode.tier.name == "lite"
    return Keeper()


def broken(llm, ctx):
    return object()
'''


def test_a_plugin_tool_agent_runs_an_episode_end_to_end(episode: Episode, tmp_path: Path) -> None:
    env = tmp_path / "data.json"
    save_episode(episode, env)
    plugin = tmp_path / "keeper.py"
    plugin.write_text(PLUGIN)
    result = cli("--env", str(env), "--out", str(tmp_path / "r"), "--agent", f"{plugin}:factory")
    assert result.exit_code == 0, result.output
    results = json.loads((tmp_path / "r" / "results.json").read_text())
    docs = sum(e.kind == "documents" for e in episode.events)
    assert results["tool_protocol"] == "plugin" and results["score"]["writes_used"] == docs
    abstain = [q for q in episode.questions if q.answer_type == "refuse"]
    assert results["score"]["accuracy"] == pytest.approx(len(abstain) / len(episode.questions))
    assert results["usage"]["total"]["calls"] == 0
    bad = cli("--env", str(env), "--out", str(tmp_path / "b"), "--agent", f"{plugin}:broken")
    assert bad.exit_code == 2 and "not a tool agent" in bad.output and "act" in bad.output


def test_a_plugin_named_by_an_agent_config_file_is_a_plugin_too(episode: Episode, tmp_path: Path) -> None:
    # The file's `type` is what makes the agent a plug-in, not a ':' in the --agent argument: it is built as a tool
    # agent, and planned to play in a worker process like the plug-in named directly.
    env = tmp_path / "data.json"
    save_episode(episode, env)
    plugin = tmp_path / "keeper.py"
    plugin.write_text(PLUGIN)
    config = tmp_path / "keeper.yaml"
    config.write_text(f"type: {plugin}:factory\nname: keeper\n")
    direct = cli("--env", str(env), "--out", str(tmp_path / "d"), "--agent", f"{plugin}:factory")
    via_file = cli("--env", str(env), "--out", str(tmp_path / "r"), "--agent", str(config))
    assert direct.exit_code == 0 and via_file.exit_code == 0, via_file.output
    results = json.loads((tmp_path / "r" / "results.json").read_text())
    assert results["tool_protocol"] == "plugin"
    assert results["score"] == json.loads((tmp_path / "d" / "results.json").read_text())["score"]
    units = BudgetUnits()
    llm = LLMClient(backends={"agent": ScriptedBackend(BudgetScript([episode]))})
    plan = units.plan(str(config), AppConfig(), llm, units.units(env, None)[0])
    assert plan.plugin and plan.protocol["interface"] == "tool"


# ---- the judge ----------------------------------------------------------------------------------------
class Guesser(BudgetScript):
    """Right on even-numbered questions; on odd ones a wrong committed answer, a refusal, or a list."""

    def __call__(self, req: ChatRequest) -> str:
        reply = json.loads(super().__call__(req))
        if reply["tool"] != "submit_answer":
            return json.dumps(reply)
        opening = next(m["content"] for m in reversed(req.messages) if _OPENING.search(m["content"]))
        i = int(_OPENING.search(opening).group(1))  # type: ignore[union-attr]
        episode = self.episodes[0]
        q = episode.question(episode.events[i - 1].question or "")
        if q.answer_type == "refuse" or i % 2 == 0:
            return json.dumps(reply)
        return call("submit_answer", answer={1: "something else entirely", 3: "I don't know",
                                             5: "7 or 9"}.get(i % 6, "somewhere else"))


def judge_run(episode: Episode, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *extra: str) -> tuple[Any, list]:
    env, _ = served(episode, tmp_path, native=False)
    agent = Guesser([episode])
    prompts: list[str] = []

    def respond(body: dict[str, Any]) -> Any:
        text = str(body["messages"][0].get("content"))
        if "You grade one answer" in text:
            prompts.append(text)
            return json.dumps({"correct": True, "why": "same meaning"})
        if not any(_OPENING.search(str(m.get("content"))) for m in body["messages"]):
            return "no calls"
        return agent(ChatRequest(role="agent", messages=tuple(
            {"role": m["role"], "content": m["content"]} for m in body["messages"])))

    with FakeEndpoint(responder=respond, served_models=("fake-model", "judge-model")) as ep:
        monkeypatch.setenv("OPENAI_BASE_URL", ep.base_url)
        result = cli("--env", str(env), "--out", str(tmp_path / "r"), "--no-cache", *extra)
    return result, prompts


def test_the_judge_sees_only_committed_rule_failures(episode: Episode, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    result, prompts = judge_run(episode, tmp_path, monkeypatch, "--judge-model", "judge-model")
    assert result.exit_code == 0, result.output
    res = json.loads((tmp_path / "r" / "results.json").read_text())
    sent = {qid for qid, a in res["answers"].items() if a["judge"] is not None}
    for qid, a in res["answers"].items():
        if a["correct"] or a["reply"] is None or "refused" in a["reason"] or "one answer expected" in a["reason"]:
            assert qid not in sent, (qid, a)
    assert sent and len(prompts) == len(sent) == res["judge"]["sent"]
    assert res["judge"]["model"] == "judge-model" and res["judge"]["overturned"] == len(sent)
    # the rule score is the headline and untouched; the judged one counts the overturned answers right
    rule_right = sum(a["correct"] for a in res["answers"].values())
    assert res["score"]["accuracy"] == pytest.approx(rule_right / len(episode.questions))
    assert res["score_judged"]["accuracy"] == pytest.approx((rule_right + len(sent)) / len(episode.questions))
    assert "composite with the judge" in " ".join(result.output.split())


def test_no_judge_without_the_flag(episode: Episode, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result, prompts = judge_run(episode, tmp_path, monkeypatch)
    assert result.exit_code == 0, result.output
    res = json.loads((tmp_path / "r" / "results.json").read_text())
    assert prompts == [] and res["judge"] is None and res["score_judged"] is None
    assert all(a["judge"] is None for a in res["answers"].values())


def test_the_judge_is_never_the_model_under_test(episode: Episode, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    result, prompts = judge_run(episode, tmp_path, monkeypatch, "--judge-model", "fake-model")
    assert result.exit_code == 2 and "model under test" in result.output and prompts == []
    assert not (tmp_path / "r").exists()  # refused after the lock, yet nothing left behind: no lock, no usage
    result, _ = judge_run(episode, tmp_path, monkeypatch, "--set", "budget.judge=true")
    assert result.exit_code == 2 and "model under test" in result.output


def test_a_judge_endpoint_failure_leaves_the_episode_to_a_rerun(episode: Episode, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    # Before: exit 0 with the judged composite null for good (a re-run had nothing left to do).
    env, _ = served(episode, tmp_path, native=False)
    agent = Guesser([episode])

    def respond(body: dict[str, Any]) -> Any:
        if "You grade one answer" in str(body["messages"][0].get("content")):
            return json.dumps({"correct": True, "why": "same meaning"})
        if not any(_OPENING.search(str(m.get("content"))) for m in body["messages"]):
            return "no calls"
        return agent(ChatRequest(role="agent", messages=tuple(
            {"role": m["role"], "content": m["content"]} for m in body["messages"])))

    out = tmp_path / "r"
    args = ("--env", str(env), "--out", str(out), "--no-cache", "--judge-model", "judge-model",
            "--set", "llm.default.max_retries=1")
    with FakeEndpoint(responder=respond, served_models=("fake-model", "judge-model"),
                      force_faults={"structured": "http_503"}) as ep:
        monkeypatch.setenv("OPENAI_BASE_URL", ep.base_url)
        failed = cli(*args)
        assert failed.exit_code == 1, failed.output
        assert not (out / "results.json").exists()
        agent_calls = ep.stats()["calls"]
        ep.force_faults = {}
        again = cli(*args)
        assert again.exit_code == 0, again.output
        rerun_calls = ep.stats()["calls"] - agent_calls
    res = json.loads((out / "results.json").read_text())
    assert res["judge"]["errors"] == 0 and res["judge"]["sent"] > 0 and res["score_judged"] is not None
    assert rerun_calls == res["judge"]["sent"]  # the judge calls, and nothing of the played episode again


def test_an_episode_finished_over_two_invocations_records_the_usage_of_both(episode: Episode, tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    # Before: results.json counted only the invocation that finished the episode.
    env, respond = served(episode, tmp_path, native=False)
    out = tmp_path / "r"
    args = ("--env", str(env), "--out", str(out), "--no-cache", "--set", "llm.default.max_retries=0")
    with FakeEndpoint(responder=respond) as ep:
        monkeypatch.setenv("OPENAI_BASE_URL", ep.base_url)
        served_ok = 0

        def failing_after_ten(body: dict[str, Any]) -> Any:
            nonlocal served_ok
            served_ok += 1
            if served_ok == 10:
                ep.force_faults = {"*": "http_503"}  # from the next request on
            return respond(body)

        ep.responder = failing_after_ten
        first = cli(*args)
        assert first.exit_code == 1 and not (out / "results.json").exists(), first.output
        first_calls = json.loads((out / "usage.json").read_text())["last_invocation"]["total"]["calls"]
        ep.force_faults, ep.responder = {}, respond
        second = cli(*args)
        assert second.exit_code == 0, second.output
    res = json.loads((out / "results.json").read_text())
    usage = json.loads((out / "usage.json").read_text())
    # The first invocation's calls count, the one that failed included; not the run's tool-protocol probe,
    # made once per run outside the episode.
    assert res["usage"]["total"]["calls"] == first_calls - 1 + usage["last_invocation"]["total"]["calls"]
    assert usage["cumulative"]["total"]["calls"] == first_calls + usage["last_invocation"]["total"]["calls"]


async def test_a_plugin_tool_agent_keeps_nothing_of_its_own_between_events() -> None:
    """Found by probing: a plug-in that kept every document in a list on itself answered with no write at all,
    past the budget and the context cut. Each event after the first is played by a fresh build."""
    from amemgym.families.budget.model import Event
    from amemgym.families.budget.tool_agents import PluginToolAgent

    class Hoarder:
        def __init__(self) -> None:
            self.seen: list[str] = []

        async def act(self, messages: list[dict[str, str]], *, event: Any) -> str:
            self.seen.append(event.text)
            return json.dumps({"tool": "done", "args": {"seen": len(self.seen)}})

    agent = PluginToolAgent(Hoarder(), "hoarder", rebuild=Hoarder)
    replies = []
    for index in (0, 0, 1, 2):
        ev = Event(index=index, session=0, kind="documents", text=f"doc {index}")
        replies.append(json.loads(await agent.act([], event=ev))["args"]["seen"])
    assert replies == [1, 2, 1, 1]  # two steps of one event share the agent; a new event starts afresh
