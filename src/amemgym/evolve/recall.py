"""Memory factual recall: the share of facts revealed in a period that the agent's memory supports (docs/design.md §7).

One judge call per (user, period) lists every revealed fact under an id and must return a boolean per id.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from ..llm.client import LLMClient
from ..prompts import render
from ..textsim import plain
from .feedback import RevealedFact


@dataclass(frozen=True)
class RecallResult:
    """The judge's verdicts for one period.

    Attributes:
        facts: one entry per revealed fact: id, variable, value, supported.
        supported: how many the memory supports.
        revealed: how many were revealed.
        recall: supported / revealed, or None when nothing was revealed.
    """

    facts: list[dict[str, Any]]
    supported: int
    revealed: int
    recall: float | None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return asdict(self)


class RecallJudge(Protocol):
    """Decides which revealed facts a memory supports."""

    async def judge(self, facts: list[RevealedFact], memory: str, *, seed: int) -> list[bool]:
        """One verdict per fact, in order."""
        ...


def fact_id(i: int) -> str:
    """The id of the i-th fact (0-based) as shown to the judge."""
    return f"F{i + 1}"


def recall_schema(n: int) -> dict[str, Any]:
    """One required boolean per fact id, nothing else."""
    ids = [fact_id(i) for i in range(n)]
    return {"type": "object", "properties": {k: {"type": "boolean"} for k in ids}, "required": ids,
            "additionalProperties": False}


class LLMRecallJudge:
    """A model judge (role ``judge`` by default) for recall.

    Args:
        llm: the client.
        role: the role the calls are made and counted under.
        max_tokens: reply budget (grows with the number of facts).
    """

    def __init__(self, llm: LLMClient, *, role: str = "judge", max_tokens: int = 64) -> None:
        self.llm = llm
        self.role = role
        self.max_tokens = max_tokens

    async def judge(self, facts: list[RevealedFact], memory: str, *, seed: int) -> list[bool]:
        """Verdicts in one structured call.

        Raises:
            LLMError: when the judge gives no valid verdicts (the judge is not the agent under test).
        """
        if not facts:
            return []
        ids = [fact_id(i) for i in range(len(facts))]
        lines = "\n".join(f"{k}. {plain(f.variable)}: {plain(f.value)}" for k, f in zip(ids, facts, strict=True))
        prompt = render("judge_recall", memory=memory.strip() or "(empty)", facts=lines,
                        example=json.dumps({k: True for k in ids[:2]}))

        def check(value: Any) -> str | None:
            if not isinstance(value, dict):
                return "expected an object of booleans"
            missing = [k for k in ids if not isinstance(value.get(k), bool)]
            return f"no boolean verdict for {', '.join(missing)}" if missing else None

        value, _ = await self.llm.chat_json(self.role, [{"role": "user", "content": prompt}], recall_schema(len(ids)),
                                            check=check, schema_name="recall_verdicts", seed=seed, temperature=0.0,
                                            max_tokens=self.max_tokens + 8 * len(ids), tag="judge.recall")
        return [bool(value[k]) for k in ids]


async def memory_recall(judge: RecallJudge, facts: list[RevealedFact], memory: str, *, seed: int) -> RecallResult:
    """Judge ``facts`` against ``memory`` and compute recall."""
    verdicts = await judge.judge(facts, memory, seed=seed)
    rows = [{"id": fact_id(i), "variable": f.variable, "value": f.value, "supported": ok}
            for i, (f, ok) in enumerate(zip(facts, verdicts, strict=True))]
    supported = sum(verdicts)
    return RecallResult(rows, supported, len(facts), supported / len(facts) if facts else None)
