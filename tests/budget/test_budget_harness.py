"""The harness with a scripted agent: protocol, budget enforcement, context cuts, skips, resume, CLI."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from amemgym.cli import app
from amemgym.families.budget.generate import build_episode
from amemgym.families.budget.io import save_episode
from amemgym.families.budget.model import Episode
from amemgym.families.budget.stream import shown_kind
from amemgym.families.budget.units import run_episode
from amemgym.llm.backends import PermanentError
from amemgym.llm.client import LLMClient
from amemgym.llm.types import ChatRequest
from amemgym.testing.budget import OPENING as _OPENING
from amemgym.testing.budget import BudgetScript, served_episode
from amemgym.testing.budget import tool_call as call
from amemgym.testing.fake_endpoint import FakeEndpoint
from amemgym.testing.scripted_model import ScriptedBackend


def run(episode: Episode, agent: BudgetScript, tmp_path: Path, name: str = "agent") -> dict:
    env = tmp_path / "data.json"
    save_episode(episode, env)
    llm = LLMClient(backends={"agent": ScriptedBackend(agent)})
    return asyncio.run(run_episode(env, "native", tmp_path / name, llm))


@pytest.fixture(scope="module")
def episode() -> Episode:
    return build_episode("lite", "films", 0)


def test_a_scripted_agent_runs_end_to_end(episode: Episode, tmp_path: Path) -> None:
    res = run(episode, BudgetScript([episode]), tmp_path)
    assert res["score"]["accuracy"] == 1.0
    docs = sum(shown_kind(e.kind) == "documents" for e in episode.events)  # silent contradictions look like documents
    assert res["score"]["writes_used"] == docs
    assert (tmp_path / "agent" / "results.json").exists() and (tmp_path / "agent" / "trace.jsonl").exists()
    assert len(res["writes_over_time"]) == len(episode.events)


def test_a_silent_contradiction_is_shown_as_a_plain_document(episode: Episode, tmp_path: Path) -> None:
    # Before: its opening said "(contradiction)" and its document was headed "(field report)".
    agent = BudgetScript([episode])
    run(episode, agent, tmp_path)
    silent = {ev.index + 1 for ev in episode.events if ev.kind == "contradiction"}
    rereports = {ev.index + 1 for ev in episode.events
                 if ev.kind == "documents" and len({f.entity for f in ev.facts}) == 1}
    assert silent and rereports
    shown = {}
    for req in agent.requests:
        opening = next(m["content"] for m in req.messages if _OPENING.search(m["content"]))
        index, kind = _OPENING.search(opening).groups()  # type: ignore[union-attr]
        shown[int(index)] = (kind, opening)
    for index in silent:
        kind, opening = shown[index]
        assert kind == "documents" and "contradiction" not in opening.lower() and "field report" not in opening
    # A plain re-report that changes nothing opens exactly the same way.
    first_lines = {re.search(r"\(documents\):\n\n(.*?)## ", shown[i][1], re.S).group(1)  # type: ignore[union-attr]
                   for i in silent | rereports}
    assert len(first_lines) == 1


def test_the_context_is_cut_after_every_event(episode: Episode, tmp_path: Path) -> None:
    agent = BudgetScript([episode])
    run(episode, agent, tmp_path)
    for req in agent.requests:
        openings = [m for m in req.messages if _OPENING.search(m["content"])]
        assert len(openings) == 1
        assert req.messages[0]["role"] == "system"


def test_the_budget_is_enforced_whatever_the_agent_does(episode: Episode, tmp_path: Path) -> None:
    res = run(episode, BudgetScript([episode], writes_per_doc=10), tmp_path)
    assert res["score"]["writes_used"] == episode.tier.writes
    trace = [json.loads(line) for line in (tmp_path / "agent" / "trace.jsonl").read_text().splitlines()]
    assert any(t.get("result", "").startswith("write budget exhausted") for t in trace)


def test_a_prose_reply_gets_protocol_feedback_and_the_agent_recovers(episode: Episode, tmp_path: Path) -> None:
    agent = BudgetScript([episode], prose_first=True)
    res = run(episode, agent, tmp_path)
    assert res["score"]["accuracy"] == 1.0
    assert any("protocol error" in m["content"] for r in agent.requests for m in r.messages if m["role"] == "user")


def test_an_unanswered_question_counts_as_wrong(episode: Episode, tmp_path: Path) -> None:
    res = run(episode, BudgetScript([episode], answer=False), tmp_path)
    assert res["score"]["accuracy"] == 0.0
    assert res["score"]["skipped"] == len(episode.questions)


def test_a_finished_run_resumes_without_calls(episode: Episode, tmp_path: Path) -> None:
    first = run(episode, BudgetScript([episode]), tmp_path)

    def broken(req: ChatRequest) -> Exception:
        return PermanentError("must not be called")

    env = tmp_path / "data.json"
    llm = LLMClient(backends={"agent": ScriptedBackend(broken)})  # type: ignore[arg-type]
    again = asyncio.run(run_episode(env, "native", tmp_path / "agent", llm))
    assert again["score"] == first["score"] and llm.ledger.totals().calls == 0
    # The record counts the episode's calls over both invocations: all of them made by the first.
    assert again["usage"]["total"]["calls"] == first["usage"]["total"]["calls"] > 0


def _served_episode(episode: Episode, tmp_path: Path) -> tuple[Path, Any]:
    """The episode saved as a data file, and a fake-endpoint responder playing a scripted agent on it."""
    return served_episode(episode, tmp_path)


def test_cli_run_detects_the_family(episode: Episode, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env, respond = _served_episode(episode, tmp_path)
    with FakeEndpoint(responder=respond) as ep:
        monkeypatch.setenv("OPENAI_BASE_URL", ep.base_url)
        result = CliRunner().invoke(app, ["run", "--env", str(env), "--out", str(tmp_path / "run"),
                                          "--set", "llm.cache=false"])
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "run" / "results.json").read_text())["score"]["composite"] is not None


def test_the_long_context_reference_keeps_the_stream_and_has_no_budget(episode: Episode, tmp_path: Path) -> None:
    env = tmp_path / "data.json"
    save_episode(episode, env)
    agent = BudgetScript([episode], writes_per_doc=20)
    llm = LLMClient(backends={"agent": ScriptedBackend(agent)})
    res = asyncio.run(run_episode(env, "long-context", tmp_path / "lc", llm))
    assert res["score"]["writes_used"] > episode.tier.writes
    last = agent.requests[-1]
    assert sum(1 for m in last.messages if _OPENING.search(m["content"])) == len(episode.events)


class Searcher(BudgetScript):
    """Searches its notes once before answering each question."""

    def __call__(self, req: ChatRequest) -> str:
        last = req.messages[-1]["content"]
        if _OPENING.search(last) and "(question)" in last:
            return call("search", query="revenue")
        return super().__call__(req)


def test_search_uses_the_embedder_in_both_stores(episode: Episode, tmp_path: Path) -> None:
    from amemgym.testing.scripted_model import HashEmbedder

    env = tmp_path / "data.json"
    save_episode(episode, env)
    for agent_name in ("native", "vector"):
        embedder = HashEmbedder()
        calls: list[int] = []
        original = embedder.embed

        async def counted(texts: list[str], _orig=original, _calls=calls) -> object:
            _calls.append(len(texts))
            return await _orig(texts)

        embedder.embed = counted  # type: ignore[method-assign]
        llm = LLMClient(backends={"agent": ScriptedBackend(Searcher([episode]))}, embedder=embedder)
        res = asyncio.run(run_episode(env, agent_name, tmp_path / agent_name, llm))
        assert res["store"] == ("vector" if agent_name == "vector" else "notes")
        assert calls and res["search_embedder_problem"] is None
        assert res["score"]["accuracy"] == 1.0


def test_an_interrupted_run_resumes_from_its_checkpoint(episode: Episode, tmp_path: Path) -> None:
    env = tmp_path / "data.json"
    save_episode(episode, env)
    agent = BudgetScript([episode])
    budget = {"calls": 0}

    def flaky(req: ChatRequest) -> str:
        budget["calls"] += 1
        if budget["calls"] == 15:
            raise KeyboardInterrupt  # a kill in the middle of the stream
        return agent(req)

    with pytest.raises(KeyboardInterrupt):
        asyncio.run(run_episode(env, "native", tmp_path / "r", LLMClient(backends={"agent": ScriptedBackend(flaky)})))
    done_before = json.loads((tmp_path / "r" / "checkpoint.json").read_text())["state"]["next_event"]
    assert 0 < done_before < len(episode.events)
    res = asyncio.run(run_episode(env, "native", tmp_path / "r", LLMClient(backends={"agent": ScriptedBackend(agent)})))
    assert res["score"]["accuracy"] == 1.0
    trace = [json.loads(line) for line in (tmp_path / "r" / "trace.jsonl").read_text().splitlines()]
    steps = [(t["event"], t["step"]) for t in trace]
    assert steps == sorted(set(steps)) and len(res["writes_over_time"]) == len(episode.events)


def test_unsupported_run_flags_exit_2(episode: Episode, tmp_path: Path) -> None:
    env = tmp_path / "data.json"
    save_episode(episode, env)
    result = CliRunner().invoke(app, ["run", "--env", str(env), "--out", str(tmp_path / "x"), "--resimulate-leaks"])
    assert result.exit_code == 2 and "--resimulate-leaks" in result.output
    result = CliRunner().invoke(app, ["run", "--env", str(env), "--out", str(tmp_path / "y"), "--agent", "nosuch"])
    assert result.exit_code == 2 and "unknown agent" in result.output


def test_the_report_shows_axes_kinds_budget_and_trace(episode: Episode, tmp_path: Path) -> None:
    run(episode, BudgetScript([episode]), tmp_path)
    result = CliRunner().invoke(app, ["report", str(tmp_path / "agent"), "--out", str(tmp_path / "r.html")])
    assert result.exit_code == 0, result.output
    page = (tmp_path / "r.html").read_text()
    for part in ("composite", "Accuracy per question kind", "<polyline", "Tool calls", "submit_answer"):
        assert part in page


def test_cli_run_pins_the_served_model_honours_no_cache_and_records_the_model(
        episode: Episode, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env, respond = _served_episode(episode, tmp_path)
    out = tmp_path / "run"
    with FakeEndpoint(responder=respond, model="model-a") as ep:
        monkeypatch.setenv("OPENAI_BASE_URL", ep.base_url)
        first = CliRunner().invoke(app, ["run", "--env", str(env), "--out", str(out)])
        assert first.exit_code == 0, first.output
        assert json.loads((out / "results.json").read_text())["agent_model"] == "model-a"
        # The same episode again with --no-cache reaches the model instead of the cache.
        again = CliRunner().invoke(app, ["run", "--env", str(env), "--out", str(tmp_path / "run2"), "--no-cache"])
        assert again.exit_code == 0, again.output
        assert json.loads((tmp_path / "run2" / "results.json").read_text())["usage"]["total"]["calls"] > 0
        # Another model behind the same URL may not finish the first directory silently.
        ep.model = "model-b"
        swapped = CliRunner().invoke(app, ["run", "--env", str(env), "--out", str(out)])
        assert swapped.exit_code == 2
        assert "model-a" in swapped.output and "model-b" in swapped.output
        allowed = CliRunner().invoke(app, ["run", "--env", str(env), "--out", str(out), "--allow-model-change"])
        assert allowed.exit_code == 0, allowed.output
    # The episode had finished under model-a, so it is not re-run and keeps its model; the pin records the change.
    results = json.loads((out / "results.json").read_text())
    assert results["agent_model"] == "model-a" and results["model_changes"] == []
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["models"]["agent"]["served"] == "model-b"
    assert [{k: c[k] for k in ("role", "from", "to")} for c in manifest["model_changes"]] == [
        {"role": "agent", "from": "model-a", "to": "model-b"}]
