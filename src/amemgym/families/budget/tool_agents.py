"""Tool agents beyond the text-protocol LLM: native function calls, the protocol choice, and plug-ins.

The harness always speaks the strict text protocol to its :class:`~.harness.ToolAgent`. The native agent
translates that conversation into chat-completions tool messages and the model's function call back into
the canonical JSON reply, so the store, budget, checkpoint and trace are the same in both protocols
(docs/budget.md, "Running an agent").
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...agents.base import AgentContext, MemoryAgent
from ...agents.guard import call_factory, call_plugin
from ...agents.registry import plugin_failure, resolve_agent
from ...errors import AMemGymError, ConfigError, LLMError, RunError
from ...llm.client import LLMClient
from ...llm.types import ChatMessage, ToolCallOut
from ...prompts import render
from ...textclean import clean_value
from .harness import LLMToolAgent, ToolAgent
from .model import Episode, Event
from .policies import AGENTS
from .protocol import TOOLS, function_tools, strip_fence
from .tiers import Tier

#: Values of ``budget.tools``.
TOOL_SETTINGS = ("auto", "native", "text")
#: How the harness's feedback to a tool call starts; anything else after a call is the next event's opening.
FEEDBACK_PREFIXES = ("result:", "error:", "protocol error:")
#: The tool output shown for a call that ended its event (the harness sends no feedback then).
ENDED = "ok"
#: The tool output for each call of a reply that made several: none of them was run.
SEVERAL_CALLS = "error: several function calls in one reply; none was run. Call one function per reply."


def canonical_reply(calls: tuple[ToolCallOut, ...], text: str) -> str:
    """The text-protocol reply for a native reply.

    One call becomes ``{"tool": NAME, "args": ARGS}`` (arguments that are not JSON are passed on as a string,
    so the protocol rejects them with its usual error). Several calls become a JSON list, which the protocol
    rejects as a whole: none is run, as with two JSON objects in a text reply. No call leaves the text as
    the model wrote it (it may still hold a valid JSON call).
    """
    if not calls:
        return text
    objs = [{"tool": c.name, "args": _arguments(c.arguments)} for c in calls]
    return json.dumps(objs[0] if len(objs) == 1 else objs, ensure_ascii=False)


def _arguments(raw: str) -> Any:
    try:
        # Arguments are JSON text inside the reply: their escapes can still spell a lone surrogate.
        return clean_value(json.loads(raw)) if raw.strip() else {}
    except (ValueError, RecursionError):
        return raw


def _calls_in(content: str) -> list[tuple[str, Any]] | None:
    """The (tool, args) pairs a text-protocol reply holds, or None when it is not shaped like calls."""
    try:
        obj = clean_value(json.loads(strip_fence(content)))
    except (ValueError, RecursionError):
        return None
    items = obj if isinstance(obj, list) and len(obj) > 1 else [obj]
    out = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("tool"), str) or set(item) - {"tool", "args"}:
            return None
        out.append((item["tool"], item.get("args", {})))
    return out


def to_native(messages: list[dict[str, str]]) -> list[ChatMessage]:
    """The harness's text-protocol conversation as chat-completions messages with tool calls and results.

    Call ids come from message positions, so the same history always gives the same request (and cache key).
    """
    out: list[ChatMessage] = []
    i = 0
    while i < len(messages):
        m = messages[i]
        calls = _calls_in(m["content"]) if m["role"] == "assistant" else None
        if m["role"] == "system" and i == 0:
            out.append({"role": "system", "content": m["content"].rstrip() + "\n\n" + render("budget_agent_native")})
        elif calls is None:
            out.append({"role": m["role"], "content": m["content"]})
        else:
            ids = [f"call_{i}" if len(calls) == 1 else f"call_{i}_{j}" for j in range(len(calls))]
            wire = [ToolCallOut(cid, name, args if isinstance(args, str) else json.dumps(args, ensure_ascii=False))
                    for cid, (name, args) in zip(ids, calls, strict=True)]
            out.append({"role": "assistant", "content": "", "tool_calls": [w.to_wire() for w in wire]})
            nxt = messages[i + 1] if i + 1 < len(messages) else None
            result = ENDED
            if nxt is not None and nxt["role"] == "user" and nxt["content"].startswith(FEEDBACK_PREFIXES):
                result = nxt["content"]
                i += 1
            for cid in ids:
                out.append({"role": "tool", "tool_call_id": cid, "content": SEVERAL_CALLS if len(ids) > 1 else result})
        i += 1
    return out


class NativeToolAgent:
    """The ``agent`` role's model with the tools offered as native function tools (chat-completions ``tools``)."""

    def __init__(self, llm: LLMClient, *, max_tokens: int = 512) -> None:
        self.llm, self.max_tokens = llm, max_tokens
        self.tools = function_tools()

    async def act(self, messages: list[dict[str, str]], *, event: Event) -> str:
        """One chat call with the tools; the reply as a text-protocol string."""
        res = await self.llm.chat("agent", to_native(messages), max_tokens=self.max_tokens, tag="budget.agent",
                                  tools=self.tools)
        return canonical_reply(res.tool_calls, res.text)


# ---- choosing the protocol ---------------------------------------------------------------------------
@dataclass(frozen=True)
class ProtocolChoice:
    """Which protocol the built-in agent speaks, and why."""

    protocol: str
    reason: str


#: Probe outcomes per (backend, served model), so many episodes in one process probe once.
_PROBED: dict[tuple[str, str], ProtocolChoice] = {}


async def probe_native(llm: LLMClient) -> ProtocolChoice:
    """Whether the agent's endpoint makes a native function call when one is forced.

    A rejection that names tools, or a reply without a call, means text. Other failures are raised: a flaky
    endpoint must not decide the protocol.
    """
    if llm.describe()["agent"]["backend"] == "embedded":
        # Its template offers the tools, but the bundled 0.5B model writes JSON text instead of calls, even
        # when a call is forced (docs/budget.md, "Tool protocols").
        return ProtocolChoice("text", "the embedded model does not make native tool calls")
    backend = await llm.backend("agent")
    key = (backend.backend_id, await llm.model_identity("agent"))
    if key in _PROBED:
        return _PROBED[key]
    messages = [{"role": "user", "content": render("budget_tools_probe")}]
    try:
        res = await llm.chat("agent", messages, max_tokens=64, tag="budget.tools_probe", tools=function_tools(),
                             tool_choice={"type": "function", "function": {"name": "done"}})
    except LLMError as exc:
        text = str(exc)
        if "rejected by the endpoint (http_4" not in text or "tool" not in text.split("not retried:", 1)[-1].lower():
            raise
        choice = ProtocolChoice("text", f"the endpoint rejected tools: {text.split('not retried: ', 1)[-1]}")
    else:
        choice = (ProtocolChoice("native", "the endpoint made the forced call")
                  if any(c.name == "done" for c in res.tool_calls)
                  else ProtocolChoice("text", "the endpoint made no call when one was forced"))
    _PROBED[key] = choice
    return choice


async def choose_protocol(llm: LLMClient, setting: str, pinned: ProtocolChoice | None) -> ProtocolChoice:
    """The protocol of a run: the one ``pinned`` by its first invocation (the engine keeps it in the manifest),
    else the configured one, or with ``auto`` the endpoint's answer to one probe.

    Raises:
        ConfigError: for an unknown setting.
        RunError: when the run was made with another protocol than the one now asked for.
    """
    if setting not in TOOL_SETTINGS:
        raise ConfigError(f"budget.tools: expected one of {', '.join(TOOL_SETTINGS)}, got {setting!r}")
    if pinned is not None and pinned.protocol in ("native", "text") and setting in ("auto", pinned.protocol):
        return pinned
    if pinned is not None:
        raise RunError(f"the run was made with the {pinned.protocol} tool protocol, now {setting!r} is asked "
                       "for; a resume keeps its protocol (use a new --out directory)")
    return await probe_native(llm) if setting == "auto" else ProtocolChoice(setting, "configured (budget.tools)")


def keep_choice(pinned: ProtocolChoice | None, choice: ProtocolChoice) -> ProtocolChoice:
    """``choice`` when nothing is pinned, else the pinned protocol once checked to be the same.

    Raises:
        RunError: when the run was made with another protocol.
    """
    if pinned is not None and pinned.protocol != choice.protocol:
        raise RunError(f"the run was made with the {pinned.protocol} tool protocol, not {choice.protocol}; "
                       "use a new --out directory")
    return pinned or choice


def builtin_tool_agent(llm: LLMClient, protocol: str, *, max_tokens: int = 512) -> ToolAgent:
    """The built-in agent speaking ``protocol`` (``native`` or ``text``)."""
    if protocol == "native":
        return NativeToolAgent(llm, max_tokens=max_tokens)
    return LLMToolAgent(llm, max_tokens=max_tokens)


# ---- plug-ins ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class EpisodeView:
    """What a player of an episode may know before it starts: the rules, never the content.

    No questions, gold answers, entities, events or changes: a plug-in learns those only as the harness
    shows them, event by event (docs/budget.md, "Plug-ins").

    Attributes:
        tier: the tier's sizes (entities, questions, corrections, write budget, sessions).
        domain: the domain's name (the system prompt names its entities anyway).
        budget: memory writes allowed, or None under the long-context reference.
        note_chars: the longest note a write or edit may leave.
        tools: the tool names of the protocol.
    """

    tier: Tier
    domain: str
    budget: int | None
    note_chars: int
    tools: tuple[str, ...]

    @classmethod
    def of(cls, episode: Episode, *, policy: str = "budget") -> EpisodeView:
        """The view of ``episode`` under ``policy``."""
        return cls(tier=episode.tier, domain=episode.domain,
                   budget=None if policy == "long-context" else episode.tier.writes,
                   note_chars=episode.note_chars, tools=tuple(TOOLS))


@dataclass(frozen=True)
class EventView:
    """The event a plug-in's ``act`` is told about: what is on screen, nothing the harness keeps for scoring.

    Attributes:
        index: the event's position in the stream (0-based).
        session: its session (multi-session tiers cut the context between sessions).
        kind: documents, memo, correction, contradiction or question.
        text: the event's text, as the opening message shows it.
        question: the question's id for a question event (the key of its answer), else None.
    """

    index: int
    session: int
    kind: str
    text: str
    question: str | None

    @classmethod
    def of(cls, event: Event) -> EventView:
        """The view of ``event``."""
        return cls(event.index, event.session, event.kind, event.text, event.question)


@dataclass(frozen=True)
class ToolAgentContext(AgentContext):
    """What a budget-family plug-in's factory is told, whichever contract it implements.

    A tool agent reads the rules of the episode it will play (:class:`EpisodeView`) and the harness policy;
    a memory agent reads ``store_factory`` (the harness's metered store) like any
    :class:`~amemgym.agents.base.AgentContext`.
    """

    episode: EpisodeView | None = None
    policy: str = "budget"
    max_tokens: int = 512


class PluginToolAgent:
    """A plug-in tool agent behind the guard (:mod:`amemgym.agents.guard`).

    Each ``act`` gets copies of the messages (a plug-in that edits them cannot rewrite the trace) and the
    :class:`EventView` of the event; it runs watched and limited, and must return a string. With ``rebuild``,
    every event after the first is played by a freshly built agent: what crosses events must go through the
    metered store, not the agent's own attributes (found by probing: an agent that kept every document in a list
    answered with no write at all). Module-level state is beyond what the harness can see; docs/budget.md says so.
    """

    def __init__(self, inner: ToolAgent, name: str, rebuild: Callable[[], ToolAgent] | None = None) -> None:
        self.inner, self.name, self.rebuild = inner, name, rebuild
        self._event: int | None = None

    async def act(self, messages: list[dict[str, str]], *, event: Event) -> str:
        """The plug-in's next reply."""
        if self.rebuild is not None and self._event is not None and event.index != self._event:
            self.inner = self.rebuild()
        self._event = event.index
        copies = [dict(m) for m in messages]
        return await call_plugin(self.name, "act", self.inner.act, copies,  # type: ignore[no-any-return]
                                 event=EventView.of(event), expect=str)


def tool_agent_problem(obj: object) -> str | None:
    """What ``obj`` lacks to be a tool agent, or None."""
    act = getattr(obj, "act", None)
    if act is None or not callable(act):
        return "an act(messages, *, event) method (async, or a plain function run in a thread)"
    try:
        params = inspect.signature(act).parameters
    except (TypeError, ValueError):
        return None
    if "event" not in params and not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return "act must take the keyword argument event"
    return None


def resolve_tool_agent(name: str, llm: LLMClient, ctx: ToolAgentContext) -> ToolAgent | None:
    """A plug-in tool agent, built for one episode: ``name`` is ``module:factory``, ``path/file.py:factory``, or
    an agent config file whose ``type`` is one of those.

    The factory is called as ``factory(llm, ctx)``. Returns None when ``name`` is not a plug-in (a built-in
    memory agent) or its factory built a memory agent (the MemoryAgent contract, handled apart).

    Raises:
        ConfigError: ``name`` is unknown, the plug-in cannot be loaded, its factory raised, or it built something
            that is neither a tool agent nor a memory agent (the message names what is missing).
    """
    spec = resolve_agent(name, also=tuple(AGENTS))
    if not spec.plugin:
        return None

    def build() -> object:
        try:
            return call_factory(name, "its factory", spec.factory, llm, ctx)
        except AMemGymError:
            raise
        except (Exception, SystemExit) as exc:  # a plug-in's own bug: one line naming it
            raise plugin_failure(name, "its factory", exc) from None

    obj = build()
    if isinstance(obj, MemoryAgent):
        return None
    problem = tool_agent_problem(obj)
    if problem is not None or not isinstance(obj, ToolAgent):
        raise ConfigError(f"agent {name!r}: its factory returned {type(obj).__name__}, not a tool agent "
                          f"(needs {problem or 'act'})")
    return PluginToolAgent(obj, name, rebuild=lambda: build())  # type: ignore[arg-type, return-value]


__all__ = ["EpisodeView", "EventView", "NativeToolAgent", "PluginToolAgent", "ProtocolChoice", "ToolAgentContext",
           "canonical_reply", "choose_protocol", "keep_choice", "probe_native", "resolve_tool_agent", "to_native",
           "tool_agent_problem"]
