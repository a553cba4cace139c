"""Putting the questions to a snapshot: one user at one period, plus the shared upper-bound answers."""

from __future__ import annotations

from typing import Any

from ...agents.base import AgentContext
from ...agents.registry import AgentSpec
from ...concurrency import gather_or_cancel
from ...llm.client import LLMClient
from ...seeding import derive_seed
from .asking import (
    option_score,
    overall_prompt,
    parse_answer,
    probe_prompt,
    score_overall,
    score_probe,
    upper_bound_prompt,
)
from .data.model import UserEnv


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
    """A JSON-safe key for a (question, combination) pair, one per pair: a value's own ``|`` and ``\\`` are
    escaped (``("x|y", "w")`` and ``("x", "y|w")`` must not share ``0|x|y|w``); a value without them is written
    as it is, so the keys of earlier runs stay valid."""
    return f"{q}|" + "|".join(v.replace("\\", "\\\\").replace("|", "\\|") for v in combo)


def upper_bound_key(user: UserEnv, period: int, q: int) -> str:
    """The upper-bound entry that scores question ``q`` at ``period``: the question with the period's values."""
    return combo_key(q, tuple(user.periods[period].state[v] for v in user.qas[q].required_info))


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
        return combo_key(q, combo), {"question": q, "state": list(combo), "prompt": prompt, "reply": res.text,
                                     **ans.to_dict(), "score": option_score(qa, ans.choice, list(combo)),
                                     "score_original_rule": option_score(qa, ans.original_choice, list(combo))}

    todo = [(q, c) for q, c in needed_combinations(user) if combo_key(q, c) not in done]
    results = await gather_or_cancel(*(one(q, c) for q, c in todo))
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

    async def one(q: int) -> dict[str, Any]:
        qa = user.qas[q]
        prompt = overall_prompt(qa)
        pprompt = probe_prompt(user, qa)
        reply, preply = await gather_or_cancel(agent.answer(prompt), agent.answer(pprompt))
        values, correct = score_probe(user, period, qa, preply)
        return {"prompt": prompt, **score_overall(user, period, q, reply, seed), "probe_prompt": pprompt,
                "probe_reply": preply, "probe_values": values, "probe_correct": correct}

    questions = await gather_or_cancel(*(one(q) for q in range(len(user.qas))))
    return {"user": user.id, "period": period, "questions": list(questions),
            "memory": agent.memory_view(), "agent_stats": agent.stats()}
