"""End-to-end runs with the scripted fake: hand-computed metrics, resume, isolation, off-policy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from amemgym.agents import resolve_agent
from amemgym.config import load_config
from amemgym.families.statetrack.data import load_environment
from amemgym.families.statetrack.runner import Runner
from amemgym.testing.run_script import RunScript
from amemgym.testing.scripted_model import scripted_client


async def run_once(env_path: Path, out: Path, responder, tmp_path: Path, agent: str = "native", **kw):
    env = load_environment(env_path)
    cfg = load_config("tiny")
    llm = scripted_client(responder, cache=tmp_path / "cache.sqlite")
    return await Runner(env, resolve_agent(agent), out, cfg, llm, **kw).run(), llm


# Hand-built case on the fixture (1 user, periods 0..2, 2 questions, 4 options each):
# p0: Q0 right; Q1 wrong with both variables probed right            -> utilization failure
# p1: Q0 wrong, probe misses work_shift_pattern (changed at p1 == p) -> write failure; Q1 right
# p2: Q0 wrong, misses work_shift_pattern (changed p1, missed at p1 too) -> write,
#     and running_goal (changed at p2 == p)                          -> write;
#     Q1 wrong, misses work_shift_pattern (changed p1, probed right at p1 for Q1) -> read
PICKS = {
    (0, 1): ["rotating_nights", "full_home_kitchen"],
    (1, 0): ["fixed_daytime", "casual_5k"],
    (2, 0): ["fixed_daytime", "casual_5k"],
    (2, 1): ["fixed_daytime", "full_home_kitchen"],
}
PROBES = {
    (1, 0): {"work_shift_pattern": "fixed_daytime", "running_goal": "casual_5k"},
    (2, 0): {"work_shift_pattern": "fixed_daytime", "running_goal": "casual_5k"},
    (2, 1): {"work_shift_pattern": "fixed_daytime", "kitchen_setup": "hot_plate_only"},
}


async def test_hand_computed_metrics(original_env_path: Path, tmp_path: Path) -> None:
    user = load_environment(original_env_path).users[0]
    outcome, _ = await run_once(original_env_path, tmp_path / "run", RunScript(user, PICKS, PROBES), tmp_path)
    m = outcome.metrics
    assert m["complete"] and not outcome.failures
    per = {row["period"]: row for row in m["per_period"]}
    assert [per[p]["overall"]["mean"] for p in range(3)] == [0.5, 0.5, 0.0]
    assert [per[p]["random"]["mean"] for p in range(3)] == [0.25, 0.25, 0.25]
    assert [per[p]["upper_bound"]["mean"] for p in range(3)] == [1.0, 1.0, 1.0]
    assert [round(per[p]["memory_score"]["mean"], 6) for p in range(3)] == [0.333333, 0.333333, -0.333333]
    assert per[0]["failure_rates"] == {"write": 0.0, "read": 0.0, "utilization": 0.5}
    assert per[1]["failure_rates"] == {"write": 0.25, "read": 0.0, "utilization": 0.0}
    assert per[2]["failure_rates"] == {"write": 0.5, "read": 0.25, "utilization": 0.0}
    assert m["overall"]["failure_rates"] == {"write": 0.25, "read": 1 / 12, "utilization": 1 / 6}
    assert m["overall"]["memory_score_all_cells"] == pytest.approx(1 / 9)


async def test_rerun_makes_no_model_calls(original_env_path: Path, tmp_path: Path) -> None:
    user = load_environment(original_env_path).users[0]
    first, _ = await run_once(original_env_path, tmp_path / "run", RunScript(user), tmp_path)
    second, llm = await run_once(original_env_path, tmp_path / "run", RunScript(user), tmp_path)
    assert llm.ledger.totals().calls == 0
    assert second.metrics["overall"] == first.metrics["overall"]
    trace = (tmp_path / "run" / "users" / user.id / "trace.jsonl").read_text().splitlines()
    kinds = {json.loads(line)["kind"] for line in trace}
    assert kinds == {"message", "memory", "evaluation", "upper_bound"}


async def test_upper_bound_calls_are_shared_across_periods(original_env_path: Path, tmp_path: Path) -> None:
    user = load_environment(original_env_path).users[0]
    _, llm = await run_once(original_env_path, tmp_path / "run", RunScript(user), tmp_path)
    distinct = {(q, tuple(p.state[v] for v in qa.required_info)) for q, qa in enumerate(user.qas) for p in user.periods}
    backend = llm.scripted
    ub_calls = [r for r in backend.requests if r.tag == "eval.upper_bound"]
    assert len(ub_calls) == len(distinct) == 6


class _Stop(BaseException):
    """Simulates the process dying mid-call (not an amemgym error, so nothing catches it)."""


async def test_resume_after_interruption_gives_identical_metrics(original_env_path: Path, tmp_path: Path) -> None:
    user = load_environment(original_env_path).users[0]
    ref, _ = await run_once(original_env_path, tmp_path / "ref", RunScript(user, PICKS, PROBES), tmp_path / "a")
    for stop_at in (3, 9, 17, 25):
        script = RunScript(user, PICKS, PROBES)
        calls = {"n": 0}

        def dying(req, script=script, calls=calls, stop_at=stop_at):
            calls["n"] += 1
            if calls["n"] == stop_at:
                raise _Stop()
            return script(req)

        out = tmp_path / f"run{stop_at}"
        with pytest.raises(_Stop):
            await run_once(original_env_path, out, dying, tmp_path / f"c{stop_at}")
        resumed, _ = await run_once(original_env_path, out, script, tmp_path / f"c{stop_at}")
        assert resumed.metrics["per_user"] == ref.metrics["per_user"]
        assert resumed.metrics["overall"] == ref.metrics["overall"]


async def test_evaluation_does_not_change_the_live_agent(original_env_path: Path, tmp_path: Path) -> None:
    user = load_environment(original_env_path).users[0]
    await run_once(original_env_path, tmp_path / "run", RunScript(user), tmp_path)
    snap0 = json.loads((tmp_path / "run/users/u-0001/snapshots/period_00.json").read_text())["snapshot"]
    snap1 = json.loads((tmp_path / "run/users/u-0001/snapshots/period_01.json").read_text())["snapshot"]
    # Period 1's agent continues from period 0's snapshot: no evaluation prompt ever entered its history.
    assert snap1["history"][: len(snap0["history"])] == snap0["history"]
    assert not any("Reply with the number" in m["content"] for m in snap1["history"])
    assert not any("Based only on what you know" in m["content"] for m in snap1["history"])


async def test_off_policy_replays_recorded_conversations(original_env_path: Path, tmp_path: Path) -> None:
    user = load_environment(original_env_path).users[0]
    await run_once(original_env_path, tmp_path / "on", RunScript(user), tmp_path / "a")
    off, llm = await run_once(original_env_path, tmp_path / "off", RunScript(user), tmp_path / "b",
                              off_policy=tmp_path / "on")
    assert off.metrics["complete"]
    tags = {r.tag for r in llm.scripted.requests}
    assert "agent.reply" not in tags and "simulator.turn" not in tags
    on_sessions = (tmp_path / "on/users/u-0001/sessions.jsonl").read_text()
    off_sessions = (tmp_path / "off/users/u-0001/sessions.jsonl").read_text()
    assert on_sessions == off_sessions


async def test_rundir_of_another_agent_is_refused(original_env_path: Path, tmp_path: Path) -> None:
    from amemgym.errors import RunError

    user = load_environment(original_env_path).users[0]
    await run_once(original_env_path, tmp_path / "run", RunScript(user), tmp_path)
    env = load_environment(original_env_path)
    cfg = load_config("tiny", ["run.seed=5"])
    with pytest.raises(RunError, match="different run"):
        await Runner(env, resolve_agent("native"), tmp_path / "run", cfg, scripted_client(RunScript(user),
            cache=tmp_path / "cache.sqlite")).run()
