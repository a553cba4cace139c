"""Memory agents on budget-family episodes: the harness meters their writes, cuts their context, resumes them."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from amemgym.cli import app
from amemgym.errors import AgentError, ConfigError, RunError
from amemgym.families import get_family
from amemgym.families.budget.generate import build_episode
from amemgym.families.budget.io import save_episode
from amemgym.families.budget.memory_agents import shape_problem
from amemgym.families.budget.model import Episode, Question
from amemgym.families.budget.units import protocol_label as protocol_of
from amemgym.families.budget.units import run_episode
from amemgym.families.budget.world import render_date
from amemgym.llm.types import ChatRequest
from amemgym.testing.fake_endpoint import FakeEndpoint
from amemgym.testing.scripted_model import HashEmbedder, scripted_client

QUESTION_OPENING = "A question about the"


@pytest.fixture(scope="module")
def episode() -> Episode:
    return build_episode("lite", "films", 0)


@pytest.fixture
def env(episode: Episode, tmp_path: Path) -> Path:
    path = tmp_path / "data.json"
    save_episode(episode, path)
    return path


def _shown(q: Question) -> str:
    """The gold as a document writes it (dates in words)."""
    return render_date(str(q.gold)) if q.answer_type == "date" else str(q.gold)


class Reader:
    """A model that only reads its context: a question is answered with its gold value when that value is
    written in one of the request's other messages, else "I don't know". Event messages get a short reply."""

    def __init__(self, episode: Episode) -> None:
        self.episode = episode
        self.answer_requests: list[list[dict[str, str]]] = []

    def reply(self, messages: list[dict[str, str]]) -> str:
        last = messages[-1]["content"]
        if not last.startswith(QUESTION_OPENING):
            return "Noted."
        self.answer_requests.append(messages)
        q = next(q for q in self.episode.questions if q.text in last)
        context = "\n".join(m["content"] for m in messages[:-1])
        return str(q.gold) if q.gold is not None and _shown(q) in context else "I don't know"

    def __call__(self, req: ChatRequest) -> str:
        return self.reply([{"role": m["role"], "content": m["content"]} for m in req.messages])


def play(env: Path, agent: str, out: Path, script: Any, **kwargs: Any) -> dict[str, Any]:
    return asyncio.run(run_episode(env, agent, out, scripted_client(script, cache=None, **kwargs)))


def test_rag_runs_a_lite_episode_through_amemgym_run(episode: Episode, env: Path, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    reader = Reader(episode)
    out = tmp_path / "run"
    with FakeEndpoint(responder=lambda body: reader.reply(body["messages"]), model="model-a") as ep:
        monkeypatch.setenv("OPENAI_BASE_URL", ep.base_url)
        result = CliRunner().invoke(app, ["run", "--env", str(env), "--agent", "rag", "--out", str(out),
                                          "--set", f"llm.roles.embedder.base_url={ep.base_url}"])
    assert result.exit_code == 0, result.output
    res = json.loads((out / "results.json").read_text())
    assert f"meter refused {res['refused_writes']} memory write(s)" in " ".join(result.output.split())
    assert res["agent"] == "rag" and res["metered"] is True and res["interface"] == "memory-agent"
    assert res["agent_model"] == "model-a"
    s = res["score"]
    assert s["composite"] is not None and s["writes_used"] == episode.tier.writes
    # rag stores every message: two per non-question event until the budget is spent, the rest refused.
    non_questions = sum(e.kind != "question" for e in episode.events)
    assert res["refused_by_reason"]["budget"] == 2 * non_questions - episode.tier.writes
    # Document batches are far longer than a note; each stored one was cut to the cap.
    assert res["truncated_writes"] >= 1
    assert res["writes_over_time"] == sorted(res["writes_over_time"])
    assert len(res["writes_over_time"]) == len(episode.events)
    assert len(reader.answer_requests) == len(episode.questions)
    assert (out / "trace.jsonl").exists() and (out / "manifest.json").exists()


def test_answers_come_from_memory_only(episode: Episode, env: Path, tmp_path: Path) -> None:
    # q001 asks for a fact of the first batch right after it. Its document lies far past the first note-cap's
    # worth of that batch, so rag never stores it; without the cut it would still be in rag's window
    # (2 exchanges fit in rag-2-4) and the reader could answer from the conversation.
    q = episode.question("q001")
    entity = q.spec.entities[0]
    batch = episode.events[0].text
    assert batch.index(f"## {entity}") > episode.note_chars
    sentence = next(line for line in batch.split(". ") if entity in line and _shown(q) in line)
    reader = Reader(episode)
    res = play(env, "rag", tmp_path / "run", reader)
    first = reader.answer_requests[0]
    assert q.text in first[-1]["content"]
    assert all(sentence not in m["content"] for m in first)
    assert all(ev.text not in m["content"] for ev in episode.events if ev.kind == "documents"
               for req in reader.answer_requests for m in req)
    assert res["answers"]["q001"]["correct"] is False and "know" in res["answers"]["q001"]["reply"]


def test_the_budget_holds_against_an_agent_that_adds_ten_times_too_much(env: Path, episode: Episode,
                                                                        tmp_path: Path) -> None:
    res = play(env, "budget_plugins:greedy", tmp_path / "g", Reader(episode))
    budget = episode.tier.writes
    non_questions = sum(e.kind != "question" for e in episode.events)
    assert res["score"]["writes_used"] == budget
    assert max(res["writes_over_time"]) == budget
    # Every attempt past the budget is refused and counted: the adds past the first 15, and the update on each
    # re-report (a silent contradiction or a plain re-report, charged alike); updates during correction notices
    # stay free.
    notices = sum(e.kind == "correction" for e in episode.events)
    rereports = len(_rereports(episode))
    assert res["refused_by_reason"]["budget"] == 150 * (non_questions - notices - rereports) - budget + rereports
    assert sum(e["op"] == "update" and e["charged"] == 0 for e in res["ledger"]) == notices
    assert res["refused_writes"] == res["refused_by_reason"]["budget"]
    checkpoint = json.loads((tmp_path / "g" / "checkpoint.json").read_text())["state"]
    assert len(checkpoint["snapshot"]["store"]["metered_memories"]["records"]) == budget


def test_correction_edits_are_free_and_other_changes_cost_one(env: Path, episode: Episode, tmp_path: Path) -> None:
    res = play(env, "budget_plugins:store_agent", tmp_path / "c", Reader(episode))
    kinds = {e.index: e.kind for e in episode.events}
    updates = [e for e in res["ledger"] if e["op"] == "update"]
    assert {kinds[e["event"]] for e in updates} == {"correction", "contradiction", "documents"}
    assert {e["event"] for e in updates if kinds[e["event"]] != "correction"} == _rereports(episode)
    assert all(e["charged"] == (0 if kinds[e["event"]] == "correction" else 1) for e in updates)
    adds = [e for e in res["ledger"] if e["op"] == "add"]
    assert res["score"]["writes_used"] == len(adds) + sum(e["charged"] for e in updates)
    assert sum(e["charged"] == 0 for e in updates) == sum(k == "correction" for k in kinds.values())


def _rereports(episode: Episode) -> set[int]:
    """Events that document an entity a second time (silent contradictions and plain re-reports)."""
    seen: set[str] = set()
    out = set()
    for ev in episode.events:
        names = {f.entity for f in ev.facts}
        if names & seen:
            out.add(ev.index)
        seen |= names
    return out


def _awe_script(episode: Episode) -> Any:
    """AWE's memory model: one fact per batch; the fact of a correction or contradiction updates memory 0."""
    reader = Reader(episode)

    def script(req: ChatRequest) -> str:
        if req.role != "memory":
            return reader(req)
        text = req.messages[-1]["content"]
        if req.tag == "memory.extract":
            changed = "Correction notice" in text or "1 film document." in text
            return json.dumps({"facts": [f"{'changed' if changed else 'fact'} {len(text)}"]})
        if "- changed" in text:
            return json.dumps({"actions": [{"op": "update", "id": 0, "text": f"corrected {len(text)}"}]})
        return json.dumps({"actions": [{"op": "add", "id": None, "text": f"new {len(text)}"}]})

    return script


def test_awe_updates_during_a_correction_notice_are_free(env: Path, episode: Episode, tmp_path: Path) -> None:
    res = play(env, "awe", tmp_path / "awe", _awe_script(episode))
    kinds = {e.index: e.kind for e in episode.events}
    updates = [e for e in res["ledger"] if e["op"] == "update"]
    assert updates and all(e["charged"] == (0 if kinds[e["event"]] == "correction" else 1) for e in updates)
    assert any(e["charged"] == 0 for e in updates) and any(e["charged"] == 1 for e in updates)
    assert res["score"]["writes_used"] == sum(e["charged"] for e in res["ledger"]) <= episode.tier.writes


def test_awi_rewrites_are_metered_and_those_past_the_budget_rolled_back(env: Path, episode: Episode,
                                                                         tmp_path: Path) -> None:
    calls = {"n": 0}
    reader = Reader(episode)

    def script(req: ChatRequest) -> str:
        if req.role != "memory":
            return reader(req)
        calls["n"] += 1
        # Four new keys per write and a rewrite of the first key: far more than 15 writes over the episode.
        updates = {f"k{calls['n']}-{i}": "x" * 2000 for i in range(4)}
        return json.dumps({"updates": {"k1-0": f"rewritten {calls['n']}", **updates}})

    res = play(env, "awi", tmp_path / "awi", script)
    assert res["score"]["writes_used"] == episode.tier.writes
    assert res["refused_by_reason"]["budget"] > 0 and res["truncated_writes"] > 0
    notes = json.loads((tmp_path / "awi" / "checkpoint.json").read_text())["state"]["snapshot"]["memory"]["notes"]
    new_keys = sum(e["op"] == "add" for e in res["ledger"])
    assert len(notes) == new_keys < 5 * calls["n"]
    assert all(len(k) + len(v) <= episode.note_chars for k, v in notes.items())


def test_a_killed_run_resumes_to_the_same_result(env: Path, episode: Episode, tmp_path: Path) -> None:
    whole = play(env, "awe", tmp_path / "whole", _awe_script(episode))
    script = _awe_script(episode)
    seen = {"n": 0}

    def killed(req: ChatRequest) -> str:
        seen["n"] += 1
        if seen["n"] == 9:
            raise KeyboardInterrupt
        return script(req)

    with pytest.raises(KeyboardInterrupt):
        play(env, "awe", tmp_path / "cut", killed)
    done = json.loads((tmp_path / "cut" / "checkpoint.json").read_text())["state"]["next_event"]
    assert 0 < done < len(episode.events)
    again = play(env, "awe", tmp_path / "cut", _awe_script(episode))
    for key in ("score", "answers", "ledger", "writes_over_time", "refused_by_reason", "truncated_writes"):
        assert again[key] == whole[key], key
    trace = [json.loads(line) for line in (tmp_path / "cut" / "trace.jsonl").read_text().splitlines()]
    assert [t["event"] for t in trace] == list(range(len(episode.events)))


def test_writes_while_answering_are_refused_and_dropped(env: Path, episode: Episode, tmp_path: Path) -> None:
    res = play(env, "budget_plugins:answer_writer", tmp_path / "a", Reader(episode))
    assert res["refused_by_reason"]["question"] == len(episode.questions)
    assert all(e["event"] not in {ev.index for ev in episode.events if ev.kind == "question"} for e in res["ledger"])


def test_the_harness_embeds_what_is_stored(env: Path, episode: Episode, tmp_path: Path) -> None:
    play(env, "budget_plugins:store_agent", tmp_path / "e", Reader(episode))
    state = json.loads((tmp_path / "e" / "checkpoint.json").read_text())["state"]
    store = state["snapshot"]["store"]["metered_memories"]
    import base64

    vectors = np.frombuffer(base64.b64decode(store["vectors"]), dtype="<f4").reshape(len(store["records"]), -1)
    expected = HashEmbedder().embed_sync([r["text"] for r in store["records"]])
    assert np.allclose(vectors, expected)  # the agent passed a constant vector; the harness replaced it


@pytest.mark.parametrize(("plugin", "error", "words"), [
    ("budget_plugins:around_the_meter", AgentError, "around the harness's meter"),
    ("budget_plugins:self_loader", AgentError, "restored by the harness"),
    ("budget_plugins:hoarder", AgentError, "outside its metered memory"),
    ("budget_plugins:buggy", AgentError, "reply raised ValueError: off by one"),
])
def test_agents_that_dodge_the_meter_are_stopped(env: Path, episode: Episode, tmp_path: Path, plugin: str,
                                                 error: type[Exception], words: str) -> None:
    with pytest.raises(error, match=words):
        play(env, plugin, tmp_path / "x", Reader(episode))


@pytest.mark.parametrize(("agent", "words"), [
    ("budget_plugins:list_keeper", "ctx.store_factory"),
    ("mem0", "cannot run a budget-family episode"),
    ("awi-oracle", "ablation"),
])
def test_agents_whose_memory_cannot_be_metered_are_refused(env: Path, tmp_path: Path, agent: str,
                                                           words: str) -> None:
    out = tmp_path / "r"
    result = CliRunner().invoke(app, ["run", "--env", str(env), "--agent", agent, "--out", str(out)])
    assert result.exit_code == 2 and words in result.output, result.output
    assert not out.exists()
    with pytest.raises(ConfigError, match=words):
        play(env, agent, tmp_path / "r2", lambda req: "ok")


def test_metered_memory_agents_rank_with_tool_agents_and_never_with_unmetered_runs(
        env: Path, episode: Episode, tmp_path: Path) -> None:
    play(env, "budget_plugins:store_agent", tmp_path / "runs" / "plug", Reader(episode))
    play(env, "rag", tmp_path / "runs" / "rag", Reader(episode))
    res = json.loads((tmp_path / "runs" / "rag" / "results.json").read_text())
    assert protocol_of(res) == protocol_of({"policy": "budget", "results_version": 1})  # a tool-agent run's
    unmetered = {**res, "metered": False, "agent": "hand-edited"}
    (tmp_path / "runs" / "odd").mkdir()
    (tmp_path / "runs" / "odd" / "results.json").write_text(json.dumps(unmetered))
    board = get_family("budget").leaderboard([tmp_path / "runs"])
    col = {c: i for i, c in enumerate(board.columns)}
    groups = {row[col["agent"]]: (row[col["group"]], row[col["protocol"]]) for row in board.rows}
    assert groups["rag"][0] == groups["budget_plugins:store_agent"][0] != groups["hand-edited"][0]
    assert groups["hand-edited"][1].endswith("/unmetered")
    result = CliRunner().invoke(app, ["report", str(tmp_path / "runs" / "rag"), "--out", str(tmp_path / "r.html")])
    assert result.exit_code == 0, result.output
    page = (tmp_path / "r.html").read_text()
    assert "answer" in page and "writes charged" in page



def test_outside_the_metered_memory_only_counters_may_change() -> None:
    fresh = {"buffer": [], "counters": {"writes": 0}, "policy": "keep facts", "pad": "." * 50}
    assert shape_problem(fresh, {**fresh, "counters": {"writes": 12}}, "s") is None
    assert shape_problem(fresh, {**fresh, "buffer": ["a message"]}, "s") == "s.buffer changed length"
    assert shape_problem(fresh, {**fresh, "pad": "Wild Lantern: 1" + "." * 35}, "s") == "s.pad changed"
    huge = {**fresh, "counters": {"writes": 10**40}}
    assert shape_problem(fresh, huge, "s") == "s.counters.writes is no longer a counter"
    assert shape_problem(fresh, {**fresh, "extra": 1}, "s") == "s has other keys"


@pytest.mark.parametrize("agent", ["rag", "budget_plugins:store_agent"])
def test_the_judge_is_refused_for_memory_agents_before_anything_is_written(env: Path, tmp_path: Path,
                                                                            agent: str) -> None:
    # A memory agent's answers never pass through the harness's judge: asking for one must not be ignored.
    out = tmp_path / "j"
    result = CliRunner().invoke(app, ["run", "--env", str(env), "--agent", agent, "--out", str(out),
                                      "--set", "budget.judge=true"])
    assert result.exit_code == 2 and "judge is available for tool agents only" in result.output, result.output
    assert not out.exists()


def test_the_memory_role_model_is_pinned_like_the_agent_model(tmp_path: Path) -> None:
    # A memory agent's memory comes from the memory role: resuming on another memory model must not mix them.
    from amemgym.engine.models import pin_models

    def served(agent: str, memory: str) -> dict[str, dict[str, str]]:
        return {"agent": {"served": agent}, "memory": {"served": memory}}

    models, changes = pin_models(tmp_path, {}, served("agent-a", "mem-1"), allow_change=False)
    assert changes == [] and models == {"agent": {"served": "agent-a"}, "memory": {"served": "mem-1"}}
    assert pin_models(tmp_path, models, served("agent-a", "mem-1"), allow_change=False)[1] == []
    with pytest.raises(RunError, match="memory model 'mem-1', now 'mem-2'"):
        pin_models(tmp_path, models, served("agent-a", "mem-2"), allow_change=False)
    moved, changes = pin_models(tmp_path, models, served("agent-a", "mem-2"), allow_change=True)
    assert [{k: c[k] for k in ("role", "from", "to")} for c in changes] == [
        {"role": "memory", "from": "mem-1", "to": "mem-2"}]
    assert moved["memory"] == {"served": "mem-2"}
    with pytest.raises(RunError, match="agent model 'agent-a', now 'agent-b'"):
        pin_models(tmp_path, moved, served("agent-b", "mem-2"), allow_change=False)