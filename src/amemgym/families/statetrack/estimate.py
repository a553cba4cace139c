"""What a run will cost before it starts (``amemgym run --dry-run``): calls and tokens per role, no model call.

The calls follow from the environment and the schedule alone, so they are exact for every call the schedule
makes: per session one simulated user turn per round after the opening (none when replaying a run) and one
agent reply per round; per period two agent answers per question (the question and the state probe); per
user one upper-bound answer per (question, value combination) that ever holds. Identical calls in flight are
shared, so a run may send fewer. Calls an agent makes to keep its memory (role ``memory``) depend on what it
stores and are not estimated.

Tokens are estimates: prompts are built with the real prompt templates and the whole conversation in context
(the native agent; memory agents send less history plus what they retrieve), cut at ``run.context_window``,
with replies assumed to have the lengths below (or their cap, if smaller). ``completion_tokens_max`` is what
the caps allow.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from ...agents.base import estimate_tokens
from ...config import AppConfig
from ...prompts import render
from .asking import overall_prompt, probe_prompt, upper_bound_prompt
from .data.model import Environment, UserEnv
from .questioning import needed_combinations
from .schedule import PeriodEnd, episode_schedule
from .simulate import UserSimulator, opening_message

#: Assumed length of an agent reply, a simulated user turn and an answer, in tokens (each capped by its budget).
REPLY_TOKENS = 200
TURN_TOKENS = 60
ANSWER_TOKENS = 12


@dataclass
class RoleEstimate:
    """One role's expected calls and tokens over the whole run (all users, all trials).

    Attributes:
        role: the role (``simulator``, ``agent``, ``memory``).
        calls: expected requests; None when the agent decides (``memory``).
        prompt_tokens: estimated prompt tokens.
        completion_tokens: estimated completion tokens.
        completion_tokens_max: what the token caps allow.
        cost_usd: at the role's configured prices; None when no price is set.
        note: how to read the row.
    """

    role: str
    calls: int | None = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    completion_tokens_max: int = 0
    cost_usd: float | None = None
    note: str = ""

    def add(self, prompt: int, expected: int, cap: int, count: int = 1) -> None:
        """Count ``count`` calls of ``prompt`` tokens, replying ``expected`` of at most ``cap`` tokens."""
        assert self.calls is not None
        self.calls += count
        self.prompt_tokens += count * prompt
        self.completion_tokens += count * min(expected, cap)
        self.completion_tokens_max += count * cap


def _filler(tokens: int) -> str:
    # estimate_tokens counts about four characters per token.
    return "a" * (4 * max(tokens - 1, 0))


def _user(user: UserEnv, cfg: AppConfig, sim: RoleEstimate, agent: RoleEstimate, replay: bool) -> None:
    run = cfg.run
    simulator = UserSimulator(None, history_messages=run.simulator_history_turns)  # type: ignore[arg-type]
    system = estimate_tokens(render("agent_system")) if run.agent_system_prompt else 0
    reply, turn, answer = min(REPLY_TOKENS, run.reply_max_tokens), min(TURN_TOKENS, run.simulator_max_tokens), \
        min(ANSWER_TOKENS, run.eval_max_tokens)
    window = max(run.context_window - run.reply_max_tokens - system, 0)
    history = 0  # tokens of the conversation so far, as the native agent keeps it
    for step in episode_schedule(user, cfg, 0):
        if isinstance(step, PeriodEnd):
            context = min(history, window)
            for qa in user.qas:
                for prompt in (overall_prompt(qa), probe_prompt(user, qa)):
                    agent.add(system + context + estimate_tokens(prompt), answer, run.eval_max_tokens)
            continue
        opening = opening_message(step.spec)
        exchange: list[dict[str, str]] = []
        for r in range(step.rounds):
            if r == 0:
                said = estimate_tokens(opening)
            else:
                said = turn
                if not replay:
                    messages = simulator.messages(user, step.spec.session_time.split(" ")[0], step.spec.query,
                                                  exchange)
                    sim.add(sum(estimate_tokens(m["content"]) for m in messages), turn, run.simulator_max_tokens)
            if not replay:  # a replayed session is ingested, never answered
                agent.add(system + min(history, window) + said, reply, run.reply_max_tokens)
            history += said + reply
            exchange += [{"role": "user", "content": _filler(said)}, {"role": "assistant", "content": _filler(reply)}]
    for q, combo in needed_combinations(user):
        agent.add(estimate_tokens(upper_bound_prompt(user.qas[q], combo)), answer, run.eval_max_tokens)


def estimate_run(env: Environment, cfg: AppConfig, agent_roles: tuple[str, ...] | None, *, replay: bool = False,
                 trials: int = 1) -> dict[str, Any]:
    """Calls and tokens per role of running ``env`` under ``cfg``, ``trials`` times, as a JSON-ready dict.

    Args:
        env: the environment as the run will play it (already cut by ``--limit``).
        cfg: the run's configuration (rounds fallback, token caps, context window, prices).
        agent_roles: the roles the agent declares (``AgentSpec.roles``); None when unknown.
        replay: an ``--off-policy`` run (no simulator, no replies: the recorded sessions are ingested).
        trials: how many times the whole run is repeated.
    """
    sim, agent = RoleEstimate("simulator"), RoleEstimate("agent")
    for user in env.users:
        _user(user, cfg, sim, agent, replay)
    rows = [] if replay else [sim]
    rows.append(agent)
    if agent_roles is None or "memory" in agent_roles:
        rows.append(RoleEstimate("memory", calls=None, note="depends on what the agent stores; not estimated"))
    for row in rows:
        if row.calls is not None:
            row.calls *= trials
            row.prompt_tokens *= trials
            row.completion_tokens *= trials
            row.completion_tokens_max *= trials
        ep = cfg.llm.endpoint(row.role)  # type: ignore[arg-type]
        if row.calls is not None and (ep.price_per_mtok_in or ep.price_per_mtok_out):
            row.cost_usd = round((row.prompt_tokens * ep.price_per_mtok_in
                                  + row.completion_tokens * ep.price_per_mtok_out) / 1e6, 4)
    return {"users": len(env.users), "periods": env.num_periods, "trials": trials,
            "assumed_reply_tokens": {"agent": REPLY_TOKENS, "simulator": TURN_TOKENS, "answer": ANSWER_TOKENS},
            "roles": [asdict(r) for r in rows], "definition": __doc__.split("\n\n", 1)[1].strip()}
