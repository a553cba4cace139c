"""``run.resimulate_leaks``: a simulator turn that names an unexposed value is redrawn before the agent sees it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from amemgym.agents import resolve_agent
from amemgym.config import load_config
from amemgym.families.statetrack.data import load_environment
from amemgym.families.statetrack.layout import RunDir
from amemgym.families.statetrack.runner import Runner
from amemgym.families.statetrack.simulate import LeakTally, UserSimulator, leaked_values
from amemgym.families.statetrack.simulate.simulator import NEUTRAL_FOLLOW_UP
from amemgym.families.statetrack.validity.sim_audit import audit_run
from amemgym.llm.types import ChatRequest
from amemgym.report.extras import leak_guard
from amemgym.report.load import load_run, session_records
from amemgym.testing.run_script import RunScript
from amemgym.testing.scripted_model import scripted_client

SCHEMA = {"running_goal": ["casual_5k", "half_marathon", "trail_ultra"], "mood": ["low", "high", "ok"]}
LEAK = "Honestly I am training for a trail ultra now."
CLEAN = "Thanks, could you make that more concrete?"


def test_leaked_values_finds_unexposed_values_in_any_spelling() -> None:
    assert leaked_values("A Trail-Ultra is my plan", SCHEMA, {}) == [("running_goal", "trail_ultra")]
    assert leaked_values("still on my half marathon", SCHEMA, {"running_goal": "half_marathon"}) == []
    # Short one-word values are ordinary words, so they are not looked for.
    assert leaked_values("my mood is low", SCHEMA, {}) == []
    assert leaked_values("contrail ultralight", SCHEMA, {}) == []


class Drafts:
    """Simulator replies in order: the first ``leaky`` drafts leak, later ones are clean."""

    def __init__(self, leaky: int) -> None:
        self.leaky = leaky
        self.seeds: list[int | None] = []

    def __call__(self, req: ChatRequest) -> str:
        self.seeds.append(req.seed)
        return LEAK if len(self.seeds) <= self.leaky else CLEAN


def simulator(drafts: Drafts, attempts: int) -> UserSimulator:
    llm = scripted_client(drafts, roles=("simulator",), embedder=False)
    return UserSimulator(llm, resimulate_attempts=attempts)


async def next_turn(sim: UserSimulator, original_env_path: Path, tally: LeakTally | None = None) -> str:
    user = load_environment(original_env_path).users[0]
    session = user.periods[0].sessions[0]
    exchange = [{"role": "user", "content": session.query}, {"role": "assistant", "content": "Sure."}]
    return await sim.next_turn(user, "2020-10-01", session.query, exchange, seed=7,
                               exposed=session.exposed_states, tally=tally)


async def test_a_leaking_draft_is_redrawn_with_another_seed(original_env_path: Path) -> None:
    drafts, tally = Drafts(leaky=1), LeakTally()
    sim = simulator(drafts, attempts=2)
    assert await next_turn(sim, original_env_path, tally) == CLEAN
    assert len(drafts.seeds) == 2 and drafts.seeds[0] != drafts.seeds[1]
    assert tally == LeakTally(resimulated=1, unresolved=0) == sim.tally


async def test_redraws_are_bounded_and_a_persistent_leak_is_never_sent(original_env_path: Path) -> None:
    drafts = Drafts(leaky=99)
    sim = simulator(drafts, attempts=2)
    assert await next_turn(sim, original_env_path) == NEUTRAL_FOLLOW_UP
    assert len(drafts.seeds) == 3
    assert sim.tally == LeakTally(resimulated=2, unresolved=1)


async def test_the_guard_is_off_by_default(original_env_path: Path) -> None:
    drafts = Drafts(leaky=99)
    sim = simulator(drafts, attempts=0)
    assert await next_turn(sim, original_env_path) == LEAK
    assert len(drafts.seeds) == 1 and sim.tally == LeakTally()


def test_tally_record_fields_only_when_the_guard_fired() -> None:
    assert LeakTally().record_fields() == {}
    assert LeakTally(resimulated=2, unresolved=1).record_fields() == {"resimulated": 2, "unresolved_leaks": 1}


class LeakyRun(RunScript):
    """The scripted run, with a simulator whose first draft of every turn leaks."""

    def __init__(self, user) -> None:
        super().__init__(user)
        self.seen: set[tuple] = set()
        self.agent_inputs: list[str] = []

    def __call__(self, req: ChatRequest) -> str:
        if req.role == "simulator":
            key = tuple((m["role"], m["content"]) for m in req.messages)
            first = key not in self.seen
            self.seen.add(key)
            return LEAK if first else CLEAN
        if req.role == "agent":
            self.agent_inputs += [m["content"] for m in req.messages]
        return super().__call__(req)


@pytest.mark.parametrize("enabled", [True, False])
async def test_run_with_resimulate_leaks(original_env_path: Path, tmp_path: Path, enabled: bool) -> None:
    env = load_environment(original_env_path)
    script = LeakyRun(env.users[0])
    llm = scripted_client(script, embedder=False)
    cfg = load_config("tiny")
    cfg.run.resimulate_leaks = enabled
    outcome = await Runner(env, resolve_agent("native"), tmp_path / "run", cfg, llm).run()
    assert outcome.metrics["complete"]
    rd = RunDir(tmp_path / "run")
    records = [json.loads(line) for line in rd.sessions(env.users[0].id).read_text().splitlines()]
    later_rounds = [r for r in records if r["period"] > 0]
    assert later_rounds
    audit = await audit_run(rd, env)
    if enabled:
        assert not any("trail ultra" in text for text in script.agent_inputs)
        assert all(r.get("resimulated") == 1 and "unresolved_leaks" not in r for r in later_rounds)
        assert audit["counts"]["reveals_value"] == 0
        guard = leak_guard(session_records(load_run(rd.root), env.users[0].id).values())
        assert guard.resimulated == len(later_rounds) and guard.unresolved == 0
    else:
        assert any("trail ultra" in text for text in script.agent_inputs)
        assert all("resimulated" not in r for r in records)
        assert audit["counts"]["reveals_value"] == audit["turns"] > 0


def test_echo_of_the_assistant_is_redrawn_once() -> None:
    from amemgym.families.statetrack.simulate.simulator import echoes_assistant

    reply = "To make your trip more enjoyable, plan in advance and pack light for every flight."
    assert echoes_assistant("Sure! To make your trip more enjoyable, plan in advance and pack light.", reply)
    assert not echoes_assistant("Any tips for sleeping on red-eye flights?", reply)


async def test_simulator_redraws_an_echo_and_counts_it(original_env_path) -> None:
    from amemgym.families.statetrack.data import load_environment
    from amemgym.families.statetrack.simulate import UserSimulator
    from amemgym.testing.scripted_model import scripted_client

    user = load_environment(original_env_path).users[0]
    reply = "To make your trip more enjoyable, plan in advance and pack light for every flight."
    drafts = iter([reply, "Which snacks keep well on a long flight?"])
    llm = scripted_client(lambda req: next(drafts), roles=("simulator",), embedder=False)
    sim = UserSimulator(llm)
    exchange = [{"role": "user", "content": "I fly a lot."}, {"role": "assistant", "content": reply}]
    text = await sim.next_turn(user, "2021-01-01", "I fly a lot.", exchange, seed=1)
    assert text == "Which snacks keep well on a long flight?"
    assert sim.tally.echoes == 1 and len(llm.scripted.requests) == 2
    assert "not the assistant" in llm.scripted.requests[0].messages[-1]["content"]
