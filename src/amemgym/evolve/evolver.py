"""The evolver: the agent's own model rewrites its policy from feedback (docs/design.md §7)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from ..llm.client import LLMClient
from ..llm.parsing import parse_json_reply
from ..prompts import render

PROPOSAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "changes": {"type": "array", "items": {"type": "string"}},
        "policy": {"type": "string"},
    },
    "required": ["changes", "policy"],
    "additionalProperties": False,
}


@dataclass(frozen=True)
class Proposal:
    """What the evolver returned.

    Attributes:
        policy: the proposed policy text, or None when no usable reply came back.
        changes: the evolver's own list of what it changed.
        problem: why there is no usable proposal (malformed replies), else None.
    """

    policy: str | None
    changes: list[str] = field(default_factory=list)
    problem: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return asdict(self)


class Evolver(Protocol):
    """Proposes a new policy from the current one and the period's feedback."""

    async def propose(self, policy: str, feedback: str, *, seed: int) -> Proposal:
        """A proposal; a malformed model reply is a Proposal with ``problem`` set, not an exception."""
        ...


def proposal_problem(value: Any) -> str | None:
    """Problem with an evolver reply, or None."""
    if not isinstance(value, dict) or set(value) != {"policy", "changes"}:
        return "expected an object with exactly 'policy' and 'changes'"
    if not isinstance(value["policy"], str):
        return "'policy' must be text"
    if not isinstance(value["changes"], list) or not all(isinstance(c, str) for c in value["changes"]):
        return "'changes' must be a list of texts"
    return None


class LLMEvolver:
    """Asks a model (by default the ``memory`` role: the agent's own model) for a rewritten policy.

    A reply that breaks the schema is retried with another seed; when every attempt is malformed the
    proposal records the problem (the model under test failed to evolve, which is data). A failed call
    (endpoint down after retries) raises :class:`amemgym.errors.LLMError` so a re-run retries it.

    Args:
        llm: the client.
        role: the role the evolver's calls are made and counted under.
        max_tokens: reply budget.
        attempts: tries before giving up on a malformed reply.
        max_chars: policy length limit stated to the model (the acceptance check enforces it).
    """

    def __init__(self, llm: LLMClient, *, role: str = "memory", max_tokens: int = 768, attempts: int = 2,
                 max_chars: int = 2000) -> None:
        self.llm = llm
        self.role = role
        self.max_tokens = max_tokens
        self.attempts = attempts
        self.max_chars = max_chars

    async def propose(self, policy: str, feedback: str, *, seed: int) -> Proposal:
        """Ask for a rewrite of ``policy`` given ``feedback``."""
        messages = [
            {"role": "system", "content": render("evolve_system", max_chars=self.max_chars)},
            {"role": "user", "content": render("evolve_request", policy=policy, feedback=feedback)},
        ]
        problem: str | None = "no attempt made"
        for i in range(self.attempts):
            res = await self.llm.chat(self.role, messages, json_schema=PROPOSAL_SCHEMA, schema_name="evolve_policy",
                                      seed=seed + 7919 * i, temperature=0.0 if i == 0 else 0.5,
                                      max_tokens=self.max_tokens, tag="evolve.policy")
            value = parse_json_reply(res.text)
            problem = "reply is not valid JSON" if value is None else proposal_problem(value)
            if problem is None and value is not None:
                return Proposal(value["policy"].strip(), [c.strip() for c in value["changes"] if c.strip()])
            self.llm.ledger.role(self.role).schema_retries += 1
        return Proposal(None, [], f"evolver gave no valid reply after {self.attempts} attempts: {problem}")
