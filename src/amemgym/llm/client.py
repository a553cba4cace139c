"""The one seam every role calls: limits, retries, cache, dedup and accounting around a backend."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from operator import itemgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type

from ..config import ROLE_TEMPERATURE, ROLES, EndpointConfig, LLMConfig, looks_like_key
from ..errors import BackendUnavailable, LLMError, MalformedOutput
from ..seeding import derive_seed
from ..urls import check_base_url
from .backends import ChatBackend, EmbedBackend, PermanentError, TransientError
from .cache import ResponseCache
from .embedded import get_embedded_server
from .embedded_model import embedded_identity
from .embedder import MiniLMEmbedder
from .limiter import AdaptiveLimiter
from .openai_backend import OpenAIBackend, OpenAIEmbedBackend, public_url
from .parsing import parse_json_reply
from .redact import redact, redact_content, register_secret
from .types import ChatMessage, ChatRequest, ChatResult, ToolCallOut
from .usage import CallJournal, UsageLedger

if TYPE_CHECKING:
    import numpy as np


def default_cache_dir() -> Path:
    """``$AMEMGYM_CACHE_DIR`` or ``~/.cache/amemgym``."""
    return Path(os.environ.get("AMEMGYM_CACHE_DIR") or Path.home() / ".cache" / "amemgym")


def read_api_key(endpoint: EndpointConfig) -> str | None:
    """The endpoint's key from its key file or environment variable, read at call time only."""
    if endpoint.api_key_file:
        try:
            key = Path(endpoint.api_key_file).expanduser().read_text(encoding="utf-8").strip() or None
        except OSError as exc:
            name = endpoint.api_key_file
            if "/" not in name and "\\" not in name and looks_like_key(name.replace(".", "")):
                name = "(not shown: a name with no folder that looks like a key itself, perhaps pasted by mistake)"
            raise BackendUnavailable(f"cannot read api_key_file {name}: {exc.strerror}") from None
    else:
        key = os.environ.get(endpoint.api_key_env) or None
    register_secret(key)  # so an error text that echoes it is scrubbed before it is stored or printed
    return key


#: Retry kinds that say the model's output was empty, not that the server or the network failed (a reply with
#: no choices at all, or an error body, is the server's failure: retried unchanged, never kept as silence).
_EMPTY_OUTPUT = frozenset({"empty_reply"})


def _resampling(backend: ChatBackend, req: ChatRequest) -> Callable[[], Awaitable[ChatResult]]:
    """One attempt of ``req`` per call; after an empty reply the next attempts sample a little (another seed,
    temperature at least 0.5). A greedy decoder answers the same request with the same empty reply every time,
    so plain retries could never succeed; a failure of the server or the network is retried unchanged. The
    reply is cached under ``req``'s own key, so a re-run replays it."""
    empty = 0

    async def attempt() -> ChatResult:
        nonlocal empty
        sent = req if not empty else replace(req, seed=(req.seed or 0) + 7919 * empty,
                                              temperature=max(req.temperature, 0.5))
        try:
            return await backend.complete(sent)
        except TransientError as exc:
            if exc.kind in _EMPTY_OUTPUT:
                empty += 1
            raise

    return attempt


def register_keys(config: LLMConfig) -> None:
    """Register every role's key (:func:`read_api_key`) that can be read now, also a role's that is never called:
    a server, or a plug-in's code, may echo any of the user's keys. A missing key file is said when a call needs
    it, not here."""
    for role in ROLES:
        try:
            read_api_key(config.endpoint(role))
        except BackendUnavailable:
            pass


_ROLE_CONTENT = itemgetter("role", "content")
_T = TypeVar("_T")

#: The message keys a chat request carries to the backend; anything else a caller attached is dropped.
_WIRE_KEYS = ("role", "content", "tool_calls", "tool_call_id", "name")


def _wire_message(m: ChatMessage) -> ChatMessage:
    return {k: m[k] for k in _WIRE_KEYS if k in m}


def _flight_key(req: ChatRequest, backend_id: str, model: str, plain: bool = True) -> tuple[Any, ...]:
    """The fields of ``ChatRequest.cache_key`` as a hashable tuple: exact and cheap, valid in one process.

    ``plain`` says every message is just role and content (nearly always); otherwise tool messages, which
    nest lists, are keyed by their JSON.
    """
    schema = json.dumps(req.json_schema, sort_keys=True) if req.json_schema is not None else None
    tools = (json.dumps([req.tools, req.tool_choice], sort_keys=True)
             if req.tools is not None or req.tool_choice is not None else None)
    messages: tuple[Any, ...]
    if plain:
        messages = tuple(map(_ROLE_CONTENT, req.messages))
    else:
        messages = tuple((m["role"], m["content"]) if len(m) == 2 else json.dumps(m, sort_keys=True)
                         for m in req.messages)
    return (backend_id, model, messages, req.temperature, req.max_tokens, schema, req.schema_name, req.seed, tools)


def _usable(text: Any, accept: Callable[[str], bool] | None, tool_calls: Any = ()) -> bool:
    """Whether a reply may be returned from, or stored in, the cache.

    A reply that calls tools is usable with empty text when nothing judges it; ``accept`` judges the text, calls
    or not (a structured call's reply must parse whatever else it carries).
    """
    if tool_calls and accept is None:
        return True
    if not isinstance(text, str) or not text.strip():
        return False
    return accept is None or accept(text)


def _http_limits(ep: EndpointConfig) -> dict[str, Any]:
    """The endpoint's time and size limits as :class:`OpenAIBackend` keyword arguments."""
    return {"timeout_s": ep.timeout_s, "connect_timeout_s": ep.connect_timeout_s,
            "read_timeout_s": ep.read_timeout_s, "max_reply_bytes": ep.max_reply_bytes}


class _StopRetrying:
    """tenacity's stop policy for one call: after ``attempts`` tries, or sooner once timeouts alone have used
    up their own budget (a dead endpoint should not cost the whole retry budget in timeouts), or at once when
    the server asks to wait longer than ``longest_wait`` seconds (waiting the longest wait instead, attempt
    after attempt, would hold the call for many minutes and still fail)."""

    def __init__(self, attempts: int, timeout_retries: int, longest_wait: float) -> None:
        self.attempts, self.timeout_retries, self.longest_wait = attempts, timeout_retries, longest_wait
        self.timeouts = 0

    def __call__(self, state: RetryCallState) -> bool:
        exc = state.outcome.exception() if state.outcome is not None else None
        if isinstance(exc, TransientError) and (exc.retry_after or 0) > self.longest_wait:
            return True
        if isinstance(exc, TransientError) and exc.kind == "timeout":
            self.timeouts += 1
            if self.timeouts > self.timeout_retries:
                return True
        return state.attempt_number >= self.attempts


class _Backoff:
    """tenacity's wait policy: exponential backoff with full jitter that honours a server's Retry-After."""

    def __init__(self, base: float, cap: float, rng: random.Random) -> None:
        self.base, self.cap, self.rng = base, cap, rng

    def __call__(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome is not None else None
        delay = self.rng.uniform(0, min(self.cap, self.base * 2 ** (state.attempt_number - 1)))
        if isinstance(exc, TransientError) and exc.retry_after is not None:
            delay = max(delay, min(exc.retry_after, self.longest_wait))
        return delay

    @property
    def longest_wait(self) -> float:
        """The longest wait between two attempts, a server's Retry-After included."""
        return self.cap * 4


class LLMClient:
    """Chat and embedding calls for every role, each bounded, retried, cached and counted.

    Args:
        config: model settings per role.
        cache: response cache; ``None`` disables caching.
        ledger: where usage is counted (a fresh one by default).
        backends: fixed backends per role (tests and plug-ins); others resolve from ``config``.
        embedder: a fixed embedding backend.
        serial: one call at a time over all endpoints, for debugging.
        backoff_base: first backoff step in seconds (tests shrink it).
    """

    def __init__(
        self,
        config: LLMConfig | None = None,
        *,
        cache: ResponseCache | None = None,
        ledger: UsageLedger | None = None,
        backends: dict[str, ChatBackend] | None = None,
        embedder: EmbedBackend | None = None,
        serial: bool = False,
        backoff_base: float = 1.0,
        backoff_cap: float = 30.0,
    ) -> None:
        self.config = config or LLMConfig()
        self._endpoints: dict[str, EndpointConfig] = {}
        self.cache = cache
        self.ledger = ledger or UsageLedger()
        self._backends: dict[str, ChatBackend] = dict(backends or {})
        self._embedder = embedder
        self._limits: dict[str, AdaptiveLimiter] = {}
        self._serial = asyncio.Semaphore(1) if serial else None
        # Keyed by the cache key when there is one (already computed), else by the same fields as a tuple.
        self._inflight: dict[tuple[Any, ...] | str, asyncio.Future[ChatResult]] = {}
        self._backoff = _Backoff(backoff_base, backoff_cap, random.Random(0))
        self._longest_wait = self._backoff.longest_wait
        self._resolve_lock = asyncio.Lock()
        self._owned: list[Any] = []
        self._shared: dict[tuple[Any, ...], Any] = {}
        self._identities: dict[str, str] = {}
        self._answered_pins: dict[str, str] = {}
        self._identity_lock = asyncio.Lock()
        #: A run's seed (one per trial), mixed into every request's seed and so into its cache key: trials
        #: are fresh samples, never replays of each other from the cache. None leaves seeds as the caller
        #: gave them (generation, checks).
        self.sample_seed: int | None = None
        #: Where a run journals each finished call (set by the engine for the invocation; views share it).
        self.usage_journal: CallJournal | None = None
        register_keys(self.config)
        for role in ("generator", "simulator", "agent", "memory", "judge"):
            url = self.config.chat_base_url(role)  # type: ignore[arg-type]
            if url and not self.endpoint(role).base_url:
                # A configured base_url was checked when the config loaded; $OPENAI_BASE_URL bypasses that.
                check_base_url(url, "OPENAI_BASE_URL")
                break

    @classmethod
    def from_config(cls, config: LLMConfig, **kwargs: Any) -> LLMClient:
        """A client with the persistent cache the config asks for."""
        cache = None
        if config.cache:
            path = Path(config.cache_path) if config.cache_path else default_cache_dir() / "responses.sqlite"
            cache = ResponseCache(path)
        return cls(config, cache=cache, **kwargs)

    # ---- resolution -------------------------------------------------------------------------------
    def endpoint(self, role: str) -> EndpointConfig:
        """The effective endpoint config of ``role`` (merged once per role: the client's config is fixed)."""
        ep = self._endpoints.get(role)
        if ep is None:
            ep = self._endpoints[role] = self.config.endpoint(role)  # type: ignore[arg-type]
        return ep

    def base_url(self, role: str) -> str | None:
        """The configured HTTP endpoint of ``role``, or None for the embedded model."""
        return self.config.chat_base_url(role)  # type: ignore[arg-type]

    async def backend(self, role: str) -> ChatBackend:
        """The chat backend of ``role``, created on first use."""
        if role in self._backends:
            return self._backends[role]
        async with self._resolve_lock:
            if role not in self._backends:
                self._backends[role] = await self._make_backend(role)
                self._hold_to_answered(role)
        return self._backends[role]

    def hold_answered(self, models: Mapping[str, str]) -> None:
        """Refuse the replies of each role in ``models`` that name another model than the one given: the model
        that answered the role in an earlier invocation of the same run (a hosted alias moved to a new snapshot
        in between would otherwise mix two models' replies in one run, unnoticed)."""
        self._answered_pins.update({role: name for role, name in models.items() if name})
        for role in list(self._backends):
            self._hold_to_answered(role)

    def _hold_to_answered(self, role: str) -> None:
        pin = self._answered_pins.get(role)
        hold = getattr(self._backends[role], "expect_answered", None)
        if pin and hold is not None:
            hold(pin)

    async def _make_backend(self, role: str) -> ChatBackend:
        ep = self.endpoint(role)
        url = self.base_url(role)
        if url is None:
            emb = self.config.embedded
            server = await asyncio.to_thread(
                get_embedded_server, emb.model, emb.ctx_per_slot, emb.parallel, emb.threads
            )
            url = await asyncio.to_thread(server.start)
            backend = OpenAIBackend(url, server.model_name, None, **_http_limits(ep))
            backend_id = f"embedded:{emb.model}"
            wrapped = _EmbeddedChat(backend, backend_id, emb.ctx_per_slot)
            self._owned.append(backend)
            return wrapped
        # Roles on the same endpoint share one HTTP client (and its connection pool).
        share = (url, ep.model, ep.api_key_env, ep.api_key_file, *_http_limits(ep).values())
        if share not in self._shared:
            self._shared[share] = OpenAIBackend(url, ep.model, read_api_key(ep), **_http_limits(ep))
            self._owned.append(self._shared[share])
        return self._shared[share]

    async def model_identity(self, role: str) -> str:
        """The model that answers ``role``, as the server names it (resolved once, then fixed for this client).

        An HTTP endpoint is asked ``GET /models`` (retried like a call); the embedded model's identity is its
        pinned file, known without starting it. Backends given to the constructor report their own identity
        if they have one, else the configured model name.

        Raises:
            LLMError: when the endpoint cannot say which model it serves.
        """
        if role in self._identities:
            return self._identities[role]
        async with self._identity_lock:  # the first calls of a run arrive together: ask the server once
            if role in self._identities:
                return self._identities[role]
            ep = self.endpoint(role)
            if role not in self._backends and self.base_url(role) is None:
                identity = embedded_identity(self.config.embedded.model)
            else:
                backend = await self.backend(role)
                ask = getattr(backend, "model_identity", None)
                identity = await self._resolve_identity(role, ask, ep) if ask is not None else (ep.model or "")
            # Recorded in manifests and cache keys: a server that puts the key in its model list must not leak it.
            identity = redact_content(identity)
            self._identities[role] = identity
        return identity

    async def _resolve_identity(self, role: str, ask: Callable[[], Any], ep: EndpointConfig) -> str:
        # Retried like a chat call: the same stop and wait policies.
        def failure(exc: TransientError | PermanentError) -> LLMError:
            return LLMError(f"{role}: cannot learn which model the endpoint serves ({exc.kind}): {redact(str(exc))}")

        stop = _StopRetrying(ep.max_retries + 1, ep.max_timeout_retries, self._longest_wait)
        retrying = AsyncRetrying(stop=stop, wait=self._backoff,
                                 retry=retry_if_exception_type(TransientError), reraise=True)
        try:
            return str(await retrying(ask))
        except (TransientError, PermanentError) as exc:
            raise failure(exc) from None

    async def resolve_models(self, roles: tuple[str, ...]) -> dict[str, dict[str, Any]]:
        """:meth:`describe`, with the served model of each of ``roles`` under ``served``."""
        out = self.describe()
        for role in roles:
            out[role] = {**out[role], "served": await self.model_identity(role)}
        return out

    async def embedder(self) -> EmbedBackend:
        """The embedding backend (the embedded MiniLM unless the ``embedder`` role has an endpoint)."""
        if self._embedder is None:
            async with self._resolve_lock:
                if self._embedder is None:
                    self._embedder = await self._make_embedder()
        return self._embedder

    async def _make_embedder(self) -> EmbedBackend:
        ep = self.endpoint("embedder")
        url = ep.base_url  # not chat_base_url: many chat servers serve no embeddings
        if url:
            http = OpenAIBackend(url, ep.model, read_api_key(ep), **_http_limits(ep))
            self._owned.append(http)
            return OpenAIEmbedBackend(http)

        return _LocalEmbed(MiniLMEmbedder())

    def describe(self) -> dict[str, dict[str, Any]]:
        """Which backend and model each role resolves to (no secrets), without starting anything."""
        out: dict[str, dict[str, Any]] = {}
        for role in ("generator", "simulator", "agent", "memory", "judge"):
            fixed = self._backends.get(role)
            if fixed is not None:
                out[role] = {"backend": fixed.backend_id}
                continue
            url = self.base_url(role)
            ep = self.endpoint(role)
            if url:
                out[role] = {"backend": "openai", "base_url": public_url(url), "model": ep.model or "(server default)"}
            else:
                out[role] = {"backend": "embedded", "model": self.config.embedded.model}
        ep = self.endpoint("embedder")
        if self._embedder is not None:
            out["embedder"] = {"backend": self._embedder.backend_id}
        elif ep.base_url:
            out["embedder"] = {"backend": "openai", "base_url": public_url(ep.base_url), "model": ep.model}
        else:
            out["embedder"] = {"backend": "embedded", "model": "all-MiniLM-L6-v2 (int8 ONNX)"}
        return out

    def _limit(self, key: str, size: int) -> AdaptiveLimiter:
        # One adaptive limit per endpoint: ``max_concurrency`` is its ceiling, 429/5xx/latency lower it.
        if key not in self._limits:
            # The embedded server is already held to its decoding slots, and its latency follows the reply's
            # length on a CPU, not its load: only faults lower its limit.
            tolerance = float("inf") if key.startswith("embedded:") else 2.0
            self._limits[key] = self.ledger.limiters[key] = AdaptiveLimiter(size, latency_tolerance=tolerance)
        return self._limits[key]

    # ---- chat ---------------------------------------------------------------------------------------
    async def chat(
        self,
        role: str,
        messages: list[ChatMessage] | tuple[ChatMessage, ...],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        json_schema: dict[str, Any] | None = None,
        schema_name: str = "output",
        seed: int | None = None,
        tag: str = "",
        use_cache: bool = True,
        accept: Callable[[str], bool] | None = None,
        tools: list[dict[str, Any]] | tuple[dict[str, Any], ...] | None = None,
        tool_choice: str | dict[str, Any] | None = None,
        keep_empty: bool = False,
    ) -> ChatResult:
        """One chat completion for ``role``.

        ``accept`` tells whether a reply is usable (e.g. parses as the structure asked for). Only a usable
        reply is cached, and a cached reply that is not usable is ignored, so a bad answer is never replayed
        from the cache. An empty reply is never usable, unless it calls ``tools`` (function tools in the
        chat-completions form; the calls come back in ``ChatResult.tool_calls`` and replay from the cache).

        ``keep_empty`` is for conversation turns, where saying nothing is a reply the conversation can go on
        from: when every attempt came back empty, and the role has had answers before in this run (so the
        endpoint works), an empty, uncached result is returned and counted under ``empty_kept`` instead of
        failing the call. Scored answers never set it: an endpoint that answers nothing fails the user rather
        than scoring zero (docs/design.md §10).

        Raises:
            LLMError: when the call fails permanently or exhausts its retries (the failure is counted).
        """
        ep = self.endpoint(role)
        if temperature is None:
            temperature = ep.temperature if ep.temperature is not None else ROLE_TEMPERATURE.get(role, 0.0)
        msgs = tuple(messages)
        # Copying every message costs O(history) per call; only messages with extra keys need it, and
        # the keys of native tool use (docs/design.md §10) survive the copy.
        plain = {*map(len, msgs)} <= {2}
        if not plain:
            msgs = tuple(_wire_message(m) for m in msgs)
        if self.sample_seed is not None:
            seed = derive_seed(self.sample_seed, seed)
        req = ChatRequest(
            role=role,
            messages=msgs,
            temperature=float(temperature),
            max_tokens=int(max_tokens or ep.max_tokens),
            json_schema=json_schema,
            schema_name=schema_name,
            seed=seed,
            tag=tag,
            tools=tuple(tools) if tools is not None else None,
            tool_choice=tool_choice,
        )
        backend = await self.backend(role)
        # The served model, not just the configured name: a model swapped behind the same URL and name
        # gets new keys instead of the old model's answers.
        model_name = await self.model_identity(role)
        usage = self.ledger.role(role)
        caching = use_cache and self.cache is not None
        # The persistent key is a sha256 of the request's encoded body (ChatRequest.wire_fields), the same
        # bytes an HTTP backend then sends, so the history is encoded once per call; in-flight dedup keys on
        # it too. Without a cache no digest is needed: a tuple of the same fields is an exact dict key, and
        # Python caches each message string's hash on the string itself.
        key = req.cache_key(backend.backend_id, model_name) if caching else None
        flight: tuple[Any, ...] | str = key if key is not None else _flight_key(req, backend.backend_id, model_name,
                                                                                plain)
        if caching:
            assert self.cache is not None and key is not None
            hit = self.cache.get(key)
            replay = getattr(backend, "may_replay", None)
            if (hit is not None and _usable(hit.get("text"), accept, hit.get("tool_calls"))
                    and (replay is None or replay(str(hit.get("model") or "")))):
                usage.cache_hits += 1
                usage.cache_replays += 1
                return ChatResult(
                    text=hit["text"], model=hit.get("model", model_name), prompt_tokens=hit.get("prompt_tokens", 0),
                    completion_tokens=hit.get("completion_tokens", 0), cached=True,
                    finish_reason=hit.get("finish_reason"),
                    tool_calls=tuple(ToolCallOut.from_wire(c) for c in hit.get("tool_calls") or ()),
                )
        if flight in self._inflight:
            # An identical request is already on the wire (e.g. a shared upper-bound question): wait for it.
            res = await asyncio.shield(self._inflight[flight])
            usage.cache_hits += 1
            return ChatResult(**{**res.__dict__, "cached": True})
        fut: asyncio.Future[ChatResult] = asyncio.get_running_loop().create_future()
        self._inflight[flight] = fut
        empty = ChatResult(text="", model=model_name, tokens_reported=False)
        # Silence is the model's only where this role has had answers: an endpoint that never answered is broken,
        # and its empty replies must fail the user rather than enter the records.
        answered = usage.calls + usage.cache_hits > 0
        try:
            res = await self._retried(role, backend.backend_id, ep, _resampling(backend, req),
                                      on_empty=(lambda: empty) if keep_empty and answered else None)
        except BaseException as exc:
            fut.set_exception(exc)
            fut.exception()  # mark retrieved: waiters re-raise it themselves
            raise
        finally:
            self._inflight.pop(flight, None)
        fut.set_result(res)
        if res is empty:
            # Kept empty (``keep_empty``), counted by _retried, and never cached: no empty reply is, so a server
            # that misbehaved leaves nothing a later run would replay.
            return res
        if res.model and not usage.answered:
            usage.answered = res.model
        processed = res.prompt_tokens_processed if res.prompt_tokens_processed is not None else res.prompt_tokens
        self._spend(role, ep, 1, res.prompt_tokens, res.completion_tokens, processed, res.seconds)
        if res.finish_reason == "length":
            usage.truncated += 1
        if not res.tokens_reported:
            usage.uncounted += 1
        if not _usable(res.text, accept, res.tool_calls):
            usage.unusable += 1
        elif caching:
            assert self.cache is not None and key is not None
            record: dict[str, Any] = {
                "text": res.text, "model": res.model, "prompt_tokens": res.prompt_tokens,
                "completion_tokens": res.completion_tokens, "finish_reason": res.finish_reason,
            }
            if res.tool_calls:
                record["tool_calls"] = [c.to_wire() for c in res.tool_calls]
            self.cache.put(key, role, model_name, record)
        return res

    def _spend(self, role: str, ep: EndpointConfig, calls: int, prompt: int, completion: int, processed: int,
               seconds: float) -> None:
        """Count what a reply cost under ``role``, and journal it so a resumed run still counts it."""
        usage = self.ledger.role(role)
        cost = (prompt * ep.price_per_mtok_in + completion * ep.price_per_mtok_out) / 1e6
        usage.calls += calls
        usage.prompt_tokens += prompt
        usage.completion_tokens += completion
        usage.prompt_tokens_processed += processed
        usage.seconds += seconds
        usage.cost_usd += cost
        if self.usage_journal is not None:
            self.usage_journal.record(role, (calls, prompt, completion, processed, seconds, cost))

    async def _retried(self, role: str, backend_id: str, ep: EndpointConfig,
                       call: Callable[[], Awaitable[_T]], on_empty: Callable[[], _T] | None = None) -> _T:
        """``call()`` under the endpoint's adaptive limit, retried on transient failures, its faults counted
        under ``role``; a failure that outlives the retries is one :class:`LLMError` line, unless every retry
        was spent on empty output and ``on_empty`` gives what to return instead (counted as ``empty_kept``)."""
        usage = self.ledger.role(role)
        size = ep.max_concurrency
        if backend_id.startswith("embedded:"):
            # More requests than decoding slots would only queue inside llama.cpp and hit timeouts.
            size = min(size, self.config.embedded.parallel)
        limit = self._limit(backend_id, size)
        stop = _StopRetrying(ep.max_retries + 1, ep.max_timeout_retries, self._longest_wait)
        kinds: list[str] = []  # this call's faults, in order

        async def attempt() -> _T:
            try:
                async with limit.slot(), self._serial or contextlib.nullcontext():
                    with self.ledger.waiting():
                        return await call()
            except (TransientError, PermanentError) as exc:
                kinds.append(exc.kind)
                usage.faults[exc.kind] += 1
                spent = getattr(exc, "spent", None)
                if spent is not None:
                    # A reply rejected after it arrived (empty, malformed) was still paid for.
                    prompt, completion, processed = spent
                    self._spend(role, ep, 0, prompt, completion, processed, 0.0)
                elif getattr(exc, "arrived", False):
                    usage.uncounted_rejected += 1
                raise

        def count_retry(state: RetryCallState) -> None:
            usage.retries += 1

        retrying = AsyncRetrying(stop=stop, wait=self._backoff, retry=retry_if_exception_type(TransientError),
                                 before_sleep=count_retry, reraise=True)
        try:
            return await retrying(attempt)
        except TransientError as exc:
            if on_empty is not None and all(k in _EMPTY_OUTPUT for k in kinds):
                # Silence only when the model was silent every time: an outage that ends on one empty reply
                # is the server's failure.
                usage.empty_kept += 1
                usage.empty_kept_attempts += len(kinds)
                return on_empty()
            usage.failures += 1
            n = retrying.statistics.get("attempt_number", 1)
            wait = self._longest_wait
            later = (f"; the endpoint asks to wait {exc.retry_after:,.0f} s before the next attempt (Retry-After), "
                     f"longer than amemgym waits ({wait:,.0f} s): re-run the same command later to resume"
                     if (exc.retry_after or 0) > wait else "")
            raise LLMError(f"{role} call failed after {n} attempt{'s' if n != 1 else ''}: {exc.kind}{later}") from None
        except PermanentError as exc:
            usage.failures += 1
            raise LLMError(
                f"{role} call rejected by the endpoint ({exc.kind}); not retried: {redact(str(exc))}") from None

    async def chat_json(
        self,
        role: str,
        messages: list[ChatMessage],
        schema: dict[str, Any],
        *,
        check: Callable[[Any], str | None] | None = None,
        attempts: int = 3,
        schema_name: str = "output",
        **kwargs: Any,
    ) -> tuple[Any, ChatResult]:
        """A structured call: the reply must parse as JSON and pass ``check`` (which returns a problem or None).

        A reply that breaks the schema is retried with a different seed (bounded) and counted as a schema
        retry; the broken reply is never cached as the answer.

        Raises:
            MalformedOutput: if no attempt produced valid output.
            LLMError: if a call itself failed.
        """
        last = ""
        base_seed = kwargs.pop("seed", None)
        temperature = kwargs.pop("temperature", None)
        verdicts: dict[str, tuple[Any, str | None]] = {}

        def judge(text: str) -> tuple[Any, str | None]:
            if text not in verdicts:
                value = parse_json_reply(text)
                verdicts[text] = (value, "reply is not valid JSON" if value is None
                                  else (check(value) if check else None))
            return verdicts[text]

        for i in range(attempts):
            seed = base_seed if i == 0 else (base_seed or 0) + 7919 * i
            # A greedy decoder would repeat the same broken reply; later attempts sample a little.
            temp = temperature if i == 0 else max(temperature or 0.0, 0.5)
            # The parse and check run before caching: a reply that fails them is never stored as the answer.
            res = await self.chat(role, messages, json_schema=schema, schema_name=schema_name, seed=seed,
                                  temperature=temp, accept=lambda text: judge(text)[1] is None, **kwargs)
            value, problem = judge(res.text)
            if problem is None:
                return value, res
            last = problem
            self.ledger.role(role).schema_retries += 1
        raise MalformedOutput(f"{role} produced no valid structured output after {attempts} attempts: {last}")

    # ---- embeddings --------------------------------------------------------------------------------
    async def embed(self, texts: list[str]) -> np.ndarray:
        """Embed texts with the embedder role (counted under ``embedder``)."""
        backend = await self.embedder()
        usage = self.ledger.role("embedder")
        start = time.perf_counter()
        if isinstance(backend, OpenAIEmbedBackend):
            # An HTTP embedder is an endpoint like any other: limited, retried, and failing in one line.
            vecs = await self._retried("embedder", backend.backend_id, self.endpoint("embedder"),
                                       lambda: backend.embed(list(texts)))
        else:
            vecs = await backend.embed(list(texts))
        tokens, seconds = sum(len(t.split()) for t in texts), time.perf_counter() - start
        usage.calls += 1
        usage.prompt_tokens += tokens
        usage.seconds += seconds
        if self.usage_journal is not None:
            self.usage_journal.record("embedder", (1, tokens, 0, 0, seconds, 0.0))
        return vecs

    async def aclose(self) -> None:
        """Close owned HTTP clients (the embedded server is process-wide and stops at exit) and write the
        replies the response cache still holds (it stays open)."""
        for backend in self._owned:
            with contextlib.suppress(Exception):
                await backend.aclose()
        self._owned.clear()
        if self.cache is not None:
            self.cache.flush()


class _EmbeddedChat:
    """Gives the embedded server's HTTP backend a stable cache identity independent of its port, and names the
    setting to raise when llama.cpp refuses a prompt longer than one slot."""

    def __init__(self, inner: Any, backend_id: str, ctx_per_slot: int) -> None:
        self._inner = inner
        self.backend_id = backend_id
        self._ctx = ctx_per_slot

    async def complete(self, req: ChatRequest) -> ChatResult:
        try:
            return await self._inner.complete(req)
        except PermanentError as exc:
            if exc.kind != "http_400" or "context size" not in str(exc):
                raise
            advice = (f"; the embedded model's slots hold {self._ctx:,} tokens: raise them with "
                      f"--set llm.embedded.ctx_per_slot={2 * self._ctx}")
            raise PermanentError(exc.kind, f"{exc}{advice}") from exc

    async def model_identity(self) -> str:
        return embedded_identity(self.backend_id.removeprefix("embedded:"))

    def expect_answered(self, model: str) -> None:
        self._inner.expect_answered(model)

    def may_replay(self, model: str) -> bool:
        return bool(self._inner.may_replay(model))


class _LocalEmbed:
    """Runs the in-process ONNX embedder in a worker thread so the event loop keeps going."""

    def __init__(self, embedder: Any) -> None:
        self._embedder = embedder
        self.dim = int(embedder.dim)
        self.backend_id = f"local:{getattr(embedder, 'name', 'minilm')}"

    async def embed(self, texts: list[str]) -> np.ndarray:
        try:
            return await asyncio.to_thread(self._embedder.embed, texts)
        except BackendUnavailable:
            raise
        except Exception as exc:  # noqa: BLE001
            raise LLMError(f"embedder failed: {redact(str(exc))}") from exc

