"""Evaluation of one user at one period, from a snapshot, plus the shared upper-bound answers (SPEC §5)."""

from __future__ import annotations

import asyncio
from typing import Any

from ..agents.base import AgentContext
from ..agents.registry import AgentSpec
from ..data.model import UserEnv
from ..evaluate.asking import overall_prompt, parse_answer, parse_probe, probe_prompt, upper_bound_prompt
from ..llm.client import LLMClient
from ..seeding import derive_seed


def needed_combinations(user: UserEnv) -> list[tuple[int, tuple[str, ...]]]:
    """Every distinct (question, value combination) that holds at some period, in a stable order."""
    seen: list[tuple[int, tuple[str, ...]]] = []
    for q, qa in enumerate(user.qas):
        for period in user.periods:
            combo = tuple(period.state[v] for v in qa.required_info)
            if (q, combo) not in seen:
                seen.append((q, combo))
    return seen


def combo_key(q: int, combo: tuple[str, ...]) -> str:
    """A JSON-safe key for a (question, combination) pair."""
    return f"{q}|" + "|".join(combo)


async def upper_bound_answers(
    llm: LLMClient, user: UserEnv, done: dict[str, Any], max_tokens: int, seed: int
) -> dict[str, Any]:
    """Ask the bare model each needed (question, combination) once; ``done`` holds earlier results."""

    async def one(q: int, combo: tuple[str, ...]) -> tuple[str, dict[str, Any]]:
        qa = user.qas[q]
        prompt = upper_bound_prompt(qa, combo)
        res = await llm.chat("agent", [{"role": "user", "content": prompt}], max_tokens=max_tokens,
                             tag="eval.upper_bound")
        ans = parse_answer(res.text, len(qa.answer_choices), derive_seed(seed, "ub", q, *combo))
        ok = ans.choice is not None and tuple(qa.answer_choices[ans.choice - 1].state) == combo
        return combo_key(q, combo), {"question": q, "state": list(combo), "prompt": prompt, "reply": res.text,
                                     **ans.to_dict(), "score": 1.0 if ok else 0.0}

    todo = [(q, c) for q, c in needed_combinations(user) if combo_key(q, c) not in done]
    results = await asyncio.gather(*(one(q, c) for q, c in todo))
    return {**done, **dict(results)}


async def evaluate_period(
    llm: LLMClient,
    spec: AgentSpec,
    ctx: AgentContext,
    user: UserEnv,
    period: int,
    snapshot: dict[str, Any],
    seed: int,
) -> dict[str, Any]:
    """Ask every question and probe on a fresh agent restored from ``snapshot``; the live agent is untouched."""
    agent = spec.build(llm, ctx)
    agent.restore(snapshot)
    state = user.periods[period].state

    async def one(q: int) -> dict[str, Any]:
        qa = user.qas[q]
        prompt = overall_prompt(qa)
        pprompt = probe_prompt(user, qa)
        reply, preply = await asyncio.gather(agent.answer(prompt), agent.answer(pprompt))
        ans = parse_answer(reply, len(qa.answer_choices), derive_seed(seed, "overall", period, q))
        gold = user.correct_choice(q, period) + 1
        picked_state = qa.answer_choices[ans.choice - 1].state if ans.choice else None
        fb_state = qa.answer_choices[ans.fallback_choice - 1].state
        probe = parse_probe(preply, user, qa)
        return {
            "question": q, "prompt": prompt, "reply": reply, **ans.to_dict(), "gold": gold,
            "n_choices": len(qa.answer_choices),
            "score": 1.0 if picked_state == [state[v] for v in qa.required_info] else 0.0,
            "score_with_random_fallback": 1.0 if fb_state == [state[v] for v in qa.required_info] else 0.0,
            "probe_prompt": pprompt, "probe_reply": preply, "probe_values": probe,
            "probe_correct": {v: probe[v] == state[v] for v in qa.required_info},
        }

    questions = await asyncio.gather(*(one(q) for q in range(len(user.qas))))
    return {"user": user.id, "period": period, "questions": list(questions),
            "memory": agent.memory_view(), "agent_stats": agent.stats()}
