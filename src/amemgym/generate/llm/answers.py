"""Step 6: answer choices per question, and the reflection check that each answer betrays its combination."""

from __future__ import annotations

from itertools import product
from typing import Any

from ...data import QA, AnswerChoice
from .base import GenContext, StepFailure, ask_json, gather_in_order
from .formats import arr, combination_text, integer, named_values, numbered_combinations, obj, string
from .records import FinalQuestion

MAX_ANSWER_WORDS = 120


def answer_variants(
    required: list[str], schema: dict[str, list[str]], states: list[dict[str, str]], min_variants: int,
    rng: Any,
) -> list[tuple[list[str], str]]:
    """The value combinations a question's choices cover, with their type, in a seeded order.

    Every combination that occurs in some period is an ``experience`` choice; unused combinations drawn
    at random (``random``) pad the list to ``min_variants`` when the value space allows it.
    """
    experience = list(dict.fromkeys(tuple(s[v] for v in required) for s in states))
    seen = set(experience)
    space = list(product(*(schema[v] for v in required)))
    unused = [c for c in space if c not in seen]
    padding = rng.sample(unused, max(0, min(min_variants, len(space)) - len(experience)))
    combos = [(list(c), "experience") for c in experience] + [(list(c), "random") for c in padding]
    rng.shuffle(combos)
    return combos


def check_answers(value: dict[str, Any], k: int, values: list[str]) -> str | None:
    """``k`` distinct answers of reasonable length that do not quote value names."""
    answers = [a.strip() for a in value["answers"]]
    if len(answers) != k:
        return f"write exactly {k} answers, one per combination, in order; got {len(answers)}"
    if len(set(answers)) != k:
        return "two answers are identical; each combination needs its own advice"
    for i, a in enumerate(answers, start=1):
        problem = check_answer_text(a, values)
        if problem:
            return f"answer {i}: {problem}"
    return None


def check_answer_text(text: str, values: list[str]) -> str | None:
    """A problem with one answer text (too long, or it quotes value names), or None."""
    if len(text.split()) > MAX_ANSWER_WORDS:
        return f"is longer than {MAX_ANSWER_WORDS} words; keep it to 2-3 sentences"
    quoted = named_values(text, values)
    if quoted:
        return f"quotes the value name(s) {', '.join(quoted)}; describe the situation in plain words instead"
    return None


async def _classify(ctx: GenContext, qi: int, i: int, r: int, query: str, answer: str, combos_text: str, k: int
                    ) -> int:
    value = await ask_json(
        ctx, "answers.reflection", "gen_reflection", obj(choice=integer(list(range(1, k + 1)))), None,
        max_tokens=20, key=(qi, i, r), count_unit=False, question=query, answer=answer, combinations=combos_text,
    )
    return int(value["choice"])


async def _settle(
    ctx: GenContext, qi: int, i: int, qa: FinalQuestion, answer: str, combos: list[list[str]], values: list[str]
) -> str:
    """Return ``answer`` once the classifier maps it to combination ``i``, refining it when it does not."""
    try:
        return await _settle_once(ctx, qi, i, qa, answer, combos, values)
    except StepFailure:
        ctx.step("answers.reflection").add_unit("failed")
        raise


async def _settle_once(
    ctx: GenContext, qi: int, i: int, qa: FinalQuestion, answer: str, combos: list[list[str]], values: list[str]
) -> str:
    stats = ctx.step("answers.reflection")
    variables = qa.required_info
    combos_text = numbered_combinations(variables, combos)
    picked = await _classify(ctx, qi, i, 0, qa.query, answer, combos_text, len(combos))
    if picked == i + 1:
        stats.add_unit("first_try")
        return answer
    for r in range(1, ctx.limits.refinements + 1):
        others = [c for j, c in enumerate(combos) if j != i]
        value = await ask_json(
            ctx, "answers.refine", "gen_refine_answer", obj(answer=string()),
            lambda v: check_answer_text(v["answer"].strip(), values), max_tokens=200, key=(qi, i, r),
            question=qa.query, answer=answer, target=combination_text(variables, combos[i]),
            confused=combination_text(variables, combos[picked - 1]),
            others="\n".join(f"- {combination_text(variables, c)}" for c in others),
        )
        answer = value["answer"].strip()
        picked = await _classify(ctx, qi, i, r, qa.query, answer, combos_text, len(combos))
        if picked == i + 1:
            stats.add_unit("after_retry")
            return answer
    raise StepFailure(
        "answers.reflection",
        f"question {qi + 1}, choice {i + 1}: the classifier still picks choice {picked} after "
        f"{ctx.limits.refinements} refinements",
    )


async def _question(
    ctx: GenContext, qi: int, qa: FinalQuestion, schema: dict[str, list[str]], states: list[dict[str, str]]
) -> QA:
    variants = answer_variants(
        qa.required_info, schema, states, ctx.cfg.min_state_variants, ctx.rng("answers.variants", qi)
    )
    combos = [c for c, _ in variants]
    k = len(combos)
    values = sorted({v for var in qa.required_info for v in schema[var]})
    value = await ask_json(
        ctx, "answers.write", "gen_answers", obj(answers=arr(string(), k, k)), lambda v: check_answers(v, k, values),
        max_tokens=40 + 130 * k, key=(qi,), question=qa.query, combinations=numbered_combinations(
            qa.required_info, combos), num_answers=k,
    )
    drafts = [a.strip() for a in value["answers"]]
    settled = await gather_in_order(
        _settle(ctx, qi, i, qa, a, combos, values) for i, a in enumerate(drafts)
    )
    return QA(
        query=qa.query, required_info=list(qa.required_info),
        answer_choices=[AnswerChoice(state=c, answer=a, type=t)  # type: ignore[arg-type]
                        for (c, t), a in zip(variants, settled, strict=True)],
    )


async def run_answers(
    ctx: GenContext, questions: list[FinalQuestion], schema: dict[str, list[str]], states: list[dict[str, str]]
) -> list[QA]:
    """Answer choices for every question; ``states`` are the states of periods 0..N_p."""
    return await gather_in_order(_question(ctx, qi, qa, schema, states) for qi, qa in enumerate(questions))
