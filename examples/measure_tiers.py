"""Measure the tiers for ``docs/tiers.md``: sizes of a procedural generation and tokens per role.

For each preset it generates ``min(users, --users)`` users with the procedural generator, reports the
sizes, and runs the native agent on them through the real runner with a scripted stand-in model whose
replies have fixed, typical lengths (agent replies ``--reply-words`` words, simulator turns
``--sim-words``). Tokens are counted as characters / 4 (the estimate the agents use for budgeting), so
the numbers are prompt sizes implied by the protocol, not the usage of any particular model. Totals
for a tier are the measured per-user mean times the tier's user count.

    python examples/measure_tiers.py [--users 2] [--presets tiny,small,v1.base,v1.extra,large]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
from dataclasses import replace
from pathlib import Path

from amemgym.agents import resolve_agent
from amemgym.agents.base import estimate_tokens
from amemgym.config import PRESETS, load_config
from amemgym.errors import ConfigError
from amemgym.families.statetrack.generate.procedural import generate_procedural
from amemgym.families.statetrack.layout import RunDir
from amemgym.families.statetrack.runner import Runner
from amemgym.families.statetrack.schedule import rounds_for
from amemgym.llm import ChatRequest, ChatResult, LLMClient
from amemgym.testing.scripted_model import ScriptedBackend


class SizedBackend(ScriptedBackend):
    """The scripted backend, counting tokens as characters / 4 instead of words."""

    async def complete(self, req: ChatRequest) -> ChatResult:
        res = await super().complete(req)
        return replace(res, prompt_tokens=sum(estimate_tokens(m["content"]) for m in req.messages),
                       completion_tokens=estimate_tokens(res.text))


def responder(reply_words: int, sim_words: int):
    reply = " ".join(["advice"] * reply_words)
    turn = " ".join(["question"] * sim_words)

    def respond(req: ChatRequest) -> str:
        if req.role == "simulator":
            return turn
        if req.tag in ("agent.answer", "eval.upper_bound"):
            return '{"answer": 1}'
        return reply

    return respond


async def measure(preset: str, users: int, reply_words: int, sim_words: int) -> dict:
    cfg = load_config(preset)  # the preset's own run settings (the v1 ones follow the original protocol)
    n = min(users, cfg.env.num_user_profiles)
    env, _ = generate_procedural(cfg.env, num_users=n)
    per_user = []
    for u in env.users:
        sessions = [len(p.sessions) for p in u.periods]
        msgs = sum(2 * rounds_for(u, cfg, p) * k for p, k in enumerate(sessions))
        per_user.append({"sessions": sum(sessions), "per_period": statistics.mean(sessions[1:]) if len(sessions) > 1
                         else sessions[0], "period0": sessions[0], "messages": msgs,
                         "variables": len(u.state_schema), "options": statistics.mean(len(q.answer_choices)
                                                                                       for q in u.qas)})
    backend = SizedBackend(responder(reply_words, sim_words))
    llm = LLMClient(backends={r: backend for r in ("agent", "simulator", "memory", "judge")}, backoff_base=0.001)
    with tempfile.TemporaryDirectory() as tmp:
        await Runner(env, resolve_agent("native"), Path(tmp) / "run", cfg, llm).run()
        rundir = RunDir(Path(tmp) / "run")
        dialogue = statistics.mean(
            sum(estimate_tokens(m["content"]) for rec in rundir.session_records(u.id).values() for m in rec["messages"])
            for u in env.users)
    usage = {r: (u.calls / n, u.prompt_tokens / n, u.completion_tokens / n) for r, u in llm.ledger.roles.items()}
    u0 = env.users[0]
    return {"preset": preset, "cfg": cfg.env, "measured_users": n, "periods": len(u0.periods),
            "questions": len(u0.qas), "n_s": len(u0.qas[0].required_info),
            "values": len(next(iter(u0.state_schema.values()))),
            "rounds": (cfg.env.num_rounds_init, cfg.env.num_rounds_update),
            **{k: statistics.mean(x[k] for x in per_user) for k in per_user[0]}, "usage": usage,
            "dialogue_tokens": dialogue}


def estimate(n_p: int, q: int, s0: float, sl: float, r0: int, r1: int, combos: float, *, window: int = 16128,
             system: int = 81, opening: int = 49, user_turn: int = 56, reply: int = 105, overall: int = 215,
             probe: int = 109, sim_system: int = 420) -> dict[str, float]:
    """Per-user calls and prompt tokens of a native-agent run, from the protocol (the formula of docs/tiers.md).

    Each agent reply sends the system prompt, the history so far (capped at ``window``) and the user
    turn; after each period, every question is asked twice (overall and probe) over the same history;
    the upper bound asks each (question, combination) once. ``s0``/``sl`` are sessions in period 0 and
    per later period, ``combos`` the distinct combinations per question; sizes are in tokens.
    """
    history = agent = calls = sim = sim_calls = 0.0
    for p in range(n_p + 1):
        sessions, rounds = (s0, r0) if p == 0 else (sl, r1)
        for k in range(1, rounds):
            sim += sessions * (sim_system + min(2 * k, 6) * (reply + user_turn) / 2)
            sim_calls += sessions
        # Replies within a period see a history that grows by one exchange each.
        for i in range(round(sessions * rounds)):
            turn = opening if i % rounds == 0 else user_turn
            agent += system + min(history, window) + turn
            calls += 1
            history += turn + reply
        agent += q * (2 * system + 2 * min(history, window) + overall + probe)
        calls += 2 * q
    agent += q * combos * (overall + 30)
    calls += q * combos
    return {"agent_calls": calls, "agent_prompt": agent, "simulator_calls": sim_calls, "simulator_prompt": sim}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--users", type=int, default=2)
    parser.add_argument("--presets", default=",".join(PRESETS))
    parser.add_argument("--reply-words", type=int, default=60)
    parser.add_argument("--sim-words", type=int, default=25)
    args = parser.parse_args()
    for preset in args.presets.split(","):
        try:
            m = asyncio.run(measure(preset, args.users, args.reply_words, args.sim_words))
        except ConfigError as exc:
            print(f"## {preset}: cannot be generated procedurally: {exc}")
            continue
        c = m["cfg"]
        print(f"## {preset}: {c.num_user_profiles} users (measured {m['measured_users']}), {m['periods']} periods, "
              f"Q={m['questions']}, N_s={m['n_s']}, values/var={m['values']}, rounds={m['rounds']}, "
              f"variables/user={m['variables']:.1f}, options/question={m['options']:.2f}, "
              f"sessions/user={m['sessions']:.1f} (period 0: {m['period0']:.1f}, later: {m['per_period']:.2f}), "
              f"messages/user={m['messages']:.0f}, dialogue tokens/user={m['dialogue_tokens']:,.0f}")
        for role, (calls, pt, ct) in sorted(m["usage"].items()):
            print(f"   {role:10s} per user: {calls:9.1f} calls {pt:13,.0f} prompt {ct:10,.0f} completion | "
                  f"tier: {pt * c.num_user_profiles:15,.0f} prompt {ct * c.num_user_profiles:12,.0f} completion")


if __name__ == "__main__":
    main()
