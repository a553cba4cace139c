"""A script that plays every role of a run against a known environment, for the scripted model."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from amemgym.families.statetrack.data.model import UserEnv
from amemgym.llm.types import ChatRequest

from .scripted_model import last_user

_TIME = re.compile(r"\[Current Time: ([0-9-]+ [0-9:]+)\]")


def period_of(user: UserEnv, req: ChatRequest) -> int:
    """The period the conversation in ``req`` has reached (from the latest time prefix seen)."""
    times = [t for m in req.messages if m["role"] != "system" for t in _TIME.findall(m["content"])]
    if not times:
        return 0
    latest = max(times)
    for p, period in enumerate(user.periods):
        if any(s.session_time == latest for s in period.sessions):
            return p
    return 0


def question_of(user: UserEnv, text: str) -> int | None:
    """Which question an evaluation prompt asks."""
    for q, qa in enumerate(user.qas):
        if text.startswith(qa.query):
            return q
    return None


class RunScript:
    """Replies for agent, simulator and upper-bound calls.

    ``picks[(period, question)]`` is the value combination the agent's answer should point at and
    ``probes[(period, question)]`` the values its probe reply names; by default the agent is perfect.
    """

    def __init__(self, user: UserEnv, picks: dict | None = None, probes: dict | None = None) -> None:
        self.user = user
        self.picks = picks or {}
        self.probes = probes or {}

    def __call__(self, req: ChatRequest) -> str:
        text = last_user(req)
        if req.role == "simulator":
            return "Thanks, can you make that more concrete for me?"
        if req.tag == "eval.upper_bound":
            q = question_of(self.user, text)
            assert q is not None
            qa = self.user.qas[q]
            state = dict(re.findall(r"^- (\w+): (\w+)$", text, flags=re.M))
            combo = [state[v] for v in qa.required_info]
            return json.dumps({"answer": [c.state for c in qa.answer_choices].index(combo) + 1})
        if req.tag == "agent.answer":
            p = period_of(self.user, req)
            if text.startswith("Based only on what you know"):
                q = next(i for i, qa in enumerate(self.user.qas)
                         if all(f"- {v}:" in text for v in qa.required_info))
                truth = self.user.periods[p].state
                vals = self.probes.get((p, q)) or {v: truth[v] for v in self.user.qas[q].required_info}
                return json.dumps(vals)
            q = question_of(self.user, text)
            assert q is not None
            qa = self.user.qas[q]
            truth = self.user.periods[p].state
            combo = self.picks.get((p, q)) or [truth[v] for v in qa.required_info]
            answer = [c.state for c in qa.answer_choices].index(list(combo)) + 1
            return "```json\n" + json.dumps({"answer": answer}) + "\n```"
        return "Here is a short, practical suggestion."


def responder_for(user: UserEnv, **kwargs: object) -> Callable[[ChatRequest], str]:
    """Convenience constructor."""
    return RunScript(user, **kwargs)  # type: ignore[arg-type]
