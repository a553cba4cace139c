"""What the evolver is told after a period: nothing, the questions, or the complete picture (docs/design.md §7).

Option numbers are 1-based and match the numbering the agent saw when it answered, so "you chose
option 2" in the feedback names the same text the agent picked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol

from ..errors import ConfigError
from ..families.statetrack.asking import choices_text
from ..families.statetrack.data.model import UserEnv
from ..prompts import render

FeedbackKind = Literal["none", "question-only", "complete"]
FEEDBACK_KINDS: tuple[str, ...] = ("none", "question-only", "complete")

#: Shown in place of a section a feedback kind withholds, so the evolver knows it is absent on purpose.
_WITHHELD = "(not shown in this feedback mode)"


@dataclass(frozen=True)
class RevealedFact:
    """A state value the user's sessions in a period exposed.

    Attributes:
        variable: the state variable.
        value: its value as revealed.
        previous: the value it replaced in this period, if it changed here.
    """

    variable: str
    value: str
    previous: str | None = None


def revealed_facts(user: UserEnv, period: int) -> list[RevealedFact]:
    """State values exposed by the period's sessions, in first-exposure order (last value wins)."""
    p = user.periods[period]
    values: dict[str, str] = {}
    for session in p.sessions:
        values.update(session.exposed_states)
    out = []
    for var, value in values.items():
        update = p.updates.get(var)
        out.append(RevealedFact(var, value, update.old if update is not None and update.new == value else None))
    return out


def _fact_line(fact: RevealedFact) -> str:
    change = f" (changed from {fact.previous})" if fact.previous else ""
    return f"- {fact.variable}: {fact.value}{change}"


def _graded_question(user: UserEnv, q: dict[str, Any]) -> str:
    qa = user.qas[q["question"]]
    chosen = f"option {q['choice']}" if q.get("choice") else f"no valid option (reply was {q.get('status')})"
    verdict = "right" if q.get("score") == 1.0 else "wrong"
    options = "\n".join(f"   {line}" for line in choices_text(qa).splitlines())
    return (f"Q{q['question'] + 1}. {qa.query}\n{options}\n"
            f"   The assistant chose {chosen}; the correct option was option {q['gold']} ({verdict}).")


class FeedbackBuilder(Protocol):
    """Turns a finished period into the evolver's input; None means "do not evolve"."""

    @property
    def kind(self) -> str:
        """The feedback kind's name (none, question-only, complete, or a user's own)."""
        ...

    def build(self, user: UserEnv, period: int, evaluation: dict[str, Any], memory: str) -> str | None:
        """Feedback text for ``period`` of ``user`` given its evaluation record and the memory view."""
        ...


@dataclass(frozen=True)
class NoFeedback:
    """The baseline: the policy never changes and no evolver call is made."""

    kind: str = "none"

    def build(self, user: UserEnv, period: int, evaluation: dict[str, Any], memory: str) -> str | None:
        """Always None."""
        return None


@dataclass(frozen=True)
class QuestionOnlyFeedback:
    """The period's questions (without options or grades) and the agent's memory."""

    kind: str = "question-only"

    def build(self, user: UserEnv, period: int, evaluation: dict[str, Any], memory: str) -> str | None:
        """Feedback text."""
        questions = "\n".join(f"Q{q['question'] + 1}. {user.qas[q['question']].query}"
                              for q in evaluation["questions"])
        return render("evolve_feedback", questions=questions, memory=memory or "(empty)", revealed=_WITHHELD)


@dataclass(frozen=True)
class CompleteFeedback:
    """Questions with numbered options, the agent's and the correct choice, the memory, revealed states."""

    kind: str = "complete"

    def build(self, user: UserEnv, period: int, evaluation: dict[str, Any], memory: str) -> str | None:
        """Feedback text."""
        questions = "\n\n".join(_graded_question(user, q) for q in evaluation["questions"])
        facts = "\n".join(_fact_line(f) for f in revealed_facts(user, period)) or "(nothing revealed)"
        return render("evolve_feedback", questions=questions, memory=memory or "(empty)", revealed=facts)


def feedback_builder(kind: str) -> FeedbackBuilder:
    """The built-in builder for ``kind`` (none, question-only, complete).

    Raises:
        ConfigError: for an unknown kind.
    """
    builders: dict[str, FeedbackBuilder] = {"none": NoFeedback(), "question-only": QuestionOnlyFeedback(),
                                            "complete": CompleteFeedback()}
    if kind not in builders:
        raise ConfigError(f"unknown feedback kind {kind!r}; choose one of {', '.join(FEEDBACK_KINDS)}")
    return builders[kind]
