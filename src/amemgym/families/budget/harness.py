"""The harness: plays an episode's stream to an LLM agent through the tool protocol.

The harness owns the store and its budget. After each event the conversation is cut back to the system
prompt, and the next event opens with a one-line memory summary, so answers must come from memory. The
long-context reference policy keeps the whole stream in context instead (no budget, no cut; context is
still cleared between sessions of a multi-session tier). A checkpoint after every event lets a killed run
resume where it stopped.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ...engine.checkpoint import Checkpoint
from ...errors import AMemGymError, MalformedOutput
from ...llm.client import LLMClient
from ...prompts import render
from .domain import episode_domain
from .model import Episode, Event
from .protocol import ProtocolError, parse_call
from .store import BudgetStore, LedgerEntry
from .stream import shown_kind
from .tiers import MAX_STEPS_PER_EVENT

POLICIES = ("budget", "long-context")
INSTRUCTIONS = {
    "documents": "Save what you judge worth keeping, then call done.",
    "memo": "Save anything worth keeping (often nothing), then call done.",
    "correction": "A correction notice: edits are free while it is on screen. Update your memory, then call done.",
    "contradiction": "Save what you judge worth keeping, then call done.",  # shown as documents (stream.py)
    "question": "Answer with submit_answer (search or read your notes first if you need to).",
}


@dataclass
class EpisodeState:
    """Everything a resumed run needs: where it is, the store, answers, the trace and the history."""

    next_event: int
    notes: dict[int, str]
    ledger: list[LedgerEntry]
    next_id: int
    answers: dict[str, str]
    writes_over_time: list[int]
    history: list[dict[str, str]]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"next_event": self.next_event, "notes": {str(k): v for k, v in self.notes.items()},
                "ledger": [e.__dict__ for e in self.ledger], "next_id": self.next_id, "answers": self.answers,
                "writes_over_time": self.writes_over_time, "history": self.history}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> EpisodeState:
        """Rebuild from :meth:`to_dict`."""
        return cls(d["next_event"], {int(k): v for k, v in d["notes"].items()},
                   [LedgerEntry(**e) for e in d["ledger"]], d["next_id"], dict(d["answers"]),
                   list(d["writes_over_time"]), list(d["history"]))


@runtime_checkable
class ToolAgent(Protocol):
    """Whoever picks the next tool call: an LLM, a plug-in, or a training loop (docs/budget.md, Running an agent).

    The harness shows the conversation of the current event in the strict text protocol (system prompt, the
    event's opening, then each reply and the harness's feedback) and expects one reply in the same protocol
    back: a JSON object ``{"tool": NAME, "args": {...}}``. A tool agent that speaks another dialect (native
    tool calls, say) translates both ways itself, so the harness, its store and its trace never depend on it.
    """

    async def act(self, messages: list[dict[str, str]], *, event: Event) -> str:
        """The next reply for ``messages``.

        Raising :class:`~amemgym.errors.MalformedOutput` (the model answered, but nothing usable) ends the
        event's turn, as the agent's own failure. Any other :class:`~amemgym.errors.LLMError` (the endpoint
        failed after its retries, or refused the call) fails the episode: nothing about the agent's memory is
        learnt from it, so the next run resumes the episode at that event instead of scoring it.
        """
        ...


class LLMToolAgent:
    """The built-in tool agent: the ``agent`` role's model, speaking the strict text protocol."""

    def __init__(self, llm: LLMClient, *, max_tokens: int = 512) -> None:
        self.llm, self.max_tokens = llm, max_tokens

    async def act(self, messages: list[dict[str, str]], *, event: Event) -> str:
        """One chat call; the reply text as the model wrote it."""
        res = await self.llm.chat("agent", messages, max_tokens=self.max_tokens, tag="budget.agent")
        return res.text


def system_prompt(episode: Episode, *, policy: str = "budget", max_steps: int = MAX_STEPS_PER_EVENT) -> str:
    """The system prompt the harness gives the agent of ``episode`` under ``policy``."""
    domain = episode_domain(episode)
    budget = "unlimited" if policy == "long-context" else episode.tier.writes
    return render("budget_agent_system", plural=domain.plural, noun=domain.noun, budget=budget,
                  note_chars=episode.note_chars, max_steps=max_steps)


def env_digest(raw: bytes) -> str:
    """sha256 of the episode file, recorded so a resume never mixes two episodes."""
    return hashlib.sha256(raw).hexdigest()


class Harness:
    """Runs one episode for one agent policy, saving its state and trace through the engine's checkpoint."""

    def __init__(self, episode: Episode, llm: LLMClient, out_dir: Path, *, policy: str = "budget",
                 max_steps: int = MAX_STEPS_PER_EVENT, max_tokens: int = 512, digest: str = "",
                 store_mode: str = "notes", embed_search: bool = True, agent: ToolAgent | None = None,
                 checkpoint: Checkpoint | None = None) -> None:
        if policy not in POLICIES:
            raise ValueError(policy)
        self.episode, self.llm, self.out_dir, self.policy = episode, llm, out_dir, policy
        #: Where progress is saved after each event (the engine's, or one of ``out_dir`` for a lone harness).
        self.checkpoint = checkpoint or Checkpoint(out_dir, {"digest": digest, "policy": policy})
        self.max_steps, self.max_tokens, self.digest = max_steps, max_tokens, digest
        self.agent: ToolAgent = agent if agent is not None else LLMToolAgent(llm, max_tokens=max_tokens)
        budget = None if policy == "long-context" else episode.tier.writes
        self.store = BudgetStore(budget=budget, note_chars=episode.note_chars, mode=store_mode)
        self.embed_search = embed_search or store_mode == "vector"
        #: Why search fell back to BM25 alone, if it did (recorded in the results, never silent).
        self.embedder_problem: str | None = None
        self.system = system_prompt(episode, policy=policy, max_steps=max_steps)
        self.state = EpisodeState(0, {}, [], 1, {}, [], [])

    # ---- checkpoints --------------------------------------------------------------------------------
    def _save(self) -> None:
        s = self.state
        s.notes, s.ledger, s.next_id = dict(self.store.notes), list(self.store.ledger), self.store._next_id
        self.checkpoint.save(s.to_dict())

    def _restore(self) -> None:
        saved = self.checkpoint.restore()
        if saved is None:
            return
        try:
            state = EpisodeState.from_dict(saved)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            # Valid JSON that is no episode state (edited by hand): start over rather than fail every resume.
            self.checkpoint.discard(f"{self.checkpoint.path}: not a budget episode's state "
                                    f"({type(exc).__name__}: {exc})")
            return
        self.state = state
        self.store.notes, self.store.ledger = dict(self.state.notes), list(self.state.ledger)
        self.store._next_id = self.state.next_id

    def _trace(self, record: dict[str, Any]) -> None:
        self.checkpoint.trace(record)

    # ---- the loop -----------------------------------------------------------------------------------
    async def run(self) -> EpisodeState:
        """Play every remaining event; returns the final state."""
        self._restore()
        events = self.episode.events
        for ev in events[self.state.next_event:]:
            await self._event(ev)
            self.state.next_event = ev.index + 1
            self.state.writes_over_time.append(self.store.writes_used)
            self._save()
        return self.state

    def _opening(self, ev: Event) -> str:
        return render("budget_agent_event", summary=self.store.summary(), index=ev.index + 1,
                      total=len(self.episode.events), kind=shown_kind(ev.kind), text=ev.text,
                      instruction=INSTRUCTIONS[ev.kind])

    async def _event(self, ev: Event) -> None:
        self.store.begin_event(ev.index, correction=ev.kind == "correction")
        prior = self.episode.events[ev.index - 1] if ev.index else None
        keep_history = self.policy == "long-context" and prior is not None and prior.session == ev.session
        history = self.state.history if keep_history else []
        messages = [{"role": "system", "content": self.system}, *history,
                    {"role": "user", "content": self._opening(ev)}]
        for step in range(self.max_steps):
            prompt = messages[-1]["content"]  # read before the agent sees the list: the trace records what it was shown
            try:
                reply = await self.agent.act(messages, event=ev)
            except MalformedOutput as exc:
                # The model's own unusable output is recorded, never turned into an answer; the question stays
                # unanswered. An endpoint failure (any other LLMError) propagates and fails the episode.
                self._trace({"event": ev.index, "step": step, "error": str(exc)})
                break
            messages.append({"role": "assistant", "content": reply})
            finished, feedback, record = await self._apply(ev, reply)
            self._trace({"event": ev.index, "kind": ev.kind, "step": step, "prompt": prompt, "reply": reply,
                         **record, "writes_used": self.store.writes_used})
            if finished:
                break
            messages.append({"role": "user", "content": feedback})
        if self.policy == "long-context":
            self.state.history = messages[1:]

    async def _vectors(self, query: str) -> Any:
        if not self.embed_search or not self.store.notes or self.embedder_problem:
            return None
        try:
            return await self.llm.embed([query, *self.store.notes.values()])
        except AMemGymError as exc:
            if self.store.mode == "vector":
                raise
            self.embedder_problem = str(exc)
            return None

    async def _apply(self, ev: Event, reply: str) -> tuple[bool, str, dict[str, Any]]:
        try:
            call = parse_call(reply)
        except ProtocolError as exc:
            return False, f"protocol error: {exc}. Reply with exactly one JSON tool call.", {"error": str(exc)}
        rec: dict[str, Any] = {"tool": call.tool, "args": call.args}
        a, s = call.args, self.store
        if call.tool == "submit_answer":
            if ev.kind != "question" or not ev.question:
                return False, "error: there is no question to answer now; call done.", {**rec, "ok": False}
            self.state.answers[ev.question] = a["answer"]
            return True, "", {**rec, "ok": True}
        if call.tool == "done":
            if ev.kind == "question":
                return False, "error: answer the question with submit_answer.", {**rec, "ok": False}
            return True, "", {**rec, "ok": True}
        if call.tool == "write":
            r = s.write(a["text"])
        elif call.tool == "edit":
            r = s.edit(a["id"], a["old"], a["new"])
        elif call.tool == "read":
            r = s.read(a["id"])
        elif call.tool == "forget":
            r = s.forget(a["id"])
        elif call.tool == "search":
            k = a.get("k", 5)
            vectors = await self._vectors(a["query"])
            hits = s.search(a["query"], k if isinstance(k, int) and 0 < k <= 20 else 5, vectors=vectors)
            text = "\n".join(f"note {i}: {t}" for i, t in hits) or "no matching notes"
            return False, f"result:\n{text}", {**rec, "ok": True, "hits": [i for i, _ in hits]}
        else:  # list
            text = "\n".join(f"note {i}: {t[:80]}" for i, t in s.notes.items()) or "no notes"
            return False, f"result:\n{text}", {**rec, "ok": True}
        return False, f"result: {r.message}", {**rec, "ok": r.ok, "result": r.message}


def wall_clock() -> float:
    """Seconds on a monotonic clock."""
    return time.perf_counter()
