"""Step 6: answer choices per question, and the reflection check that each answer betrays its combination."""

from __future__ import annotations

from itertools import product
from typing import Any

from ...data import QA, AnswerChoice
from .base import GenContext, StepFailure, ask_json, gather_in_order
from .formats import (
    arr,
    combination_text,
    integer,
    named_values,
    numbered_combinations,
    obj,
    plain_combination,
    string,
    unquote,
)
from .records import AnswersOut, FinalQuestion

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


def check_answers(value: dict[str, Any], k: int) -> str | None:
    """Exactly ``k`` answers; the rules on each text are checked, and repaired, one answer at a time."""
    n = len(value["answers"])
    return None if n == k else f"write exactly {k} answers, one per combination, in order; got {n}"


def check_answer_text(text: str, values: list[str]) -> str | None:
    """A problem with one answer text (too long, or it quotes value names), or None."""
    if len(text.split()) > MAX_ANSWER_WORDS:
        return f"is longer than {MAX_ANSWER_WORDS} words; keep it to 2-3 sentences"
    quoted = named_values(text, values)
    if quoted:
        return f"quotes the value name(s) {', '.join(quoted)}; describe the situation in plain words instead"
    return None


def answer_problem(text: str, values: list[str], others: list[str]) -> str | None:
    """:func:`check_answer_text`, plus: not identical to an answer of another combination."""
    if text in others:
        return "it is identical to the answer for another situation; each situation needs its own advice"
    return check_answer_text(text, values)


async def _fix(ctx: GenContext, qi: int, i: int, qa: FinalQuestion, combo: list[str], values: list[str],
               draft: str, others: list[str]) -> str:
    """A draft answer that broke a rule, written again on its own (small models manage one where a batch fails).

    The broken draft is not shown: small models copy it back. If no rewrite passes, non-strict generation
    keeps the draft made valid by :func:`patch_answer` and lists it as unverified.
    """
    where = f"question {qi + 1}, choice {i + 1}"
    situation = plain_combination(qa.required_info, combo)
    try:
        value = await ask_json(
            ctx, "answers.fix", "gen_answer_single", obj(answer=string()),
            lambda v: answer_problem(v["answer"].strip(), values, others), max_tokens=200, key=(qi, i),
            question=qa.query, target=situation,
            others="\n".join(f'  - "{o}"' for o in others) or "  (none yet)",
        )
    except StepFailure as exc:
        ctx.keep_unverified("answers.fix", (qi, i, 0), f"{where}: no valid rewrite ({exc.reason}); the draft was "
                                                      "prefixed with its situation in plain words")
        return patch_answer(draft, situation, values)
    return str(value["answer"]).strip()


def patch_answer(draft: str, situation: str, values: list[str]) -> str:
    """``draft`` made valid without a model: value names put in plain words, the situation stated up front.

    The situation is unique to the choice, so the result differs from every other choice's answer.
    """
    words = unquote(draft, values).split()[: MAX_ANSWER_WORDS - len(situation.split()) - 3]
    return f"For someone with {situation}: {' '.join(words)}"


async def _classify(ctx: GenContext, qi: int, i: int, r: int, query: str, answer: str, combos_text: str, k: int
                    ) -> int | str:
    """The combination (1-based) the classifier picks, or why it gave no usable reply."""
    try:
        value = await ask_json(
            ctx, "answers.reflection", "gen_reflection", obj(choice=integer(list(range(1, k + 1)))), None,
            max_tokens=20, key=(qi, i, r), count_unit=False, question=query, answer=answer, combinations=combos_text,
        )
    except StepFailure as exc:
        return exc.reason
    return int(value["choice"])


async def _settle(
    ctx: GenContext, qi: int, i: int, qa: FinalQuestion, drafts: list[str], combos: list[list[str]], values: list[str]
) -> str:
    """The draft of choice ``i`` once the classifier maps it to combination ``i``, refined until it does.

    When the refinements run out, :meth:`GenContext.give_up` decides: the user fails (strict) or the last
    answer is kept and listed as unverified.
    """
    stats = ctx.step("answers.reflection")
    answer, others_text = drafts[i], drafts[:i] + drafts[i + 1:]
    variables = qa.required_info
    combos_text = numbered_combinations(variables, combos)
    where = f"question {qi + 1}, choice {i + 1}"
    picked = await _classify(ctx, qi, i, 0, qa.query, answer, combos_text, len(combos))
    if picked == i + 1:
        stats.add_unit("first_try")
        return answer
    if isinstance(picked, str):
        ctx.give_up("answers.reflection", (qi, i, 1), f"{where}: the classifier gave no usable reply ({picked})")
        return answer
    others = [c for j, c in enumerate(combos) if j != i]
    for r in range(1, ctx.limits.refinements + 1):
        try:
            value = await ask_json(
                ctx, "answers.refine", "gen_refine_answer", obj(answer=string()),
                lambda v: answer_problem(v["answer"].strip(), values, others_text), max_tokens=200, key=(qi, i, r),
                question=qa.query, answer=answer, target=combination_text(variables, combos[i]),
                confused=combination_text(variables, combos[picked - 1]),
                others="\n".join(f"- {combination_text(variables, c)}" for c in others),
            )
        except StepFailure as exc:
            ctx.give_up("answers.reflection", (qi, i, 1), f"{where}: no usable refinement ({exc.reason})")
            return answer
        answer = value["answer"].strip()
        picked = await _classify(ctx, qi, i, r, qa.query, answer, combos_text, len(combos))
        if picked == i + 1:
            stats.add_unit("after_retry")
            return answer
        if isinstance(picked, str):
            ctx.give_up("answers.reflection", (qi, i, 1), f"{where}: the classifier gave no usable reply ({picked})")
            return answer
    ctx.give_up("answers.reflection", (qi, i, 1),
                f"{where}: the classifier still picks choice {picked} after {ctx.limits.refinements} refinements")
    return answer


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
        ctx, "answers.write", "gen_answers", obj(answers=arr(string(), k, k)), lambda v: check_answers(v, k),
        max_tokens=40 + 130 * k, key=(qi,), question=qa.query, combinations=numbered_combinations(
            qa.required_info, combos), num_answers=k,
    )
    drafts = [a.strip() for a in value["answers"]]
    for i in range(k):  # in order, so that a rewrite is compared with the answers already settled
        if answer_problem(drafts[i], values, drafts[:i]):
            drafts[i] = await _fix(ctx, qi, i, qa, combos[i], values, drafts[i], drafts[:i])
    settled = await gather_in_order(_settle(ctx, qi, i, qa, drafts, combos, values) for i in range(k))
    seen: set[str] = set()
    for i, answer in enumerate(settled):
        if answer in seen:  # two refinements, made side by side, converged on the same text
            ctx.keep_unverified("answers.reflection", (qi, i, 2), f"question {qi + 1}, choice {i + 1}: refined "
                                "into another choice's answer; prefixed with its situation in plain words")
            settled[i] = patch_answer(answer, plain_combination(qa.required_info, combos[i]), values)
        seen.add(settled[i])
    return QA(
        query=qa.query, required_info=list(qa.required_info),
        answer_choices=[AnswerChoice(state=c, answer=a, type=t)  # type: ignore[arg-type]
                        for (c, t), a in zip(variants, settled, strict=True)],
    )


async def run_answers(
    ctx: GenContext, questions: list[FinalQuestion], schema: dict[str, list[str]], states: list[dict[str, str]]
) -> AnswersOut:
    """Answer choices for every question; ``states`` are the states of periods 0..N_p."""
    qas = await gather_in_order(_question(ctx, qi, qa, schema, states) for qi, qa in enumerate(questions))
    return AnswersOut(qas=qas, unverified=ctx.unverified_list())
