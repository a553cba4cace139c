"""The optional judge: a second verdict, by another model, on answers the rule checker marks wrong.

Only wrong answers that commit to something are sent: never a skipped question, a refusal, an answer that
lists several candidates, or an abstention question (whose right answer is a refusal, which the rules check
exactly). The rule verdicts stay the headline; the judge's only ever add correct answers to a second score
(docs/budget.md, "Optional judge").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...concurrency import gather_or_cancel
from ...errors import ConfigError, MalformedOutput
from ...llm.client import LLMClient
from ...prompts import render
from .checker import Verdict, is_refusal
from .model import Episode, Question

SCHEMA: dict[str, Any] = {"type": "object", "additionalProperties": False, "required": ["correct", "why"],
                          "properties": {"correct": {"type": "boolean"}, "why": {"type": "string"}}}


@dataclass(frozen=True)
class JudgeVerdict:
    """The judge's opinion of one answer (``error`` set when no opinion could be had)."""

    correct: bool
    why: str
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {"correct": self.correct, "why": self.why, "error": self.error}


def judgeable(question: Question, reply: str | None, verdict: Verdict) -> bool:
    """Whether an answer goes to the judge: wrong by the rules, committed, not a refusal, not an abstention."""
    return (not verdict.correct and bool(reply and reply.strip()) and not verdict.abstained and not verdict.listed
            and question.answer_type != "refuse" and not is_refusal(reply or ""))


async def judge_identity(llm: LLMClient) -> str:
    """The judge role's served model, after checking that it is not the model under test.

    Raises:
        ConfigError: when the judge role resolves to the agent's endpoint and served model.
    """
    described = llm.describe()
    if described["agent"]["backend"] == "embedded" and described["judge"]["backend"] == "embedded":
        raise ConfigError("the judge role resolves to the embedded model, which is also the model under test; "
                          "give the judge its own endpoint or model (--judge-model, llm.roles.judge)")
    agent, judge = await llm.backend("agent"), await llm.backend("judge")
    served_agent, served_judge = await llm.model_identity("agent"), await llm.model_identity("judge")
    if (agent.backend_id, served_agent) == (judge.backend_id, served_judge):
        raise ConfigError(f"the judge role resolves to the model under test ({served_judge!r} at "
                          f"{judge.backend_id}); the judge must be another model (--judge-model, llm.roles.judge)")
    return served_judge


async def judge_answers(llm: LLMClient, episode: Episode, answers: Mapping[str, str | None],
                        verdicts: Mapping[str, Verdict]) -> dict[str, JudgeVerdict]:
    """The judge's verdict on every judgeable answer (question id -> verdict)."""
    todo = [q for q in episode.questions if judgeable(q, answers.get(q.id), verdicts[q.id])]

    async def one(q: Question) -> JudgeVerdict:
        prompt = render("budget_judge", question=q.text, gold=str(q.gold), reply=answers.get(q.id) or "")
        try:
            value, _ = await llm.chat_json("judge", [{"role": "user", "content": prompt}], SCHEMA, check=_shape,
                                           schema_name="verdict", max_tokens=128, tag="budget.judge")
        except MalformedOutput as exc:  # the judge model's own replies: its verdict is an error, for good
            return JudgeVerdict(False, "", error=str(exc))
        # Any other failure is the endpoint's: it ends the episode unfinished, so that a re-run judges again
        # (the played episode comes back from its checkpoint) instead of keeping "no judged score" for good.
        return JudgeVerdict(bool(value["correct"]), str(value["why"]))

    return dict(zip([q.id for q in todo], await gather_or_cancel(*(one(q) for q in todo)), strict=True))


def _shape(value: Any) -> str | None:
    if isinstance(value, dict) and isinstance(value.get("correct"), bool) and isinstance(value.get("why"), str):
        return None
    return 'expected {"correct": true or false, "why": "..."}'


def merged(verdicts: Mapping[str, Verdict], judged: Mapping[str, JudgeVerdict]) -> dict[str, Verdict]:
    """The rule verdicts with the answers the judge found right counted right."""
    out = dict(verdicts)
    for qid, jv in judged.items():
        if jv.correct and jv.error is None:
            out[qid] = Verdict(True, f"judge: {jv.why}")
    return out
