"""The budget family's training surface: the Gym env (same numbers as `amemgym run`) and `amemgym export`."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from amemgym.cli import app
from amemgym.errors import ConfigError, RunError
from amemgym.families import (
    ExportResult,
    check_family,
    get_family,
    make_env,
    register_family,
    training_method,
    unregister_family,
)
from amemgym.families.budget.export import JSONL_KEYS, export_budget_run
from amemgym.families.budget.generate import build_episode
from amemgym.families.budget.gym_env import BudgetEnv
from amemgym.families.budget.harness import system_prompt
from amemgym.families.budget.io import save_episode
from amemgym.families.budget.model import Episode
from amemgym.families.budget.units import run_episode
from amemgym.llm.types import ChatRequest
from amemgym.testing.budget import OPENING as _OPENING
from amemgym.testing.budget import tool_call as call
from amemgym.testing.scripted_model import scripted_client


class Policy:
    """A scripted policy that reads only the latest observation, so it acts the same in the env and in a run.

    Per document event it writes seven notes (more than the budget holds over the episode, so the store
    refuses some), sends prose instead of the second on every third event (a protocol error), searches before
    each answer, and answers every other question with its gold answer and the rest with a wrong number.
    """

    def __init__(self, episode: Episode) -> None:
        self.episode = episode
        self.event: Any = None
        self.step = 0
        self.seen: list[str] = []

    def __call__(self, observation: str) -> str:
        self.seen.append(observation)
        m = _OPENING.search(observation.split("\n\n", 2)[1] if observation.startswith("Memory:") else "")
        if m:
            self.event, self.step = self.episode.events[int(m.group(1)) - 1], 0
        else:
            self.step += 1
        ev = self.event
        if ev.kind == "question":
            q = self.episode.question(ev.question)
            if self.step == 0:
                return call("search", query=q.text)
            good = int(q.id[1:]) % 2 == 0
            return call("submit_answer", answer=str(q.gold) if good and q.gold is not None else "12345")
        if ev.kind == "documents" and self.step < 7:
            if self.step == 1 and ev.index % 3 == 0:
                return "I will remember this."
            return call("write", text=ev.text[self.step * 300:self.step * 300 + 300])
        return call("done")


@pytest.fixture(scope="module")
def episode() -> Episode:
    return build_episode("lite", "films", 0)


@pytest.fixture(scope="module")
def ran(episode: Episode, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any], Policy,
                                                                            list[ChatRequest]]:
    """The policy run through `amemgym run`'s code path: its run directory, results, and every request it got."""
    root = tmp_path_factory.mktemp("budget_run")
    env = root / "data.json"
    save_episode(episode, env)
    policy, requests = Policy(episode), []

    def respond(req: ChatRequest) -> str:
        requests.append(req)
        return policy(req.messages[-1]["content"])

    res = asyncio.run(run_episode(env, "native", root / "run", scripted_client(respond)))
    return root / "run", res, policy, requests


def play(env: BudgetEnv, policy: Policy, **reset: Any) -> tuple[list[float], dict[str, Any], int]:
    obs, info = env.reset(**reset)
    rewards, steps = [], 0
    while True:
        obs, reward, terminated, truncated, info = env.step(policy(obs))
        rewards.append(reward)
        steps += 1
        if terminated or truncated:
            return rewards, info, steps


def test_the_env_gives_the_same_verdicts_and_composite_as_run(episode: Episode, ran: tuple) -> None:
    run_dir, res, run_policy, _ = ran
    policy = Policy(episode)
    with BudgetEnv(run_dir.parent / "data.json", llm=scripted_client(lambda r: "unused")) as env:
        rewards, info, _ = play(env, policy)
    assert policy.seen == run_policy.seen  # every observation, in order, is what the run's agent was shown
    assert info["score"] == res["score"]
    verdicts = {q: v["correct"] for q, v in info["verdicts"].items()}
    assert verdicts == {q: a["correct"] for q, a in res["answers"].items()}
    correct = sum(a["correct"] for a in res["answers"].values())
    assert 0 < correct < len(episode.questions)  # the policy gets some right and some wrong
    assert sum(rewards) == correct and set(rewards) == {0.0, 1.0}
    assert res["score"]["writes_used"] == episode.tier.writes  # the budget ran out, in both
    assert info["writes_used"] == episode.tier.writes


@pytest.mark.parametrize("agent", ["vector", "long-context"])
def test_same_numbers_both_ways_for_the_other_agents_on_a_multi_session_tier(agent: str, tmp_path: Path) -> None:
    episode = build_episode("multi", "universities", 1)
    env_file = tmp_path / "data.json"
    save_episode(episode, env_file)
    run_policy = Policy(episode)
    res = asyncio.run(run_episode(env_file, agent, tmp_path / "run",
                                  scripted_client(lambda req: run_policy(req.messages[-1]["content"]))))
    policy = Policy(episode)
    with BudgetEnv(env_file, agent=agent, llm=scripted_client(lambda r: "unused")) as env:
        rewards, info, _ = play(env, policy)
    assert policy.seen == run_policy.seen and info["score"] == res["score"]
    assert sum(rewards) == sum(a["correct"] for a in res["answers"].values())


def test_rewards_come_with_the_verdict_of_the_answer_just_given(episode: Episode, tmp_path: Path) -> None:
    save_episode(episode, tmp_path / "data.json")
    policy = Policy(episode)
    with BudgetEnv(tmp_path / "data.json", llm=scripted_client(lambda r: "unused")) as env:
        obs, _ = env.reset()
        while True:
            action = policy(obs)
            obs, reward, terminated, _, info = env.step(action)
            if '"submit_answer"' in action:
                (outcome,) = info["outcomes"]
                assert outcome["reward"] == reward and outcome["answer"] == json.loads(action)["args"]["answer"]
                assert outcome["question"] == policy.event.question
            else:
                assert reward == 0.0 and info["outcomes"] == []
            if terminated:
                break


def test_an_invalid_action_gets_protocol_feedback_and_leaves_the_budget_alone(episode: Episode) -> None:
    with BudgetEnv(episode, llm=scripted_client(lambda r: "unused")) as env:
        obs, info = env.reset()
        assert info["event_kind"] == "documents" and info["writes_used"] == 0 and info["system"] == env.system
        obs, reward, terminated, truncated, info = env.step("Let me think about what to store.")
        assert obs.startswith("protocol error:") and reward == 0.0 and not (terminated or truncated)
        assert (info["writes_used"], info["notes"], info["event"], info["event_step"]) == (0, 0, 0, 1)
        obs, _, _, _, info = env.step(call("write", text="x" * 900))  # over the note cap: refunded
        assert "exceeds the cap" in obs and info["writes_used"] == 0
        obs, _, _, _, info = env.step(call("write", text="A note."))
        assert obs.startswith("result: stored note 1") and info["writes_used"] == 1 and info["notes"] == 1


def test_max_steps_truncates_and_the_episode_then_refuses_steps(episode: Episode) -> None:
    with BudgetEnv(episode, llm=scripted_client(lambda r: "unused"), max_steps=3) as env:
        env.reset()
        flags = [env.step(call("list"))[2:4] for _ in range(3)]
        assert flags == [(False, False), (False, False), (False, True)]
        with pytest.raises(RunError, match="call reset"):
            env.step(call("done"))
        env.reset(options={"max_steps": 1})
        assert env.step(call("done"))[3] is True
        with pytest.raises(ConfigError, match="max_steps"):
            env.reset(options={"max_steps": 0})


def test_reset_with_a_seed_is_deterministic_and_picks_the_episode() -> None:
    with BudgetEnv(tier="lite", domain="cities", llm=scripted_client(lambda r: "unused")) as env:
        first = env.reset(seed=5)[0]
        moves = [env.step(a)[0] for a in (call("write", text="n"), call("done"), call("list"))]
        again = env.reset(seed=5)[0]
        assert again == first and [env.step(a)[0] for a in (call("write", text="n"), call("done"),
                                                            call("list"))] == moves
        other, info = env.reset(seed=6)
        assert other != first and info["seed"] == 6
        assert env.reset()[0] == other  # no seed: the current episode again


def test_render_ansi_shows_where_the_episode_is(episode: Episode) -> None:
    with BudgetEnv(episode, llm=scripted_client(lambda r: "unused"), render_mode="ansi") as env:
        assert env.render() == "(no episode: call reset())\n"
        obs, _ = env.reset()
        text = env.render() or ""
        assert text.startswith(f"event 1/{len(episode.events)} (documents) | call 1 | step 0 | writes used 0, left "
                               f"{episode.tier.writes}") and obs in text
        env.step("nope")
        text = env.render() or ""
        assert "call 2 | step 1" in text and "last reward 0" in text
    assert BudgetEnv(episode).render() is None


def test_gymnasium_ids_and_the_family_make_the_env(episode: Episode, tmp_path: Path) -> None:
    gymnasium = pytest.importorskip("gymnasium")
    import amemgym.train  # noqa: F401  (registers the ids)

    path = tmp_path / "data.json"
    save_episode(episode, path)
    env = gymnasium.make("amemgym/Budget-lite-v0", env=str(path), llm=scripted_client(lambda r: "unused"))
    try:
        assert isinstance(env.unwrapped, BudgetEnv) and env.unwrapped.episode == episode
    finally:
        env.close()
    env = gymnasium.make("amemgym/Budget-standard-v0", seed=2, domain="hospitals", embed_search=False)
    try:
        assert env.unwrapped.episode.tier.name == "standard" and env.unwrapped.episode.seed == 2
    finally:
        env.close()
    made = make_env(path, llm=scripted_client(lambda r: "unused"))  # the family is read from the file
    assert isinstance(made, BudgetEnv)
    made.close()


# ---- the protocol's optional training methods -----------------------------------------------------------


class Bare:
    """A plug-in family with the required methods only: no Gym env, no export."""

    name = "bare"

    def owns_run(self, run_dir: Path) -> bool:
        return (run_dir / "bare.txt").is_file()

    def generate(self, request: object, console: object) -> int:
        return 0

    def validate(self, request: object, console: object) -> int:
        return 0

    def run(self, request: object, console: object) -> int:
        return 0

    def report(self, run_dirs: list[Path], out_file: Path, *, env: Path | None, figures: Path | None,
               console: object) -> int:
        return 0

    def leaderboard(self, run_dirs: list[Path]) -> object:
        return None

    def compare(self, run_a: Path, run_b: Path, *, bootstrap: int, seed: int, console: object) -> int:
        return 0


def test_a_family_without_training_methods_is_refused_in_one_line(tmp_path: Path) -> None:
    register_family(Bare())  # type: ignore[arg-type]
    try:
        (tmp_path / "bare.txt").write_text("x")
        res = CliRunner().invoke(app, ["export", str(tmp_path), "--out", str(tmp_path / "o.jsonl")])
        assert res.exit_code == 2 and res.output.strip() == "error: amemgym export is not supported for family 'bare'"
        with pytest.raises(ConfigError, match="the Gym environment is not supported for family 'bare'"):
            make_env(family="bare")
    finally:
        unregister_family("bare")


def test_the_checker_looks_at_training_methods_only_when_present() -> None:
    class BadExport(Bare):
        def export(self, run_dir: Path) -> ExportResult:  # lacks out_file, fmt, unit, with_evaluation
            raise AssertionError

    assert check_family(Bare()) == []
    assert check_family(BadExport()) == ["export() lacks parameter(s) out_file, fmt, unit, with_evaluation"]
    for name in ("statetrack", "budget"):
        family = get_family(name)
        assert check_family(family) == [] and callable(training_method(family, "export"))


# ---- export --------------------------------------------------------------------------------------------


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def test_openai_chat_lines_are_the_conversations_the_agent_had(episode: Episode, ran: tuple, tmp_path: Path) -> None:
    run_dir, res, _, requests = ran
    out = tmp_path / "chat.jsonl"
    summary = export_budget_run(run_dir, out, with_evaluation=True)
    rows = lines(out)
    assert summary.lines == len(rows)
    # The last request of each event plus its reply is that event's whole conversation.
    last: dict[int, list[dict[str, str]]] = {}
    for req in requests:
        m = _OPENING.search(next(x["content"] for x in req.messages if x["role"] == "user"))
        last[int(m.group(1)) - 1] = list(req.messages)  # type: ignore[union-attr]
    trace = [json.loads(x) for x in (run_dir / "trace.jsonl").read_text().splitlines()]
    final_reply = {r["event"]: r["reply"] for r in trace}
    by_event = {}
    for row in rows:
        m = _OPENING.search(row["messages"][1]["content"])
        by_event[int(m.group(1)) - 1] = row["messages"]  # type: ignore[union-attr]
    assert by_event
    for index, messages in by_event.items():
        plain = [{"role": x["role"], "content": x["content"]} for x in messages]
        assert plain == [*last[index], {"role": "assistant", "content": final_reply[index]}]
        assert messages[0]["content"] == system_prompt(episode)
        ev = episode.events[index]
        correct = ev.question is None or res["answers"][ev.question]["correct"]
        replies = [x for x in messages if x["role"] == "assistant"]
        accepted = [r.get("ok") is True for r in trace if r["event"] == index]
        assert [x["weight"] for x in replies] == [int(ok and correct) for ok in accepted]
        for x, ok in zip(replies, accepted, strict=True):
            assert ok or x["content"].startswith("I will") or "budget exhausted" in next(
                r["result"] for r in trace if r["event"] == index and r["reply"] == x["content"])
    assert any(x["weight"] == 0 and '"write"' in x["content"] for m in by_event.values() for x in m
               if x["role"] == "assistant")  # a write the budget refused is not a target
    wrong = [q for q, a in res["answers"].items() if not a["correct"]]
    questions_out = [i for i in by_event if episode.events[i].kind == "question"]
    assert len(questions_out) == len(episode.questions) - len(wrong)
    assert any("left out" in n and str(len(wrong)) in n for n in summary.notes)
    # Without --with-evaluation the question events stay out.
    export_budget_run(run_dir, out)
    assert all("(question)" not in row["messages"][1]["content"] for row in lines(out))


def test_jsonl_has_one_line_per_tool_call_and_rewards_answers(episode: Episode, ran: tuple, tmp_path: Path) -> None:
    run_dir, res, _, _ = ran
    out = tmp_path / "calls.jsonl"
    export_budget_run(run_dir, out, fmt="jsonl", with_evaluation=True)
    rows = lines(out)
    trace = (run_dir / "trace.jsonl").read_text().splitlines()
    assert len(rows) == len(trace) and all(tuple(r) == JSONL_KEYS for r in rows)
    answers = [r for r in rows if r["reward"] is not None]
    assert len(answers) == len(episode.questions)
    assert sum(r["reward"] for r in answers) == sum(a["correct"] for a in res["answers"].values())
    for r in answers:
        assert r["correct"] == res["answers"][r["question"]]["correct"] and r["tool"] == "submit_answer"
        assert json.loads(r["gold"]) == res["answers"][r["question"]]["gold"]
    assert any(r["error"] and r["tool"] is None for r in rows)  # protocol errors are kept, with their text
    export_budget_run(run_dir, out, fmt="jsonl")
    assert all(r["event_kind"] != "question" for r in lines(out))


@pytest.mark.parametrize("fmt", ["openai-chat", "jsonl"])
def test_budget_exports_load_in_hf_datasets(ran: tuple, tmp_path: Path, load_hf_json: Any, fmt: str) -> None:
    path = tmp_path / "out.jsonl"
    export_budget_run(ran[0], path, fmt=fmt, with_evaluation=True)
    ds = load_hf_json(path)
    assert ds.num_rows == len(lines(path))
    if fmt == "jsonl":
        assert ds.column_names == list(JSONL_KEYS)
    else:
        assert ds.column_names == ["messages"]


def test_the_export_command_resolves_the_family(ran: tuple, tmp_path: Path) -> None:
    out = tmp_path / "o.jsonl"
    res = CliRunner().invoke(app, ["export", str(ran[0]), "--with-evaluation", "--out", str(out)],
                             env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    assert "wrote" in res.output and "budget lite films seed 0" in res.output and "left out" in res.output
    bad = CliRunner().invoke(app, ["export", str(ran[0]), "--unit", "session", "--out", str(out)])
    assert bad.exit_code == 2 and "one line per event" in bad.output


def test_an_unfinished_or_altered_run_is_refused(ran: tuple, tmp_path: Path) -> None:
    import shutil

    run_dir = tmp_path / "copy"
    shutil.copytree(ran[0], run_dir)
    results = json.loads((run_dir / "results.json").read_text())
    first = next(iter(results["answers"]))
    results["answers"][first]["reply"] = "something else"
    (run_dir / "results.json").write_text(json.dumps(results))
    with pytest.raises(RunError, match="disagree on the answer"):
        export_budget_run(run_dir, tmp_path / "o.jsonl")
    (run_dir / "results.json").unlink()  # as after a kill: checkpoint and trace, no results
    with pytest.raises(RunError, match="has not finished"):
        export_budget_run(run_dir, tmp_path / "o.jsonl")
    for args in (["export", str(run_dir), "--out", str(tmp_path / "o.jsonl")],
                 ["report", str(run_dir), "--out", str(tmp_path / "r.html")], ["leaderboard", str(run_dir)],
                 ["compare", str(run_dir), str(ran[0])]):
        res = CliRunner().invoke(app, args, env={"COLUMNS": "300"})
        assert res.exit_code == 2 and "has not finished" in res.output, args
        assert len(res.output.strip().splitlines()) == 1
    assert not (tmp_path / "o.jsonl").exists() and not (tmp_path / "r.html").exists()
    (run_dir / "checkpoint.json").unlink()  # nothing of a budget run left: not a run directory at all
    res = CliRunner().invoke(app, ["export", str(run_dir), "--out", str(tmp_path / "o.jsonl")])
    assert res.exit_code == 2 and len(res.output.strip().splitlines()) == 1


def test_the_env_passes_the_train_checker() -> None:
    from amemgym.train import check_env

    def policy(observation: str, info: dict[str, Any]) -> str:
        return call("submit_answer", answer="none") if info.get("event_kind") == "question" else call("done")

    with BudgetEnv(tier="lite", domain="agent_teams", llm=scripted_client(lambda r: "unused")) as env:
        check_env(env, policy=policy, seed=1)
        check_env(env, seed=2)  # the default policy's prose: every call a protocol error, events time out


@pytest.mark.parametrize("damage", ["cut", "deleted"])
def test_a_trace_cut_short_or_deleted_is_refused_not_exported_in_part(ran: tuple, tmp_path: Path,
                                                                       damage: str) -> None:
    # Before: "wrote N lines" with fewer lines than the episode played, exit 0.
    import shutil

    from amemgym.errors import RunError

    run_dir = tmp_path / "run"
    shutil.copytree(ran[0], run_dir)
    trace = run_dir / "trace.jsonl"
    if damage == "cut":
        text = trace.read_text(encoding="utf-8")
        trace.write_text(text[: len(text) // 3].rsplit("\n", 1)[0] + "\n", encoding="utf-8")
    else:
        trace.unlink()
    with pytest.raises(RunError, match=r"trace\.jsonl: no line for \d+ of the episode's \d+ events"):
        export_budget_run(run_dir, tmp_path / "out.jsonl")
    assert not (tmp_path / "out.jsonl").exists()


def test_a_trace_whose_last_line_is_torn_is_refused_not_exported_one_call_short(ran: tuple, tmp_path: Path) -> None:
    # Every event still has a line, so only the torn end tells: a reader would skip it as an interrupted append.
    run_dir = tmp_path / "run"
    shutil.copytree(ran[0], run_dir)
    trace = run_dir / "trace.jsonl"
    trace.write_bytes(trace.read_bytes()[:-100])
    with pytest.raises(RunError, match=r"trace\.jsonl: the last line is cut short"):
        export_budget_run(run_dir, tmp_path / "out.jsonl")
    assert not (tmp_path / "out.jsonl").exists()


def test_reset_options_that_are_not_a_dict_are_one_error(episode: Episode, tmp_path: Path) -> None:
    save_episode(episode, tmp_path / "data.json")
    with BudgetEnv(tmp_path / "data.json", llm=scripted_client(lambda r: "unused")) as env:
        with pytest.raises(ConfigError, match="options must be a dict, got list"):
            env.reset(options=[1])  # type: ignore[arg-type]
