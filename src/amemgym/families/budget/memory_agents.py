"""Memory agents (``rag``, ``awe``, ``awi``, ``module:factory`` plug-ins) on a budget-family episode.

The agent talks through the MemoryAgent contract (docs/design.md §6); its memory writes pass through a
harness-owned meter that charges them against the episode's budget, so the budget holds whatever the
agent's code does. docs/budget.md, "Memory agents", states the rules; in short:

- Each non-question event is one ``reply``; then ``flush`` (when the agent has it) writes the agent's
  window to memory and empties it. Each question is one ``answer`` whose effects are thrown away.
- After every event the agent is rebuilt by its factory and restored from its snapshot, so only what the
  snapshot holds carries over, and the harness checks that outside the metered memory the snapshot keeps
  a fresh agent's shape (only counters change). A resumed run takes exactly the same path.
- Vector-store agents get a :class:`MeteredVectorStore` through ``AgentContext.store_factory``; the AWI
  agent's notes dictionary is metered by comparing its snapshot before and after the event. mem0 and
  plug-ins that keep memory elsewhere are refused (exit 2).
"""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from ...agents.awi import AwiAgent, oracle_policy
from ...agents.base import AgentContext, MemoryAgent
from ...agents.mem0_adapter import Mem0Agent
from ...agents.registry import AgentSpec, resolve_agent
from ...agents.vector_store import Hit, MemoryRecord, NumpyVectorStore
from ...engine.checkpoint import Checkpoint
from ...errors import AgentError, AMemGymError, ConfigError, MalformedOutput
from ...llm.client import LLMClient
from ...prompts import render
from .domain import episode_domain
from .harness import env_digest, wall_clock
from .model import Episode, Event
from .policies import AGENTS
from .scoring import DEFINITIONS, score_episode
from .store import LedgerEntry
from .stream import shown_kind
from .validity import judge

T = TypeVar("T")

#: Longest time stamp, kind tag or notes key a metered memory keeps (they are labels, not storage).
META_CHARS = 40
#: Largest magnitude a number outside the metered memory may take (counters; a huge integer could hold text).
MAX_COUNTER = 10**15
#: Why each refused write was refused, as counted in ``results.json``.
REFUSALS = ("budget", "question", "empty", "missing")
POLICY = "memory-agent"


@dataclass
class Meter:
    """The harness's count of an agent's memory writes: one per new memory, one per changed memory except
    while a correction notice is the current event, nothing for deletions; past the budget a write is refused.

    Attributes:
        restoring: set by the harness while it restores an agent; a store refuses to load at any other time.
    """

    budget: int
    note_chars: int
    ledger: list[LedgerEntry] = field(default_factory=list)
    refused: dict[str, int] = field(default_factory=lambda: dict.fromkeys(REFUSALS, 0))
    truncated: int = 0
    event: int = 0
    correction: bool = False
    question: bool = False
    restoring: bool = False

    @property
    def writes_used(self) -> int:
        """Writes charged so far."""
        return sum(e.charged for e in self.ledger if not e.refunded)

    def begin_event(self, ev: Event) -> None:
        """Changes are free during a correction notice; nothing may be written while a question is asked."""
        self.event, self.correction, self.question = ev.index, ev.kind == "correction", ev.kind == "question"

    def refuse(self, reason: str) -> None:
        """Count a write that did not happen."""
        self.refused[reason] += 1

    def cost(self, *, change: bool) -> int | None:
        """What a new memory (``change=False``) or a changed one costs now; None (counted) when refused."""
        if self.question:
            self.refuse("question")
            return None
        cost = 0 if change and self.correction else 1
        if cost and self.writes_used + cost > self.budget:
            self.refuse("budget")
            return None
        return cost

    def record(self, op: str, cost: int, note: int | None, text: str) -> None:
        """Enter a write that happened, with the text it left (the maintenance gate reads it)."""
        self.ledger.append(LedgerEntry(self.event, op, cost, False, note, text=text))

    def cap(self, text: str, limit: int) -> str:
        """``text`` cut to ``limit`` characters (each cut is counted)."""
        if len(text) <= limit:
            return text
        self.truncated += 1
        return text[:limit]

    def to_dict(self) -> dict[str, Any]:
        """The persistent part, JSON-ready."""
        return {"ledger": [asdict(e) for e in self.ledger], "refused": dict(self.refused), "truncated": self.truncated}

    def load(self, data: dict[str, Any]) -> None:
        """Continue from :meth:`to_dict`."""
        self.ledger = [LedgerEntry(**e) for e in data["ledger"]]
        self.refused = {k: int(data["refused"].get(k, 0)) for k in REFUSALS}
        self.truncated = int(data["truncated"])


class MeteredVectorStore:
    """A :class:`~amemgym.agents.vector_store.VectorStore` whose writes the :class:`Meter` charges.

    A refused ``add`` stores nothing and returns a negative id that names no memory (updating or deleting it
    does nothing); texts are cut to the episode's note cap. Only the harness may ``restore`` it.
    """

    def __init__(self, meter: Meter) -> None:
        self.meter = meter
        self._inner = NumpyVectorStore()
        self._phantoms = 0
        # What the metered calls stored; anything else in the store got there around the meter.
        self._shadow: dict[int, tuple[str, str, str]] = {}
        #: Memories written since the harness last re-embedded them.
        self.touched: set[int] = set()

    def _phantom(self) -> int:
        self._phantoms += 1
        return -self._phantoms

    def add(self, text: str, time: str, kind: str, vector: np.ndarray) -> int:
        """Store a memory if the budget allows (one write)."""
        if not text.strip():
            self.meter.refuse("empty")
            return self._phantom()
        cost = self.meter.cost(change=False)
        if cost is None:
            return self._phantom()
        text, time, kind = self.meter.cap(text, self.meter.note_chars), time[:META_CHARS], kind[:META_CHARS]
        nid = self._inner.add(text, time, kind, vector)
        self.meter.record("add", cost, nid, text)
        self._shadow[nid] = (text, time, kind)
        self.touched.add(nid)
        return nid

    def update(self, memory_id: int, text: str, time: str, vector: np.ndarray) -> None:
        """Rewrite a memory if the budget allows (one write, free during a correction notice)."""
        if memory_id < 0:
            self.meter.refuse("missing")
            return
        if memory_id not in self._shadow:
            raise AgentError(f"vector store has no memory with id {memory_id}")
        if not text.strip():
            self.meter.refuse("empty")
            return
        text = self.meter.cap(text, self.meter.note_chars)
        if text == self._shadow[memory_id][0]:
            return  # nothing changes, nothing is charged
        cost = self.meter.cost(change=True)
        if cost is None:
            return
        time = time[:META_CHARS]
        self._inner.update(memory_id, text, time, vector)
        self.meter.record("update", cost, memory_id, text)
        self._shadow[memory_id] = (text, time, self._shadow[memory_id][2])
        self.touched.add(memory_id)

    def delete(self, memory_id: int) -> None:
        """Drop a memory (free; it gives no write back)."""
        if memory_id < 0:
            return
        self._inner.delete(memory_id)
        self._shadow.pop(memory_id, None)
        self.touched.discard(memory_id)

    def search(self, vector: np.ndarray, k: int) -> list[Hit]:
        """Exact top-k (free)."""
        return self._inner.search(vector, k)

    def records(self) -> list[MemoryRecord]:
        """Every memory in id order."""
        return self._inner.records()

    def __len__(self) -> int:
        return len(self._inner)

    def snapshot(self) -> dict[str, Any]:
        """The memories and the count of refused adds."""
        return {"metered_memories": self._inner.snapshot(), "phantoms": self._phantoms}

    def restore(self, snapshot: dict[str, Any]) -> None:
        """Load a snapshot; only while the harness restores the agent.

        Raises:
            AgentError: when the agent itself tries to load memories (that would bypass the meter).
        """
        if not self.meter.restoring:
            raise AgentError("the harness's metered store can only be restored by the harness")
        try:
            self._inner.restore(snapshot["metered_memories"])
            self._phantoms = int(snapshot["phantoms"])
        except (KeyError, TypeError, ValueError) as exc:
            raise AgentError(f"metered store snapshot is malformed: {exc}") from None
        self._shadow = {r.id: (r.text, r.time, r.kind) for r in self._inner.records()}
        self.touched = set()

    def bypassed(self) -> bool:
        """Whether the store holds anything the metered calls did not put there."""
        return {r.id: (r.text, r.time, r.kind) for r in self._inner.records()} != self._shadow

    def set_vector(self, memory_id: int, vector: np.ndarray) -> None:
        """Replace a memory's vector (the harness's own embedding of its text)."""
        text, time, _ = self._shadow[memory_id]
        self._inner.update(memory_id, text, time, vector)


def meter_notes(meter: Meter, before: dict[str, str], after: dict[str, str]) -> dict[str, str]:
    """The notes an in-context agent may keep after an event: each new key is one write, each changed value
    one write (free during a correction); a key plus its text is cut to the note cap; what the budget does
    not cover goes back to its value before the event. Removed keys are free."""
    kept: dict[str, str] = {}
    for raw_key, value in after.items():
        key = raw_key[:META_CHARS]
        if raw_key != key:
            meter.truncated += 1
        if before.get(key) == value:
            kept[key] = value
            continue
        if not value.strip():
            meter.refuse("empty")
            cost = None
        else:
            cost = meter.cost(change=key in before)
        if cost is None:
            if key in before:
                kept[key] = before[key]
            continue
        kept[key] = meter.cap(value, max(1, meter.note_chars - len(key)))
        meter.record("rewrite" if key in before else "add", cost, None, f"{key}: {kept[key]}")
    return kept


def _strip(obj: Any, target: dict[str, Any]) -> tuple[Any, int]:
    """``obj`` with every sub-object equal to ``target`` replaced by None, and how many there were."""
    if isinstance(obj, dict):
        if obj.keys() == target.keys() and obj == target:
            return None, 1
        out, n = {}, 0
        for k, v in obj.items():
            out[k], m = _strip(v, target)
            n += m
        return out, n
    if isinstance(obj, list):
        items = [_strip(v, target) for v in obj]
        return [v for v, _ in items], sum(m for _, m in items)
    return obj, 0


def shape_problem(fresh: Any, now: Any, where: str) -> str | None:
    """How ``now`` departs from ``fresh`` other than in the values of numbers, or None.

    Keys, list lengths, strings, booleans and nulls must stay as they were; a number may change but stay a
    finite number below :data:`MAX_COUNTER` in magnitude.
    """
    if isinstance(fresh, bool) or fresh is None or isinstance(fresh, str):
        return None if type(now) is type(fresh) and now == fresh else f"{where} changed"
    if isinstance(fresh, int | float):
        if isinstance(now, int | float) and not isinstance(now, bool) and abs(now) < MAX_COUNTER:
            return None
        return f"{where} is no longer a counter"
    if isinstance(fresh, dict):
        if not isinstance(now, dict) or now.keys() != fresh.keys():
            return f"{where} has other keys"
        return next((p for k in fresh if (p := shape_problem(fresh[k], now[k], f"{where}.{k}"))), None)
    if isinstance(fresh, list):
        if not isinstance(now, list) or len(now) != len(fresh):
            return f"{where} changed length"
        return next((p for i, (a, b) in enumerate(zip(fresh, now, strict=True))
                     if (p := shape_problem(a, b, f"{where}[{i}]"))), None)
    return f"{where} is of an unexpected type"


@dataclass(frozen=True)
class Plan:
    """How an agent's memory is metered: ``vector`` (the metered store) or ``notes`` (AWI's dictionary)."""

    spec: AgentSpec
    memory: str


def _context(episode: Episode | None, factory: Any) -> AgentContext:
    if episode is None:
        return AgentContext(user_id="budget-check", store_factory=factory)
    return AgentContext(user_id=f"{episode.domain}-seed{episode.seed}-salt{episode.salt}", seed=episode.seed,
                        store_factory=factory)


def _build(spec: AgentSpec, llm: LLMClient, meter: Meter,
           episode: Episode | None) -> tuple[MemoryAgent, list[MeteredVectorStore]]:
    stores: list[MeteredVectorStore] = []

    def factory() -> MeteredVectorStore:
        stores.append(MeteredVectorStore(meter))
        return stores[-1]

    return spec.build(llm, _context(episode, factory)), stores


def plan_agent(name: str, llm: LLMClient) -> Plan:
    """Resolve ``--agent`` for a budget episode and decide how its memory is metered.

    Raises:
        ConfigError: for unknown agents, and for agents whose memory the harness cannot meter (mem0, the
            AWI oracle ablation, plug-ins that do not build their store with ``ctx.store_factory``).
    """
    spec = resolve_agent(name, also=tuple(AGENTS))  # an unknown name is offered the family's tool agents too
    if spec.llm_overrides:
        raise ConfigError(f"agent {name!r}: per-agent llm settings are not supported for budget-family runs; "
                          "use --model / --set")
    agent, stores = _build(spec, llm, Meter(0, 1), None)
    if isinstance(agent, Mem0Agent):
        raise ConfigError("agent mem0 cannot run a budget-family episode: its memories live inside the mem0 "
                          "library's own vector store, where the harness can neither meter nor roll back writes")
    if isinstance(agent, AwiAgent):
        if agent.policy == oracle_policy({}):
            raise ConfigError("agent awi-oracle is an ablation told a statetrack user's variables; budget-family "
                              "episodes have none (use awi)")
        return Plan(spec, "notes")
    if len(stores) == 1:
        return Plan(spec, "vector")
    why = "built none" if not stores else f"built {len(stores)}"
    raise ConfigError(f"agent {name!r} cannot run a budget-family episode: the harness meters an agent's memory "
                      f"only when it keeps all of it in the one store from ctx.store_factory, and this agent {why} "
                      "(docs/budget.md, Memory agents)")


@dataclass
class MemoryRunState:
    """What a resumed run needs: the next event, the agent's snapshot, the meter, answers and the trace."""

    next_event: int
    snapshot: dict[str, Any] | None
    meter: dict[str, Any]
    answers: dict[str, str]
    writes_over_time: list[int]
    fresh: Any


class MemoryAgentHarness:
    """Plays one episode to one memory agent, saving its state and trace through the engine's checkpoint."""

    def __init__(self, episode: Episode, llm: LLMClient, out_dir: Path, plan: Plan, *, digest: str,
                 checkpoint: Checkpoint | None = None) -> None:
        self.episode, self.llm, self.out_dir, self.plan, self.digest = episode, llm, out_dir, plan, digest
        #: Where progress is saved after each event (the engine's, or one of ``out_dir`` for a lone harness).
        self.checkpoint = checkpoint or Checkpoint(out_dir, {"digest": digest, "policy": POLICY,
                                                             "agent": plan.spec.name})
        self.meter = Meter(episode.tier.writes, episode.note_chars)
        self.domain = episode_domain(episode)
        self.state = MemoryRunState(0, None, self.meter.to_dict(), {}, [], None)
        self.stores: list[MeteredVectorStore] = []

    # ---- the agent, rebuilt from its snapshot ------------------------------------------------------
    def _agent(self, snapshot: dict[str, Any] | None) -> MemoryAgent:
        agent, self.stores = _build(self.plan.spec, self.llm, self.meter, self.episode)
        if self.plan.memory == "vector" and len(self.stores) != 1:
            raise AgentError(f"agent {self.plan.spec.name!r} built {len(self.stores)} stores this time (one expected)")
        if snapshot is not None:
            self.meter.restoring = True
            try:
                agent.restore(snapshot)
            except Exception as exc:  # noqa: BLE001 - a plug-in's bug becomes one line, never a traceback
                raise AgentError(f"agent {self.plan.spec.name!r}: restoring its snapshot failed: {exc}") from None
            finally:
                self.meter.restoring = False
        return agent

    def _outside(self, snapshot: dict[str, Any]) -> Any:
        """The snapshot without its metered memory."""
        if self.plan.memory == "notes":
            rest = {**snapshot, "memory": {k: v for k, v in snapshot["memory"].items() if k != "notes"}}
        else:
            rest, found = _strip(snapshot, self.stores[0].snapshot())
            if found != 1:
                raise AgentError(f"agent {self.plan.spec.name!r}: its snapshot must hold the metered store's "
                                 f"snapshot exactly once (found {found}), or a resumed run would lose or fork memory")
        return rest

    async def _call(self, method: str, call: Awaitable[T]) -> T:
        """Await one of the agent's methods; amemgym errors pass, anything else becomes one line."""
        try:
            return await call
        except AMemGymError:
            raise
        except Exception as exc:  # noqa: BLE001 - a plug-in's bug becomes one line, never a traceback
            raise AgentError(f"agent {self.plan.spec.name!r}: {method} raised {type(exc).__name__}: {exc}") from None

    # ---- checkpoints --------------------------------------------------------------------------------
    def _save(self) -> None:
        self.state.meter = self.meter.to_dict()
        self.checkpoint.save(asdict(self.state))

    def _restore(self) -> None:
        saved = self.checkpoint.restore()
        if saved is None:
            return
        fresh_state, fresh_meter = self.state, self.meter.to_dict()
        try:
            self.state = MemoryRunState(**{k: saved[k] for k in MemoryRunState.__dataclass_fields__})
            self.meter.load(self.state.meter)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            # Valid JSON that is no memory run's state (edited by hand): start over rather than fail every resume.
            self.state = fresh_state
            self.meter.load(fresh_meter)
            self.checkpoint.discard(f"{self.checkpoint.path}: not a memory-agent episode's state "
                                    f"({type(exc).__name__}: {exc})")

    def _trace(self, record: dict[str, Any]) -> None:
        self.checkpoint.trace(record)

    # ---- the loop -----------------------------------------------------------------------------------
    async def run(self) -> MemoryRunState:
        """Play every remaining event; returns the final state."""
        self._restore()
        if self.state.next_event == 0:
            fresh = self._agent(None)
            self.state.snapshot = await self._call("snapshot", fresh.snapshot())
            self.state.fresh = self._outside(self.state.snapshot)
        for ev in self.episode.events[self.state.next_event:]:
            await self._event(ev)
            self.state.next_event = ev.index + 1
            self.state.writes_over_time.append(self.meter.writes_used)
            self._save()
        return self.state

    def _time(self, ev: Event) -> str:
        # Sorts in stream order as text: the agents order memories by this stamp.
        return f"session {ev.session + 1} event {ev.index + 1:04d}"

    async def _event(self, ev: Event) -> None:
        agent = self._agent(self.state.snapshot)
        self.meter.begin_event(ev)
        used_before = self.meter.writes_used
        rec: dict[str, Any] = {"event": ev.index, "kind": ev.kind, "step": 0}
        if ev.kind == "question":
            prompt = render("budget_memory_question", plural=self.domain.plural, noun=self.domain.noun, text=ev.text)
            try:
                reply = await self._call("answer", agent.answer(prompt))
            except MalformedOutput as exc:  # the model's unusable answer; an endpoint failure fails the episode
                self._trace({**rec, "tool": "answer", "error": str(exc)})
                return
            self.state.answers[ev.question or ""] = reply
            # Whatever answering changed is dropped: the next event starts from the snapshot before it.
            self._trace({**rec, "tool": "answer", "args": {"question": ev.question}, "prompt": prompt, "reply": reply,
                         "ok": True,
                         "result": f"refused writes so far: {sum(self.meter.refused.values())}"})
            return
        message = render("budget_memory_event", index=ev.index + 1, total=len(self.episode.events),
                         kind=shown_kind(ev.kind), text=ev.text)
        before = self.state.snapshot
        error: str | None = None
        said: str | None = None
        try:
            said = await self._call("reply", agent.reply(message, time=self._time(ev)))
            flush = getattr(agent, "flush", None)
            if callable(flush):
                await self._call("flush", flush())
        except MalformedOutput as exc:  # the model's unusable output; an endpoint failure fails the episode
            error = str(exc)
        snapshot = await self._call("snapshot", agent.snapshot())
        if error is not None and isinstance(snapshot.get("buffer"), list):
            snapshot = {**snapshot, "buffer": []}  # the cut: what the failed call left in the window is lost
        if self.plan.memory == "notes":
            old = (before or {}).get("memory", {}).get("notes", {})
            kept = meter_notes(self.meter, old, dict(snapshot["memory"]["notes"]))
            snapshot = {**snapshot, "memory": {**snapshot["memory"], "notes": kept}}
        else:
            snapshot = await self._settle_store(agent)
        problem = shape_problem(self.state.fresh, self._outside(snapshot), "snapshot")
        if problem:
            raise AgentError(f"agent {self.plan.spec.name!r} keeps state outside its metered memory after event "
                             f"{ev.index + 1}: {problem}; only counters may change there, so that all memory is "
                             "metered and the conversation is cut (docs/budget.md, Memory agents)")
        self.state.snapshot = snapshot
        self._trace({**rec, "tool": "reply", "args": {"time": self._time(ev), "message_chars": len(message)},
                     "prompt": message, "reply": said, "ok": error is None, **({"error": error} if error else {}),
                     "result": f"writes charged {self.meter.writes_used - used_before}; used {self.meter.writes_used} "
                               f"of {self.meter.budget}; refused so far {sum(self.meter.refused.values())}; "
                               f"cut to the note cap so far {self.meter.truncated}",
                     "writes_used": self.meter.writes_used})

    async def _settle_store(self, agent: MemoryAgent) -> dict[str, Any]:
        """Check the store was only written through the meter, give every written memory the harness's own
        embedding of its text (so a vector carries nothing the text does not), and snapshot the agent."""
        store = self.stores[0]
        if store.bypassed():
            raise AgentError(f"agent {self.plan.spec.name!r} changed its memory store around the harness's meter")
        ids = sorted(store.touched)
        if ids:
            texts = {r.id: r.text for r in store.records()}
            for nid, vec in zip(ids, await self.llm.embed([texts[i] for i in ids]), strict=True):
                store.set_vector(nid, vec)
            store.touched.clear()
        return await self._call("snapshot", agent.snapshot())


async def run_memory_episode(env: Path, episode: Episode, raw: bytes, name: str, out_dir: Path,
                             llm: LLMClient, checkpoint: Checkpoint | None = None) -> dict[str, Any]:
    """Run (or resume, from ``checkpoint``) one episode (``episode``, loaded from the bytes ``raw`` of the file
    ``env``) with a memory agent; returns the results record (the engine writes it)."""
    plan = plan_agent(name, llm)
    t0 = wall_clock()
    harness = MemoryAgentHarness(episode, llm, out_dir, plan, digest=env_digest(raw), checkpoint=checkpoint)
    state = await harness.run()
    verdicts = judge(episode, state.answers)
    score = score_episode(episode, verdicts, harness.meter.writes_used, harness.meter.ledger)
    per_kind: dict[str, list[int]] = {}
    for q in episode.questions:
        per_kind.setdefault(q.kind, [0, 0])
        per_kind[q.kind][0] += verdicts[q.id].correct
        per_kind[q.kind][1] += 1
    m = harness.meter
    results = {
        "family": "budget", "results_version": 1, "environment_file": str(env),
        "environment_sha256": env_digest(raw), "agent": name, "policy": "budget", "interface": "memory-agent",
        "metered": True, "store": f"agent-{plan.memory}", "search_embedder_problem": None,
        "tier": episode.tier.name, "domain": episode.domain, "seed": episode.seed, "salt": episode.salt,
        "score": score.to_dict(),
        "per_kind": {k: {"correct": c, "total": n} for k, (c, n) in sorted(per_kind.items())},
        "answers": {q.id: {"kind": q.kind, "reply": state.answers.get(q.id), "gold": q.gold,
                           "correct": verdicts[q.id].correct, "reason": verdicts[q.id].reason}
                    for q in episode.questions},
        "writes_over_time": state.writes_over_time,
        "ledger": [asdict(e) for e in m.ledger],
        "refused_writes": sum(m.refused.values()), "refused_by_reason": dict(m.refused),
        "truncated_writes": m.truncated,
        "usage": llm.ledger.to_dict(),
        "wall_seconds_last_invocation": round(wall_clock() - t0, 3),
        "definitions": {
            **DEFINITIONS,
            "writes_used": "memories added or changed, as the harness's meter charged them (changes free during a "
                           "correction notice)",
            "refused_writes": "writes the meter refused: budget spent, during a question, empty text, or a "
                              "memory that was never stored",
            "truncated_writes": "texts the meter cut to the episode's note cap before storing",
        },
    }
    return results
