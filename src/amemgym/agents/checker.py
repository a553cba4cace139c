"""Conformance checker for memory agents, built-in or plug-in (``module:factory``).

Like Gymnasium's ``check_env``, it drives the agent through a short scripted episode and verifies the
contract the runner relies on: the interface, JSON snapshots that restore exactly, evaluation that does
not change state, isolation between users, and determinism. Every model call goes to a *scripted fake
LLM* (deterministic replies derived from the request) and a hashing embedder, so the checker needs no
endpoint and its verdicts are reproducible; it says nothing about the quality of the agent's answers.

``amemgym check-agent`` runs the checks in a child process (:func:`check_agent_isolated`): a plug-in is
arbitrary code, and one that ends its process (``os._exit``, a crash in native code) would otherwise end the
checker with whatever exit code it chose and no verdict, which a script would read as a pass.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import json
import multiprocessing
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

from .. import errors
from ..children import end, ended_how, scrub_output, stdout_to_stderr
from ..config import AppConfig
from ..errors import AgentError, AMemGymError
from ..llm.client import LLMClient, register_keys
from ..llm.types import ChatRequest
from ..redact import registered
from ..testing.scripted_model import HashEmbedder, ScriptedBackend
from .base import AgentContext, MemoryAgent
from .guard import set_call_limit
from .registry import AgentSpec, resolve_agent

ASYNC_METHODS = ("reply", "ingest", "answer", "snapshot")
SYNC_METHODS = ("restore", "memory_view", "stats")

#: A tiny scripted conversation: (simulated time, user message) pairs; one ingested exchange at the end.
SCRIPT = [
    ("2021-01-28 19:30", "[Current Time: 2021-01-28 19:30]\nI just moved to a flat with a tiny kitchen."),
    ("2021-01-28 19:30", "Which pans should I keep?"),
    ("2021-02-27 20:10", "[Current Time: 2021-02-27 20:10]\nMy shifts switched to nights this month."),
    ("2021-02-27 20:10", "How do I plan meals around that?"),
    ("2021-03-29 18:45", "[Current Time: 2021-03-29 18:45]\nI signed up for a half marathon in June."),
]
INGESTED = ("2021-03-29 18:45", "What should I eat the night before?", "Something light and familiar.")
QUESTION = "Which of these fits my current situation best?\n1. Option one\n2. Option two\nReply as {\"answer\": k}."


def _digest(req: ChatRequest) -> str:
    payload = json.dumps([req.role, req.tag, list(req.messages)], sort_keys=True)
    return hashlib.blake2b(payload.encode("utf-8"), digest_size=4).hexdigest()


def _fill(schema: dict[str, Any], token: str) -> Any:
    """A minimal value satisfying a JSON schema (enough for the schemas memory writers use)."""
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if "enum" in schema:
        return schema["enum"][0]
    if kind == "object":
        props = schema.get("properties", {})
        out = {k: _fill(v, token) for k, v in props.items() if k in schema.get("required", props)}
        if not props and isinstance(schema.get("additionalProperties"), dict):
            out[f"note_{token[:4]}"] = _fill(schema["additionalProperties"], token)
        return out
    if kind == "array":
        return [_fill(schema.get("items", {"type": "string"}), token)]
    if kind in ("integer", "number"):
        return 1
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    return f"scripted fact {token}"


def scripted_reply(req: ChatRequest) -> str:
    """The checker's fake model: a deterministic function of the request."""
    token = _digest(req)
    if req.json_schema:
        return json.dumps(_fill(req.json_schema, token))
    if req.tag == "agent.answer":
        return '{"answer": 1}'
    return f"Scripted reply {token}."


def scripted_llm() -> LLMClient:
    """A fresh client whose every role is the scripted fake (no cache, so each run really calls it)."""
    backend = ScriptedBackend(scripted_reply, name="checker")
    roles = ("agent", "memory", "simulator", "judge", "generator")
    return LLMClient(backends={r: backend for r in roles}, embedder=HashEmbedder(), backoff_base=0.001)


@dataclass(frozen=True)
class CheckResult:
    """One check's verdict."""

    name: str
    passed: bool
    detail: str = ""


@dataclass
class CheckReport:
    """All verdicts for one agent."""

    agent: str
    results: list[CheckResult] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """True when every check passed."""
        return all(r.passed for r in self.results)

    def lines(self) -> list[str]:
        """Human-readable report lines."""
        head = [f"agent {self.agent}: conformance checks against a scripted fake LLM "
                "(deterministic canned replies; this checks the contract, not answer quality)"]
        body = [f"  {'PASS' if r.passed else 'FAIL'}  {r.name}" + (f": {r.detail}" if r.detail else "")
                for r in self.results]
        return [*head, *body, f"{'all checks passed' if self.passed else 'some checks failed'}"]


async def _episode(agent: MemoryAgent) -> None:
    for time, message in SCRIPT:
        await agent.reply(message, time=time)
    await agent.ingest(INGESTED[1], INGESTED[2], time=INGESTED[0])


def _canon(snapshot: Any) -> str:
    return json.dumps(snapshot, sort_keys=True, ensure_ascii=False)


def _context(user_id: str, state_schema: dict[str, list[str]] | None) -> AgentContext:
    schema = state_schema or {"kitchen_setup": ["tiny", "shared", "full"], "work_shift": ["days", "nights", "mixed"]}
    return AgentContext(user_id=user_id, seed=7, state_schema=schema)


async def check_agent(spec: AgentSpec, *, state_schema: dict[str, list[str]] | None = None) -> CheckReport:
    """Run every conformance check on ``spec``; a check that raises counts as failed with the error."""
    report = CheckReport(spec.name)

    def record(name: str, ok: bool, detail: str = "") -> bool:
        report.results.append(CheckResult(name, ok, "" if ok else detail))
        return ok

    try:
        agent = spec.build(scripted_llm(), _context("checker-user-a", state_schema))
    except Exception as exc:  # noqa: BLE001 - a plug-in may fail in any way; that is the finding
        record("build", False, f"factory raised {type(exc).__name__}: {exc}")
        return report
    problems = [f"{m} missing" for m in (*ASYNC_METHODS, *SYNC_METHODS) if not callable(getattr(agent, m, None))]
    problems += [f"{m} must be async" for m in ASYNC_METHODS
                 if callable(getattr(agent, m, None)) and not inspect.iscoroutinefunction(getattr(agent, m))]
    problems += [f"{m} must not be async" for m in SYNC_METHODS
                 if callable(getattr(agent, m, None)) and inspect.iscoroutinefunction(getattr(agent, m))]
    if not record("interface", not problems, "; ".join(problems)):
        return report

    checks = [_check_episode_and_snapshots, _check_answer_is_pure, _check_isolation, _check_determinism]
    for check in checks:
        name = check.__name__.removeprefix("_check_")
        try:
            ok, detail = await check(spec, state_schema)
        except (AMemGymError, Exception) as exc:  # noqa: BLE001 - any crash is a failed check
            ok, detail = False, f"raised {type(exc).__name__}: {exc}"
        record(name, ok, detail)
    return report


@dataclass(frozen=True)
class Limits:
    """The time limits a child process holds plug-in code to (``run.agent_call_timeout``,
    ``run.agent_factory_timeout``)."""

    call: float
    factory: float

    @classmethod
    def of(cls, cfg: AppConfig) -> Limits:
        """The limits of ``cfg``'s run settings."""
        return cls(cfg.run.agent_call_timeout, cfg.run.agent_factory_timeout)


def check_agent_isolated(name: str, limits: Limits | None = None) -> CheckReport:
    """:func:`check_agent` on the agent ``name`` resolves, run in a child process (spawned, so it starts clean),
    each call into a plug-in held to ``limits`` (None: the config's defaults).

    Raises:
        AMemGymError: the error resolving ``name`` raised in the child (an unknown agent, a bad config file).
        AgentError: the child ended before it sent a verdict (the agent's code ended its process).
    """
    outcome = _in_child(name, _check_in_child, limits or Limits.of(AppConfig()), "before the checks finished; a run "
                        "would fail the same way", "the checking process")
    return outcome  # type: ignore[no-any-return]


#: How a family builds an agent once: ``build(name, cfg)``, run in the child process (so picklable).
Builder = Callable[[str, AppConfig], object]


def build_isolated(name: str, cfg: AppConfig, build: Builder | None = None) -> None:
    """Import the agent ``name`` and build it once in a child process, with ``cfg``'s limits: a run's way of
    refusing a plug-in whose import or factory fails, hangs or ends its process, before any work and without
    running that code in the run's own process.

    ``build`` is how the run's family builds it (None: a statetrack memory agent, when ``name`` is a plug-in).

    Raises:
        AMemGymError: the error resolving or building ``name`` raised in the child.
        AgentError: the child ended before it answered (the agent's code ended its process).
    """
    register_keys(cfg.llm)  # before the run makes its client: the child's code may print a key as it is imported
    _in_child(name, _build_in_child, (cfg, build or _build_memory_agent),
              "while it was imported and built; a plug-in must not end its process", "its process")


def _in_child(name: str, target: Callable[[str, Any, Connection], None], arg: Any, when: str, process: str) -> Any:
    """``target(name, arg, pipe)`` in a spawned child; what it sent, or its error raised here again."""
    mp = multiprocessing.get_context("spawn")
    receive, send = mp.Pipe(duplex=False)
    child = mp.Process(target=_child_main, args=(target, name, arg, send, registered()), name="amemgym-agent-child")
    child.start()
    send.close()  # only the child holds the sending end now: its end, however it comes, is an EOF here
    try:
        outcome = receive.recv()
    except EOFError:
        outcome = None
    finally:
        receive.close()
        end(child)  # it answered (or closed its end), but a thread its agent started may keep it alive
    if outcome is None:
        raise AgentError(f"agent {name!r}: its code ended {process} ({ended_how(child.exitcode)}) {when}")
    if isinstance(outcome, tuple):  # (error class name, message): raised again here with its exit code
        kind = getattr(errors, outcome[0], None)
        raise (kind if isinstance(kind, type) and issubclass(kind, AMemGymError) else AMemGymError)(outcome[1])
    return outcome


def _child_main(target: Callable[[str, Any, Connection], None], name: str, arg: Any, send: Connection,
                keys: list[str]) -> None:
    """``target(name, arg, send)`` with this process's standard output sent to standard error
    (:func:`~amemgym.children.stdout_to_stderr`), scrubbed of the parent's ``keys``."""
    stdout_to_stderr()
    scrub_output(keys)
    target(name, arg, send)


def _answer_parent(name: str, send: Connection, work: Callable[[], Any]) -> None:
    """Send ``work()``'s result, or its error as (class name, message), and close the pipe."""
    outcome: Any
    try:
        outcome = work()
    except AMemGymError as exc:
        outcome = (type(exc).__name__, str(exc))
    except Exception as exc:  # noqa: BLE001 - one line in the parent, never this process's traceback
        outcome = ("AgentError", f"agent {name!r}: checking it raised {type(exc).__name__}: {exc}")
    send.send(outcome)
    send.close()


def _check_in_child(name: str, limits: Limits, send: Connection) -> None:
    set_call_limit(limits.call, factory=limits.factory)
    _answer_parent(name, send, lambda: asyncio.run(check_agent(resolve_agent(name))))


def _build_in_child(name: str, how: tuple[AppConfig, Builder], send: Connection) -> None:
    cfg, build = how
    set_call_limit(cfg.run.agent_call_timeout, factory=cfg.run.agent_factory_timeout)

    def built() -> str:
        build(name, cfg)
        return "built"

    _answer_parent(name, send, built)


def _build_memory_agent(name: str, cfg: AppConfig) -> None:
    spec = resolve_agent(name)
    if spec.plugin:
        spec.build(LLMClient.from_config(cfg.llm, serial=True), AgentContext(user_id="agent-check"))


async def _check_episode_and_snapshots(spec: AgentSpec, schema: dict[str, list[str]] | None) -> tuple[bool, str]:
    agent = spec.build(scripted_llm(), _context("checker-user-a", schema))
    await _episode(agent)
    snap = await agent.snapshot()
    try:
        text = _canon(snap)
    except (TypeError, ValueError) as exc:
        return False, f"snapshot is not JSON-serialisable: {exc}"
    fresh = spec.build(scripted_llm(), _context("checker-user-a", schema))
    fresh.restore(json.loads(text))
    if _canon(await fresh.snapshot()) != text:
        return False, "snapshot -> restore into a fresh agent -> snapshot differs"
    if not isinstance(fresh.memory_view(), str):
        return False, "memory_view() must return str"
    stats = fresh.stats()
    if not isinstance(stats, dict):
        return False, "stats() must return a dict"
    try:
        json.dumps(stats)
    except (TypeError, ValueError) as exc:
        return False, f"stats() is not JSON-serialisable: {exc}"
    return True, ""


async def _check_answer_is_pure(spec: AgentSpec, schema: dict[str, list[str]] | None) -> tuple[bool, str]:
    agent = spec.build(scripted_llm(), _context("checker-user-a", schema))
    await _episode(agent)
    before = _canon(await agent.snapshot())
    reply = await agent.answer(QUESTION)
    if not isinstance(reply, str):
        return False, "answer() must return str"
    if _canon(await agent.snapshot()) != before:
        return False, "answer() changed the agent's state (snapshot before != after)"
    return True, ""


async def _check_isolation(spec: AgentSpec, schema: dict[str, list[str]] | None) -> tuple[bool, str]:
    llm = scripted_llm()
    a = spec.build(llm, _context("checker-user-a", schema))
    b = spec.build(llm, _context("checker-user-b", schema))
    b_before = _canon(await b.snapshot())
    await _episode(a)
    if _canon(await b.snapshot()) != b_before:
        return False, "another user's agent changed when this one talked (shared state)"
    return True, ""


async def _check_determinism(spec: AgentSpec, schema: dict[str, list[str]] | None) -> tuple[bool, str]:
    snaps = []
    for _ in range(2):
        agent = spec.build(scripted_llm(), _context("checker-user-a", schema))
        await _episode(agent)
        snaps.append(_canon(await agent.snapshot()))
    if snaps[0] != snaps[1]:
        return False, "two identical scripted episodes gave different snapshots"
    return True, ""
