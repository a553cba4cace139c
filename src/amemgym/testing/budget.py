"""A scripted budget-family tool agent: one stand-in for the harness's text protocol, shared by the tests.

:class:`BudgetScript` answers each chat call of the budget harness as a careful agent would: on a document
event it writes ``writes_per_doc`` notes (the event's text, cut to ``note_chars``) and says ``done``; on a
question it submits the gold answer of the episodes it was given (``I don't know`` where there is none, or
for the domains listed in ``wrong_domains``). It learns which event it plays only from the prompts, as a
real agent would. A call outside any event (the tool probe of ``budget.tools=auto``) gets a prose reply,
so the harness picks the text protocol.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..llm.types import ChatRequest

if TYPE_CHECKING:
    from ..config import AppConfig
    from ..families.budget.model import Episode
    from ..llm.client import LLMClient

__all__ = ["OPENING", "BudgetScript", "client_factory", "tool_call", "write_episodes"]

#: The first line of every event's prompt: its index, the event count and the event kind.
OPENING = re.compile(r"Event (\d+) of \d+ \((\w+)\)")


def tool_call(tool: str, **args: object) -> str:
    """One call in the strict text protocol."""
    return json.dumps({"tool": tool, "args": args})


class BudgetScript:
    """Plays the budget harness's tool-agent seat for ``episodes`` (see the module docstring).

    Attributes:
        calls: chat calls per system prompt (one per domain), ``probe`` for calls outside an event.
        seeds: the sampling seeds the calls carried.
        kill_at: raise KeyboardInterrupt at this many calls (a kill in the middle of a run).
    """

    def __init__(self, episodes: Sequence[Episode], *, wrong_domains: tuple[str, ...] = (), writes_per_doc: int = 1,
                 note_chars: int = 300) -> None:
        self.golds = {q.text: (e.domain, q.gold) for e in episodes for q in e.questions}
        self.wrong = wrong_domains
        self.writes_per_doc = writes_per_doc
        self.note_chars = note_chars
        self.calls: Counter[str] = Counter()
        self.seeds: set[int | None] = set()
        self.kill_at: int | None = None

    def __call__(self, req: ChatRequest) -> str:
        if not any(OPENING.search(str(m["content"])) for m in req.messages):
            self.calls["probe"] += 1
            return "I have no function calls."
        self.calls[str(req.messages[0]["content"])] += 1
        self.seeds.add(req.seed)
        if self.kill_at is not None and sum(self.calls.values()) >= self.kill_at:
            raise KeyboardInterrupt
        opening = next(str(m["content"]) for m in reversed(req.messages) if OPENING.search(str(m["content"])))
        kind = OPENING.search(opening).group(2)  # type: ignore[union-attr]
        start = next(i for i, m in enumerate(req.messages) if m["content"] == opening)
        steps = sum(1 for m in req.messages[start:] if m["role"] == "assistant")
        if kind == "question":
            domain, gold = next((v for t, v in self.golds.items() if t in opening), ("", None))
            if domain in self.wrong or gold is None:
                return tool_call("submit_answer", answer="I don't know")
            return tool_call("submit_answer", answer=str(gold))
        if kind == "documents" and steps < self.writes_per_doc:
            return tool_call("write", text=opening[-self.note_chars:])
        return tool_call("done")

    def body_reply(self, body: dict[str, Any]) -> str:
        """The same reply for a raw chat-completions body (a :class:`~amemgym.testing.FakeEndpoint` responder)."""
        return self(ChatRequest(role="agent", messages=tuple(body["messages"]), seed=body.get("seed")))

    def domain_calls(self, domain: str) -> int:
        """Chat calls made for episodes of ``domain``."""
        return sum(n for system, n in self.calls.items() if f" {domain}" in system)


def client_factory(script: BudgetScript) -> Callable[[AppConfig], LLMClient]:
    """A ``make_client`` for a budget run: every run role is answered by ``script``."""
    from ..llm.client import LLMClient
    from .scripted_model import ScriptedBackend

    return lambda cfg: LLMClient(backends={"agent": ScriptedBackend(script)})


def write_episodes(root: Path, specs: Sequence[tuple[str, str, int]]) -> list[Episode]:
    """Generate ``(tier, domain, seed)`` episodes into ``root/<domain>/seed<N>/data.json``; the episodes."""
    from ..families.budget.generate import build_episode
    from ..families.budget.io import save_episode

    out = []
    for tier, domain, seed in specs:
        ep = build_episode(tier, domain, seed)
        save_episode(ep, root / domain / f"seed{seed}" / "data.json")
        out.append(ep)
    return out
