"""MemoryEnv: the policy scores the same as through the runner; reset/step semantics; the checker."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest

from amemgym.agents import resolve_agent
from amemgym.config import load_config
from amemgym.errors import ConfigError, LLMError, RunError
from amemgym.families.statetrack.data import load_environment
from amemgym.families.statetrack.layout import RunDir
from amemgym.families.statetrack.runner import Runner
from amemgym.llm import LLMClient, PermanentError
from amemgym.llm.types import ChatRequest
from amemgym.testing.run_script import RunScript
from amemgym.testing.scripted_model import ScriptedBackend, last_user, scripted_client
from amemgym.train import EnvCheckError, MemoryEnv, check_env


def policy(text: str) -> str:
    """A deterministic assistant: a function of the observation text only."""
    digest = int(hashlib.sha256(text.encode()).hexdigest(), 16)
    options = re.findall(r"^\d+\. ", text, flags=re.M)
    if options:
        return "I cannot tell." if digest % 5 == 0 else json.dumps({"answer": digest % len(options) + 1})
    if text.startswith("Based only on"):
        picks = re.findall(r"^- (\w+): one of ([^,\n]+)", text, flags=re.M)
        return json.dumps({var: first for var, first in picks})
    return f"Reply {digest % 97}: try something small this week."


class PolicyAgent:
    """The same policy as a MemoryAgent, for ``amemgym run``."""

    async def reply(self, message: str, *, time: str) -> str:
        return policy(message)

    async def ingest(self, user: str, assistant: str, *, time: str) -> None:
        return None

    async def answer(self, prompt: str) -> str:
        return policy(prompt)

    async def snapshot(self) -> dict[str, Any]:
        return {}

    def restore(self, snapshot: dict[str, Any]) -> None:
        return None

    def memory_view(self) -> str:
        return ""

    def stats(self) -> dict[str, Any]:
        return {}


def policy_agent(llm: LLMClient, ctx: Any) -> PolicyAgent:
    return PolicyAgent()


class TrainScript(RunScript):
    """Upper bound as the scripted fake; a simulator whose turn depends on the assistant's last reply."""

    def __call__(self, req: ChatRequest) -> str:
        if req.role == "simulator":
            return f"Hmm, about '{last_user(req)[:24]}', what would you change?"
        return super().__call__(req)



def play(env: MemoryEnv, **reset: Any) -> tuple[list[tuple[str, dict[str, Any]]], list[dict[str, Any]], dict]:
    obs, info = env.reset(**reset)
    seen, outcomes = [(obs, info)], []
    while True:
        obs, _, terminated, truncated, info = env.step(policy(obs))
        outcomes += info["outcomes"]
        seen.append((obs, info))
        if terminated or truncated:
            return seen, outcomes, info


@pytest.fixture
def user_env(original_env_path: Path):
    return load_environment(original_env_path)


async def run_and_play(user_env: Any, cfg: Any, out: Path) -> tuple[list, list, dict, RunDir]:
    """The policy through ``amemgym run`` into ``out``, then through MemoryEnv (probes on) with the same settings."""
    user = user_env.users[0]
    await Runner(user_env, resolve_agent("test_train_env:policy_agent"), out, cfg,
                 scripted_client(TrainScript(user))).run()
    env = MemoryEnv(user_env, llm=scripted_client(TrainScript(user)), config=cfg, probes=True)
    try:
        seen, outcomes, last = play(env, seed=3)
    finally:
        env.close()
    return seen, outcomes, last, RunDir(out)


async def test_same_scores_as_the_runner(user_env, original_env_path: Path, tmp_path: Path) -> None:
    user = user_env.users[0]
    seen, outcomes, last, rd = await run_and_play(user_env, load_config("tiny"), tmp_path / "run")
    metrics = json.loads(rd.metrics.read_text())
    for p in range(len(user.periods)):
        run_eval = json.loads(rd.evaluation(user.id, p).read_text())["questions"]
        gym_eval = [o for o in outcomes if o["kind"] == "evaluation" and o["period"] == p]
        gym_probe = [o for o in outcomes if o["kind"] == "probe" and o["period"] == p]
        assert [(q["reply"], q["choice"], q["status"], q["score"]) for q in run_eval] == \
            [(o["reply"], o["choice"], o["status"], o["score"]) for o in gym_eval]
        assert [q["probe_correct"] for q in run_eval] == [o["probe_correct"] for o in gym_probe]
        cell = metrics["per_user"][user.id][str(p)]
        period = next(o for o in outcomes if o["kind"] == "period" and o["period"] == p)
        assert {k: period[k] for k in cell} == cell
    assert last["metrics"]["overall"] == metrics["overall"]
    sessions = [json.loads(line)["messages"] for line in rd.sessions(user.id).read_text().splitlines()]
    user_turns = [m["content"] for msgs in sessions for m in msgs if m["role"] == "user"]
    assert [o for o, i in seen if i["kind"] == "chat"] == user_turns


async def test_scores_are_not_trivial(user_env) -> None:
    # Guard for the equality test: the policy must get some questions right and some wrong.
    env = MemoryEnv(user_env, llm=scripted_client(TrainScript(user_env.users[0])), upper_bound=False)
    try:
        _, outcomes, _ = play(env, seed=0)
    finally:
        env.close()
    scores = {o["score"] for o in outcomes if o["kind"] == "evaluation"}
    assert scores == {0.0, 1.0}


def test_observation_info_never_reveals_the_answer(user_env) -> None:
    env = MemoryEnv(user_env, llm=scripted_client(TrainScript(user_env.users[0])), upper_bound=False)
    try:
        seen, _, _ = play(env)
    finally:
        env.close()
    evals = [i for _, i in seen if i["kind"] == "evaluation"]
    assert evals and all("gold" not in i and "score" not in i for i in evals)


def test_rewards_and_period_results(user_env) -> None:
    env = MemoryEnv(user_env, llm=scripted_client(TrainScript(user_env.users[0])))
    try:
        obs, info = env.reset(seed=0)
        rewards, periods = [], []
        while True:
            obs, reward, terminated, truncated, info = env.step(policy(obs))
            rewards.append(reward)
            periods += [info["period_result"]] if "period_result" in info else []
            if terminated:
                break
    finally:
        env.close()
    assert sum(rewards) == sum(p["overall"] * p["questions"] for p in periods)
    assert [p["period"] for p in periods] == [0, 1, 2]
    assert all(p["upper_bound"] == 1.0 and p["memory_score"] is not None for p in periods)
    assert obs == "" and info["kind"] == "end" and not truncated


def test_upper_bound_can_be_switched_off(user_env) -> None:
    backend = ScriptedBackend(TrainScript(user_env.users[0]))
    llm = LLMClient(backends={r: backend for r in ("agent", "simulator")}, backoff_base=0.001)
    env = MemoryEnv(user_env, llm=llm)
    try:
        _, _, last = play(env, options={"upper_bound": False})
    finally:
        env.close()
    assert not [r for r in backend.requests if r.tag == "eval.upper_bound"]
    assert last["metrics"]["overall"]["memory_score"]["n"] == 0


def test_budget_truncates_and_then_refuses(user_env) -> None:
    env = MemoryEnv(user_env, llm=scripted_client(TrainScript(user_env.users[0])), max_steps=3)
    try:
        obs, _ = env.reset()
        flags = [env.step(policy(obs))[2:4] for _ in range(3)]
        assert flags == [(False, False), (False, False), (False, True)]
        with pytest.raises(RunError, match="reset"):
            env.step("more")
    finally:
        env.close()


def test_bad_calls_are_clear_errors(user_env) -> None:
    env = MemoryEnv(user_env, llm=scripted_client(TrainScript(user_env.users[0])))
    try:
        with pytest.raises(RunError, match="reset"):
            env.step("hello")
        with pytest.raises(ConfigError, match="unknown option 'speed'"):
            env.reset(options={"speed": 2})
        with pytest.raises(ConfigError, match="options must be a dict, got list"):
            env.reset(options=[1])  # type: ignore[arg-type]
        with pytest.raises(ConfigError, match="no user 'nobody'"):
            env.reset(options={"user": "nobody"})
        env.reset(options={"user": 0})
        with pytest.raises(ConfigError, match="must be a str"):
            env.step(3)  # type: ignore[arg-type]
    finally:
        env.close()


def test_simulator_failure_is_raised_from_step(user_env) -> None:
    def responder(req: ChatRequest) -> Any:
        return PermanentError("simulator endpoint said 400") if req.role == "simulator" else "ok"

    env = MemoryEnv(user_env, llm=scripted_client(responder), upper_bound=False)
    try:
        obs, _ = env.reset()
        with pytest.raises(LLMError):
            for _ in range(10):
                env.step("Sure.")
        with pytest.raises(RunError, match="reset"):
            env.step("again")
    finally:
        env.close()


def test_check_env_passes_on_memory_env(user_env) -> None:
    env = MemoryEnv(user_env, llm=scripted_client(TrainScript(user_env.users[0])), probes=True)
    try:
        check_env(env)
    finally:
        env.close()


class _NonDeterministic(MemoryEnv):
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        obs, info = super().reset(seed=seed, options=options)
        self.calls = getattr(self, "calls", 0) + 1
        return obs, {**info, "call": self.calls}


class _NeverTruncates(MemoryEnv):
    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = super().step(action)
        return obs, reward, terminated or truncated, False, info


@pytest.mark.parametrize(("cls", "message"), [(_NonDeterministic, "not deterministic"),
                                              (_NeverTruncates, "must truncate")])
def test_check_env_catches_broken_envs(user_env, cls: type[MemoryEnv], message: str) -> None:
    env = cls(user_env, llm=scripted_client(TrainScript(user_env.users[0])), upper_bound=False)
    try:
        with pytest.raises(EnvCheckError, match=message):
            check_env(env)
    finally:
        env.close()


async def test_the_gold_option_is_shown_only_after_the_probe_is_answered(user_env) -> None:
    """Found by probing: the answer's outcome (with its gold option, whose state is what the probe asks) came with
    the probe's own observation, so a policy could copy it into a perfect probe."""
    env = MemoryEnv(user_env, llm=scripted_client(TrainScript(user_env.users[0])), upper_bound=False, probes=True)
    try:
        obs, info = env.reset(seed=0)
        while True:
            obs, _, terminated, truncated, info = env.step(policy(obs))
            if info["kind"] == "probe":
                assert not any(o["kind"] == "evaluation" for o in info["outcomes"]), info["outcomes"]
            if terminated or truncated:
                break
    finally:
        env.close()


async def test_the_env_scores_under_the_runs_answer_rule_and_takes_the_runs_settings(
        user_env, original_env_path: Path, tmp_path: Path) -> None:
    user = user_env.users[0]
    _, outcomes, last, rd = await run_and_play(user_env, load_config("tiny", ["run.answer_rule=original"]),
                                               tmp_path / "run")
    assert last["metrics"]["overall"] == json.loads(rd.metrics.read_text())["overall"]
    assert [o["reward"] for o in outcomes if o["kind"] == "evaluation"] == [
        q["score_original_rule"] for p in range(len(user.periods))
        for q in json.loads(rd.evaluation(user.id, p).read_text())["questions"]]
    # Without a config, the preset the environment names (or tiny for the bundled demo), as `amemgym run` does.
    bare = MemoryEnv()
    try:
        assert bare.config.run.eval_max_tokens == load_config("tiny").run.eval_max_tokens
    finally:
        bare.close()


def test_one_client_serves_one_environment(user_env) -> None:
    llm = scripted_client(TrainScript(user_env.users[0]))
    first = MemoryEnv(user_env, llm=llm)
    try:
        with pytest.raises(ConfigError, match="already serves another environment"):
            MemoryEnv(user_env, llm=llm)
    finally:
        first.close()


def test_odd_reset_inputs_are_one_line(user_env) -> None:
    env = MemoryEnv(user_env, llm=scripted_client(TrainScript(user_env.users[0])), upper_bound=False)
    try:
        with pytest.raises(ConfigError, match="unknown option (1|.a.)"):
            env.reset(options={1: 2, "a": 3})
        for seed in ("3", 3.5, -1, True):
            with pytest.raises(ConfigError, match="seed must be None or an int"):
                env.reset(seed=seed)
        env.reset(seed=0)
        with pytest.raises(ConfigError, match="at most 1,000,000"):
            env.step("x" * 1_000_001)
    finally:
        env.close()
