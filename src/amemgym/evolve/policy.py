"""The evolvable memory policy: who holds it, and when a proposed rewrite is safe to use (docs/design.md §7)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from ..errors import PromptError
from ..prompts import render


@runtime_checkable
class PolicyHolder(Protocol):
    """An agent whose memory-writing prompt has a replaceable policy section (AWI does).

    The policy must travel in the agent's snapshot so a resumed run continues with the text in force.
    """

    policy: str


@dataclass(frozen=True)
class PolicyLimits:
    """What a policy text may be.

    Attributes:
        max_chars: longest accepted policy; a runaway rewrite would crowd the write prompt.
        min_chars: shortest accepted policy (after stripping).
    """

    max_chars: int = 2000
    min_chars: int = 20
    copied_line_chars: int = 40


def copied_line(policy: str, feedback: str, min_chars: int) -> str | None:
    """The first feedback line of at least ``min_chars`` characters that ``policy`` repeats verbatim."""
    for line in feedback.splitlines():
        line = line.strip()
        if len(line) >= min_chars and line in policy:
            return line
    return None


def policy_problem(text: object, limits: PolicyLimits, feedback: str | None = None) -> str | None:
    """Why ``text`` cannot serve as the write prompt's policy section, or None when it can.

    With ``feedback``, a policy that pastes feedback lines is refused: small models tend to copy the
    questions and graded answers instead of describing what to keep, which would put evaluation material
    into every later memory write.
    """
    if not isinstance(text, str):
        return "policy is not text"
    stripped = text.strip()
    if len(stripped) < limits.min_chars:
        return f"policy is empty or shorter than {limits.min_chars} characters"
    if len(stripped) > limits.max_chars:
        return f"policy is {len(stripped)} characters, over the limit of {limits.max_chars}"
    if "${" in stripped:
        # Rendering would not expand it, but a template placeholder in the policy means the rewrite
        # copied prompt machinery instead of describing what to keep.
        return "policy contains a template placeholder ('${')"
    copied = copied_line(stripped, feedback, limits.copied_line_chars) if feedback else None
    if copied is not None:
        return f"policy copies the feedback verbatim ({copied[:60]!r})"
    try:
        render("agent_awi_write", policy=stripped, time="2000-01-01 00:00", memory="{}", messages="(none)")
    except PromptError as exc:
        return f"policy breaks the write prompt: {exc}"
    return None
