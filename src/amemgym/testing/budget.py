"""A scripted budget-family tool agent: one stand-in for the harness's text protocol, shared by the tests.

:class:`BudgetScript` answers each chat call of the budget harness as a careful agent would: on a document
event it writes ``writes_per_doc`` notes (the event's text, cut to ``note_chars``) and says ``done``; on a
question it submits the gold answer of the episodes it was given (``I don't know`` where there is none, or
for the domains listed in ``wrong_domains``). It learns which event it plays only from the prompts, as a
real agent would. A call outside any event (the tool probe of ``budget.tools=auto``) gets a prose reply,
so the harness picks the text protocol. Switches make it misbehave the ways the harness tests need: prose
before its first tool call of each event (``prose_first``), or a ``list`` instead of any answer (``answer``).

:func:`served_episode` and :func:`native_body` put it behind a :class:`~amemgym.testing.FakeEndpoint`, in
the text protocol or as native function calls.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..families.budget.generate import build_episode
from ..families.budget.io import save_episode
from ..llm.client import LLMClient
from ..llm.types import ChatRequest, ChatResult, ToolCallOut
from .scripted_model import ScriptedBackend

if TYPE_CHECKING:
    from ..config import AppConfig
    from ..families.budget.model import Episode

__all__ = ["OPENING", "BudgetScript", "NativeBudgetScript", "client_factory", "native_body", "native_result",
           "served_episode", "tool_call", "write_episodes"]

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
        requests: every request of an event, in order.
        kill_at: raise KeyboardInterrupt at this many calls (a kill in the middle of a run).
    """

    def __init__(self, episodes: Sequence[Episode], *, wrong_domains: tuple[str, ...] = (), writes_per_doc: int = 1,
                 note_chars: int = 300, prose_first: bool = False, answer: bool = True) -> None:
        self.episodes = tuple(episodes)
        self.golds = {q.text: (e.domain, q.gold) for e in episodes for q in e.questions}
        self.wrong = wrong_domains
        self.writes_per_doc = writes_per_doc
        self.note_chars = note_chars
        self.prose_first = prose_first
        self.answer = answer
        self.calls: Counter[str] = Counter()
        self.seeds: set[int | None] = set()
        self.requests: list[ChatRequest] = []
        self.kill_at: int | None = None

    def __call__(self, req: ChatRequest) -> str:
        if not any(OPENING.search(str(m["content"])) for m in req.messages):
            self.calls["probe"] += 1
            return "I have no function calls."
        self.calls[str(req.messages[0]["content"])] += 1
        self.seeds.add(req.seed)
        self.requests.append(req)
        if self.kill_at is not None and sum(self.calls.values()) >= self.kill_at:
            raise KeyboardInterrupt
        opening = next(str(m["content"]) for m in reversed(req.messages) if OPENING.search(str(m["content"])))
        kind = OPENING.search(opening).group(2)  # type: ignore[union-attr]
        start = next(i for i, m in enumerate(req.messages) if m["content"] == opening)
        steps = sum(1 for m in req.messages[start:] if m["role"] == "assistant")
        if self.prose_first and steps == 0:
            return "Sure! I will store that."
        if kind == "question":
            if not self.answer:
                return tool_call("list")
            domain, gold = next((v for t, v in self.golds.items() if t in opening), ("", None))
            if domain in self.wrong or gold is None:
                return tool_call("submit_answer", answer="I don't know")
            return tool_call("submit_answer", answer=str(gold))
        if kind == "documents" and steps < self.writes_per_doc + self.prose_first:
            return tool_call("write", text=opening[-self.note_chars:])
        return tool_call("done")

    def body_reply(self, body: dict[str, Any]) -> str:
        """The same reply for a raw chat-completions body (a :class:`~amemgym.testing.FakeEndpoint` responder)."""
        msgs = tuple({"role": m["role"], "content": m.get("content") or ""} for m in body["messages"])
        return self(ChatRequest(role="agent", messages=msgs, seed=body.get("seed")))

    def domain_calls(self, domain: str) -> int:
        """Chat calls made for episodes of ``domain``."""
        return sum(n for system, n in self.calls.items() if f" {domain}" in system)


class NativeBudgetScript(BudgetScript):
    """The same decisions as :class:`BudgetScript`, each made as one native function call.

    It answers the tool probe with a forced call (so ``budget.tools=auto`` picks native calls); ``requests``
    holds every request, the probe's too.
    """

    def __call__(self, req: ChatRequest) -> ChatResult:  # type: ignore[override]
        if not any(OPENING.search(str(m.get("content"))) for m in req.messages):
            self.requests.append(req)
            return ChatResult(text="", model="scripted", tool_calls=(ToolCallOut("p", "done", "{}"),))
        return native_result(super().__call__(req))


def native_result(reply: str, call_id: str = "c1") -> ChatResult:
    """A text-protocol decision as a result carrying one native function call (empty content)."""
    obj = json.loads(reply)
    call = ToolCallOut(call_id, obj["tool"], json.dumps(obj["args"]))
    return ChatResult(text="", model="scripted", tool_calls=(call,))


def served_episode(episode: Episode, root: Path, script: BudgetScript | None = None,
                   ) -> tuple[Path, Callable[[dict[str, Any]], str]]:
    """``episode`` saved as ``root/data.json``, and a FakeEndpoint responder playing ``script`` on it (text)."""
    env = root / "data.json"
    save_episode(episode, env)
    return env, (script or BudgetScript([episode])).body_reply


def native_body(reply: str, call_id: str = "x") -> dict[str, Any]:
    """A text-protocol reply as the chat-completions message of one native function call (empty content)."""
    obj = json.loads(reply)
    return {"content": None, "tool_calls": [{"id": call_id, "type": "function", "function": {
        "name": obj["tool"], "arguments": json.dumps(obj["args"])}}]}


def client_factory(script: BudgetScript) -> Callable[[AppConfig], LLMClient]:
    """A ``make_client`` for a budget run: every run role is answered by ``script``."""
    return lambda cfg: LLMClient(backends={"agent": ScriptedBackend(script)})


def write_episodes(root: Path, specs: Sequence[tuple[str, str, int]]) -> list[Episode]:
    """Generate ``(tier, domain, seed)`` episodes into ``root/<domain>/seed<N>/data.json``; the episodes."""
    out = []
    for tier, domain, seed in specs:
        ep = build_episode(tier, domain, seed)
        save_episode(ep, root / domain / f"seed{seed}" / "data.json")
        out.append(ep)
    return out
