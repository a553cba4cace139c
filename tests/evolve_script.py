"""A scripted responder for self-evolution runs (tests only): agent, simulator, AWI writes, evolver, judge."""

from __future__ import annotations

import hashlib
import json
import re

from amemgym.families.statetrack.data.model import UserEnv
from amemgym.llm.types import ChatRequest
from amemgym.testing.run_script import RunScript
from amemgym.testing.scripted_model import last_user

EVOLVED_PREFIX = "Keep one note per life circumstance that shapes advice and rewrite it when it changes."


def evolved_policy(req: ChatRequest) -> str:
    """The policy the scripted evolver proposes: a pure function of the request (so resumes reproduce it)."""
    digest = hashlib.sha256(last_user(req).encode()).hexdigest()[:8]
    return f"{EVOLVED_PREFIX} Revision {digest}."


class EvolveScript:
    """Plays every role; ``policy_for(req)`` may override what the evolver proposes."""

    def __init__(self, user: UserEnv, policy_for=evolved_policy) -> None:
        self.run = RunScript(user)
        self.policy_for = policy_for

    def __call__(self, req: ChatRequest) -> str:
        text = last_user(req)
        if req.tag == "memory.awi_write":
            # Note only the latest user message, so memory (and recall) depends on the conversation.
            latest = re.findall(r"\] user: (.*)", text)
            return json.dumps({"updates": {"latest": latest[-1][:80] if latest else "nothing"}})
        if req.tag == "evolve.policy":
            return json.dumps({"changes": ["Asked for notes on every circumstance."], "policy": self.policy_for(req)})
        if req.tag == "judge.recall":
            ids = re.findall(r"^(F\d+)\. ", text, flags=re.M)
            return json.dumps({k: i % 2 == 0 for i, k in enumerate(ids)})
        return self.run(req)

