"""OpenAI-compatible HTTP backend: hosted APIs, vLLM, SGLang, Ollama, llama.cpp servers.

Requests go out as plain JSON through one httpx client per endpoint (``llm/http.py``). The wire format is
the public chat-completions API; the SDK's request and response models would add CPU per call and nothing
a harness needs.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import os
import ssl
import time
from time import perf_counter
from typing import Any
from urllib.parse import parse_qsl, urlsplit, urlunsplit

import httpx
import numpy as np
import orjson

from ..textclean import clean_text, clean_value
from ..urls import REDIRECT_ADVICE, path_params, public_url, query_secret
from .backends import PermanentError, TransientError
from .http import ReplyTooLarge, Response, SetupError, Transport
from .redact import redact, register_secret
from .timeouts import resolve_timeouts
from .types import ChatRequest, ChatResult, ToolCallOut

__all__ = ["DEFAULT_MAX_REPLY_BYTES", "OpenAIBackend", "OpenAIEmbedBackend", "classify", "public_url",
           "status_error"]

_RETRYABLE_STATUS = {408, 409, 425, 429}
#: Far above any chat reply (a few KB) or embedding batch (about 2 MB for 64 texts at 1536 dimensions).
DEFAULT_MAX_REPLY_BYTES = 4 << 20


def _retry_after(headers: Any) -> float | None:
    """Seconds a ``Retry-After`` header asks for: a number of seconds, or an HTTP date (RFC 9110)."""
    value = headers.get("retry-after") if headers is not None else None
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        return None  # a date without a zone cannot be compared with now
    return max(0.0, when.timestamp() - time.time())


def _looks_like_json(body: bytes) -> bool:
    return body.lstrip()[:1] in (b"{", b"[")


#: Longest server error message kept in an error (and so in failures.json).
MAX_ERROR_CHARS = 1000


def status_error(status: int, body: bytes, headers: Any) -> TransientError | PermanentError:
    """Map a non-2xx response onto our retry decision (5xx and 408/409/425/429 are worth retrying)."""
    if status >= 500 or status in _RETRYABLE_STATUS:
        return TransientError(f"http_{status}", f"HTTP {status}", retry_after=_retry_after(headers))
    if status < 400:
        where = (headers.get("location") if headers is not None else None) or "elsewhere"
        text = f"HTTP {status}: the server redirects to {where}; {REDIRECT_ADVICE}"
        return PermanentError(f"http_{status}", redact(text))
    if not _looks_like_json(body):
        # An HTML error page says nothing the status does not, and would flood the one-line error.
        kind = (headers.get("content-type") if headers is not None else None) or "no content type"
        return PermanentError(f"http_{status}", f"HTTP {status} ({kind.split(';')[0]} reply, not the API's JSON)")
    message = body[:300].decode("utf-8", "replace")
    try:
        err = json.loads(body).get("error")
        message = str(err.get("message", err)) if isinstance(err, dict) else str(err or message)
    except (ValueError, AttributeError, RecursionError):
        pass
    if len(message) > MAX_ERROR_CHARS:
        # One line for a person to read, kept in failures.json per failed unit: not a copy of whatever came back.
        message = message[:MAX_ERROR_CHARS] + f"... ({len(message):,} characters)"
    return PermanentError(f"http_{status}", redact(f"HTTP {status}: {clean_text(message)}"))


def classify(exc: BaseException, proxy: str | None = None) -> TransientError | PermanentError:
    """Map a transport exception onto our retry decision, its message scrubbed of secrets.

    ``proxy``: the (public) proxy the request went through, named in connection failures.
    """
    out = _classify(exc)
    text = str(out)
    if proxy and out.kind in ("connection", "proxy", "timeout") and proxy not in text:
        text = f"{text} (through the proxy {proxy})"
    out.args = (redact(text),)
    return out


def _tls_failure(exc: BaseException) -> ssl.SSLError | None:
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return None
        if isinstance(seen, ssl.SSLError):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def _connection_text(exc: BaseException) -> str:
    """The failure and, when the transport wrapped it ("All connection attempts failed"), the system's reason."""
    text = str(exc) or type(exc).__name__
    seen: BaseException | None = exc.__cause__ or exc.__context__
    for _ in range(8):
        if seen is None:
            break
        if isinstance(seen, OSError) and not isinstance(seen, ssl.SSLError) and seen.errno:
            reason = os.strerror(seen.errno)
            return text if reason in text else f"{text}: {reason}"
        seen = seen.__cause__ or seen.__context__
    return text


def _classify(exc: BaseException) -> TransientError | PermanentError:
    if isinstance(exc, (TransientError, PermanentError)):
        return exc
    if isinstance(exc, ReplyTooLarge):
        return PermanentError("reply_too_large", str(exc))
    if isinstance(exc, SetupError):
        return PermanentError("setup", str(exc))
    # Checked before connection errors: a TimeoutError is also an OSError, and it is a limit the caller set.
    if isinstance(exc, (TimeoutError, httpx.TimeoutException)):
        return TransientError("timeout", f"request timed out ({type(exc).__name__})")
    tls = _tls_failure(exc)
    if tls is not None:
        # A certificate the store does not trust (or a TLS handshake that cannot succeed, such as https:// to
        # a plain-HTTP port) fails the same way on every attempt.
        if isinstance(tls, ssl.SSLCertVerificationError):
            return PermanentError("tls", f"TLS certificate verify failed ({tls.verify_message}); set SSL_CERT_FILE "
                                         "to the CA bundle that signed the server's certificate")
        return PermanentError("tls", f"TLS failed: {getattr(tls, 'reason', None) or tls}")
    if isinstance(exc, httpx.ProxyError):
        return TransientError("proxy", f"the proxy refused the request: {exc}")
    if isinstance(exc, httpx.RemoteProtocolError):
        text = str(exc)
        if "without sending a response" in text:  # a hang-up before any byte is a dropped link
            return TransientError("connection", text)
        return TransientError("malformed_body", f"malformed HTTP reply: {text}")
    if isinstance(exc, httpx.DecodingError):
        return TransientError("malformed_body", f"reply body cannot be decoded: {exc}")
    if isinstance(exc, (httpx.UnsupportedProtocol, httpx.InvalidURL)):
        return PermanentError("bad_url", str(exc))
    if isinstance(exc, httpx.LocalProtocolError):  # our own request cannot be sent (say, a header value)
        return PermanentError("bad_request", f"the request cannot be sent: {exc}")
    if isinstance(exc, (httpx.TransportError, ConnectionError, OSError)):
        return TransientError("connection", _connection_text(exc))
    if isinstance(exc, (json.JSONDecodeError, UnicodeDecodeError, ValueError, KeyError, TypeError, IndexError)):
        return TransientError("malformed_body", str(exc))
    return TransientError("unexpected", f"{type(exc).__name__}: {exc}")


class OpenAIBackend:
    """Chat completions and embeddings over the OpenAI-compatible HTTP API (one attempt per call).

    Args:
        base_url: the API root, e.g. ``http://127.0.0.1:8000/v1``.
        model: the model name; asked from ``/models`` when None.
        api_key: sent as a bearer token; held only in the request headers, never logged or cached.
        timeout_s: total seconds allowed per request (None: the local or hosted default).
        connect_timeout_s: seconds to connect (None: default).
        read_timeout_s: seconds without any byte of the reply (None: default).
        max_reply_bytes: largest reply body read; a larger one fails the attempt without being kept.
    """

    def __init__(self, base_url: str, model: str | None, api_key: str | None, timeout_s: float | None = None, *,
                 connect_timeout_s: float | None = None, read_timeout_s: float | None = None,
                 max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES) -> None:
        self.base_url = public_url(base_url)
        parts = urlsplit(base_url)
        self._root = urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/"), "", ""))
        self._query = parts.query
        for name, value in [*parse_qsl(parts.query), *path_params(base_url)]:
            if query_secret(name):
                register_secret(value)  # sent on every request, so a server's echo of the URL must not keep it
        self._model = model
        self._configured = model
        self._identity: str | None = None
        self._answered: str | None = None
        self._answered_before = False
        self._replayed: str | None = None
        register_secret(api_key)
        self._headers = {"Content-Type": "application/json", "Authorization": f"Bearer {api_key or 'not-needed'}"}
        self.timeouts = resolve_timeouts(base_url, connect_timeout_s, read_timeout_s, timeout_s)
        self.max_reply_bytes = max_reply_bytes
        self._transport: Transport | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def backend_id(self) -> str:
        return f"openai:{self.base_url}"

    def _url(self, route: str) -> str:
        return f"{self._root}{route}" + (f"?{self._query}" if self._query else "")

    def _http(self) -> Transport:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            # Connections belong to the loop that opened them: a backend used again under a new loop (one
            # asyncio.run after another) starts afresh; the old loop's sockets went with that loop.
            self._transport, self._loop = None, loop
        if self._transport is None:
            self._transport = Transport(self._root, self.timeouts, self._headers)
        return self._transport

    async def send(self, method: str, route: str, body: dict[str, Any] | bytes | None = None) -> Response:
        """One request under the endpoint's limits; any status comes back (the preflight reads them itself).

        ``body``: a JSON value, or bytes already encoded (a chat request's :meth:`ChatRequest.body`).

        Raises:
            TransientError, PermanentError: the transport failed (see :func:`classify`).
        """
        data = body if body is None or isinstance(body, bytes) else json.dumps(body, ensure_ascii=False).encode()
        transport = None
        try:
            transport = self._http()
            return await transport.fetch(method, self._url(route), data, max_body=self.max_reply_bytes,
                                         total=self.timeouts.total)
        except Exception as exc:  # noqa: BLE001 - classified and re-raised
            raise classify(exc, transport.proxy if transport else None) from exc

    async def _request(self, method: str, route: str, body: dict[str, Any] | bytes | None = None) -> Any:
        resp = await self.send(method, route, body)
        if not 200 <= resp.status < 300:
            raise status_error(resp.status, resp.body, resp.headers)
        try:
            return orjson.loads(resp.body)  # a few times faster than json.loads on a reply; same values
        except orjson.JSONDecodeError as exc:
            if "surrogate" not in str(exc):
                raise classify(exc) from exc
            # orjson refuses an escaped lone surrogate ("\ud800") that json reads: the reply is kept, each
            # such character as U+FFFD, so the text the client returns, records and caches is the same.
            try:
                return clean_value(json.loads(resp.body))
            except (ValueError, RecursionError):
                raise classify(exc) from exc
        except Exception as exc:  # noqa: BLE001 - classified and re-raised
            raise classify(exc) from exc

    async def model(self) -> str:
        """The model name; asks the server's model list when none was configured."""
        if self._model is None:
            await self.model_identity()
        assert self._model is not None
        return self._model

    async def model_identity(self) -> str:
        """Which model this endpoint serves under the configured name, as the server lists it (``GET /models``).

        The listed id, followed by the checkpoint path in parentheses when the server reports one apart
        (vLLM's ``root``), so a checkpoint swapped behind an unchanged name or URL gets a new identity.
        With a configured name the server does not list (or no model list at all), the name is all we know.
        Resolved once per backend: a run keys its cache with the identity it started with.
        """
        if self._identity is not None:
            return self._identity
        try:
            page = await self._request("GET", "/models")
        except PermanentError as exc:
            # Some servers have no model list; a configured name then stands alone. Transient errors are
            # retried by the caller rather than settling for less, and a redirect means a wrong base_url.
            if self._configured is None or exc.kind.startswith("http_3"):
                raise
            page = None
        data = page.get("data") if isinstance(page, dict) else None
        entries = [d for d in data if isinstance(d, dict) and d.get("id")] if isinstance(data, list) else []
        if self._configured is None:
            if not entries:
                raise PermanentError("no_model", f"{self.base_url} lists no models; set a model name")
            entry: dict[str, Any] | None = entries[0]
            self._model = str(entries[0]["id"])
        else:
            entry = next((d for d in entries if str(d["id"]) == self._configured), None)
        name = self._model or ""
        root = str(entry.get("root") or "") if entry else ""
        self._identity = f"{name} ({root})" if root and root != name else name
        return self._identity

    async def complete(self, req: ChatRequest) -> ChatResult:
        """One chat completion attempt."""
        model = await self.model()
        start = perf_counter()
        resp = await self._request("POST", "/chat/completions", req.body(model))
        seconds = perf_counter() - start
        try:
            result = _chat_result(resp, model, seconds, tools_offered=req.tools is not None)
        except TransientError as exc:
            exc.spent, exc.arrived = _spent(resp), True
            raise
        except PermanentError:
            raise
        except Exception as exc:  # noqa: BLE001 - a body of the wrong shape is a malformed reply
            raise classify(exc) from exc
        self._check_answered(result.model)
        return result

    def expect_answered(self, model: str) -> None:
        """Hold the replies to ``model``, the one that answered an earlier invocation of the same run."""
        self._answered = model
        self._answered_before = True

    def may_replay(self, model: str) -> bool:
        """Whether a reply the response cache holds, which named ``model``, may stand for this endpoint's reply.

        The cache key holds the served name, not the model answering under it: once the endpoint has answered
        (or an earlier invocation's model is held) as another model, the cached reply is an older model's (a
        hosted alias moved) and must be asked again. Before any reply, the first model replayed is held like
        an answer, so a fresh reply naming another one fails instead of joining the replayed ones.
        """
        if not model:
            return True
        if self._answered is not None:
            return model == self._answered
        self._replayed = self._replayed or model
        return model == self._replayed

    def _check_answered(self, answered: str) -> None:
        """Refuse replies once the server starts answering as another model than it did first in this run.

        Aliases are fine (a hosted name may answer as a dated snapshot); a change between replies means
        the model was swapped mid-run, and mixing its replies with the earlier ones would skew every number.
        """
        if not answered:
            return
        if self._answered is None and self._replayed and answered != self._replayed:
            raise PermanentError("model_changed", f"{self.base_url} now answers as model {answered!r}, but the "
                                 f"replies this run took from the response cache came from {self._replayed!r} (the "
                                 "model name now points to another model): use a new --out directory with "
                                 "--no-cache, or clear the response cache (AMEMGYM_CACHE_DIR)")
        if self._answered is None:
            self._answered = answered
        elif answered != self._answered:
            before = (f"; an earlier invocation of this run was answered by {self._answered!r} (use a new --out "
                      "directory, or pass --allow-model-change to continue with the new model)"
                      if self._answered_before else
                      f" (earlier in this run: {self._answered!r}); the served model changed during the run")
            raise PermanentError("model_changed", f"{self.base_url} now answers as model {answered!r}{before}")

    async def embed(self, texts: list[str]) -> np.ndarray:
        """Embeddings from the server's ``/embeddings`` route, L2-normalised."""
        model = await self.model()
        resp = await self._request("POST", "/embeddings", {"model": model, "input": texts})
        try:
            if not isinstance(resp["data"], list) or not all(isinstance(d, dict) for d in resp["data"]):
                raise TransientError("malformed_body", "embeddings reply's data is not a list of objects")
            rows = sorted(resp["data"], key=lambda d: d.get("index", 0))
            if not all(isinstance(d["embedding"], list) and all(type(x) is float or type(x) is int
                                                                 for x in d["embedding"]) for d in rows):
                # numpy would turn "0.5" or true into a number without a word.
                raise TransientError("malformed_body", "embeddings reply holds a value that is not a number")
            # float64 until normalised, as float32 would lose the norm of values near 1e-40 or 1e30.
            vecs = np.asarray([d["embedding"] for d in rows], dtype=np.float64)
        except TransientError:
            raise
        except Exception as exc:  # noqa: BLE001
            raise classify(exc) from exc
        problem = _embedding_problem(rows, vecs, texts)
        if problem is not None:
            # A vector matched to the wrong text, or one that cannot be compared, would skew every retrieval
            # silently; a malformed reply is retried like any other.
            raise TransientError("malformed_body", f"embeddings reply {problem}")
        # Scaled by each row's largest value first: squares of 1e200 overflow and of 1e-310 vanish.
        vecs = vecs / np.maximum(np.abs(vecs).max(axis=1, keepdims=True), np.finfo(np.float64).tiny)
        norms = np.linalg.norm(vecs, axis=1, keepdims=True)
        return (vecs / np.maximum(norms, 1e-300)).astype(np.float32)

    async def aclose(self) -> None:
        """Close the HTTP clients and their connections."""
        if self._transport is not None:
            await self._transport.aclose()
        self._transport = None


def _embedding_problem(rows: list[Any], vecs: np.ndarray, texts: list[str]) -> str | None:
    """What is wrong with an embeddings reply for ``texts``, or None: one finite vector of two or more
    dimensions per text, non-zero unless its text is blank, not one vector for all of three or more texts, each
    ``index`` naming a distinct text when the server gives them."""
    n = len(texts)
    if len(rows) != n:
        return f"holds {len(rows)} vectors for {n} inputs"
    given = [d.get("index") for d in rows]
    if any(i is not None for i in given) and not (
            all(type(i) is int for i in given) and sorted(given) == list(range(n))):
        return "has indices that do not number the inputs 0..n-1"
    if n and (vecs.ndim != 2 or vecs.shape[1] < 2):
        return "has vectors of different lengths, or of fewer than two dimensions"
    if not np.isfinite(vecs).all():
        return "has values that are not finite numbers"
    if n and any(zero and text.strip() for zero, text in zip(~np.abs(vecs).any(axis=1), texts, strict=True)):
        return "has an all-zero vector for a text, which points nowhere"
    # Three different texts with the very same vector: a server that embeds nothing (retrieval would then rank
    # at random). Two could legitimately agree when the model cuts both at the same long shared prefix.
    if len({t for t in texts if t.strip()}) >= 3 and bool((vecs == vecs[0]).all()):
        return "gives the same vector for every text"
    return None


def _spent(resp: Any) -> tuple[int, int, int] | None:
    """The tokens a reply that was rejected (empty, malformed) says it cost, or None when it says nothing
    usable about them."""
    usage = resp.get("usage") if isinstance(resp, dict) else None
    if not isinstance(usage, dict) or (usage.get("prompt_tokens") is None and usage.get("completion_tokens") is None):
        return None
    timings = resp.get("timings")
    processed = timings.get("prompt_n") if isinstance(timings, dict) else None
    try:
        prompt = _token_count(usage.get("prompt_tokens"), "prompt_tokens")
        completion = _token_count(usage.get("completion_tokens"), "completion_tokens")
        return prompt, completion, _token_count(processed, "timings.prompt_n") if processed is not None else prompt
    except TransientError:
        return None


#: Finish reasons that say the server failed the generation, whatever text came with it (vLLM, SGLang).
_FAILED_FINISH = frozenset({"error", "abort"})


def _chat_result(resp: Any, model: str, seconds: float, *, tools_offered: bool = True) -> ChatResult:
    if isinstance(resp, dict) and resp.get("error") is not None and not resp.get("choices"):
        # A proxy's failure sent with status 200 (OpenRouter's style): the server failed, the model did not speak.
        raise TransientError("error_body", "the server answered 200 with an error instead of a completion")
    choices = resp.get("choices") if isinstance(resp, dict) else None
    if not choices:
        raise TransientError("empty_choices", "the server returned no choices")
    if not isinstance(choices, list) or len(choices) > 1:
        # Every request asks for one completion; of several, none is known to answer it.
        raise TransientError("malformed_body", f"the server returned {len(choices)} choices for a request of one"
                             if isinstance(choices, list) else "the reply's choices are not a list")
    choice = choices[0]
    if not isinstance(choice, dict) or not isinstance(choice.get("message") or {}, dict):
        raise TransientError("malformed_body", "the reply's choice or message is not an object")
    finish = choice.get("finish_reason")
    if finish is not None and not isinstance(finish, str):
        raise TransientError("malformed_body", "the reply's finish_reason is not a name")
    answered = resp.get("model")
    if answered is not None and not isinstance(answered, str):
        raise TransientError("malformed_body", "the reply's model is not a name")
    if finish in _FAILED_FINISH:
        raise TransientError("finish_error", f"the server ended the generation with {finish!r}")
    message = choice.get("message") or {}
    text = message.get("content")
    calls = _tool_calls(message.get("tool_calls"))
    if calls and not tools_offered:
        # Calls to tools nobody offered answer some other request; taken as the reply they would score as
        # silence, and be cached as such.
        raise TransientError("malformed_body", "the reply calls tools the request did not offer")
    if text is None and calls:
        text = ""  # a reply that only calls tools has no content, and needs none
    if text is None:
        raise TransientError("empty_reply", "the server returned a choice without content")
    if not isinstance(text, str):
        raise TransientError("malformed_body", "message content is not text")
    if not text.strip() and not calls:
        # An empty answer is never what was asked for: retried like a malformed body, never returned or cached.
        raise TransientError("empty_reply", "the server returned an empty reply")
    usage = resp.get("usage") or {}
    if not isinstance(usage, dict):
        raise TransientError("malformed_body", "the reply's usage is not an object")
    timings = resp.get("timings") or {}
    processed = timings.get("prompt_n") if isinstance(timings, dict) else None
    return ChatResult(
        text=text,
        model=answered or model,
        prompt_tokens=_token_count(usage.get("prompt_tokens"), "prompt_tokens"),
        completion_tokens=_token_count(usage.get("completion_tokens"), "completion_tokens"),
        seconds=seconds,
        finish_reason=choice.get("finish_reason"),
        prompt_tokens_processed=_token_count(processed, "timings.prompt_n") if processed is not None else None,
        tool_calls=calls,
        tokens_reported=usage.get("prompt_tokens") is not None or usage.get("completion_tokens") is not None,
    )


#: More tokens than any one call can hold: a count beyond it is a broken reply, not a usage figure.
MAX_TOKENS_PER_CALL = 100_000_000


def _token_count(value: Any, name: str) -> int:
    """A reply's token count as an int (absent: 0). Usage and cost add these up over a whole run, so a negative,
    fractional, non-numeric or absurd count is a malformed reply, retried like any other."""
    if value is None:
        return 0
    if isinstance(value, str) and value.strip().isdecimal():
        value = int(value)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TOKENS_PER_CALL:
        raise TransientError("malformed_body", f"the reply's {name} is not a token count: {str(value)[:40]}")
    return value


def _tool_calls(raw: Any) -> tuple[ToolCallOut, ...]:
    """The function calls of a reply message; arguments sent as an object (some servers do) become JSON text."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise TransientError("malformed_body", "tool_calls is not a list")
    out = []
    for i, call in enumerate(raw):
        fn = call.get("function") if isinstance(call, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            raise TransientError("malformed_body", "a tool call without a function name")
        args = fn.get("arguments")
        if args is None:
            args = "{}"
        elif not isinstance(args, str):
            args = json.dumps(args, ensure_ascii=False)
        out.append(ToolCallOut(str(call.get("id") or f"call_{i}"), fn["name"], args))
    return tuple(out)


class OpenAIEmbedBackend:
    """Adapts :class:`OpenAIBackend` to the embedding contract."""

    def __init__(self, backend: OpenAIBackend, dim: int = 0) -> None:
        self._backend = backend
        self.dim = dim
        self.backend_id = backend.backend_id
        # The first vector, and the different texts that got exactly it, until some text gets another one.
        self._first: np.ndarray | None = None
        self._same_texts: set[str] | None = set()

    async def embed(self, texts: list[str]) -> np.ndarray:
        """Embed through the HTTP endpoint; the vectors' length is fixed by the first reply.

        Raises:
            PermanentError: a reply's vectors are not as long as the first reply's (another model answers), or
                the endpoint has given one and the same vector for each of the first three different texts it
                embedded, however they were spread over calls.
        """
        vecs = await self._backend.embed(texts)
        if vecs.size:
            dim = int(vecs.shape[1])
            if self.dim and dim != self.dim:
                raise PermanentError("embedding_dim_changed", f"{self._backend.base_url} now returns "
                                     f"{dim}-dimensional embeddings, not {self.dim} as before in this run")
            self.dim = dim
            self._check_varied(texts, vecs)
        return vecs

    def _check_varied(self, texts: list[str], vecs: np.ndarray) -> None:
        # One reply's vectors are checked for this by the backend; a server that embeds nothing but is asked one
        # text at a time (a retriever's queries) only shows it across calls.
        if self._same_texts is None:
            return
        for text, vec in zip(texts, vecs, strict=True):
            if not text.strip():
                continue
            if self._first is None:
                self._first = vec.copy()
            elif not np.array_equal(vec, self._first):
                self._first, self._same_texts = None, None
                return
            self._same_texts.add(text)
            if len(self._same_texts) >= 3:
                raise PermanentError("embedding_constant", f"{self._backend.base_url} gives the same vector for "
                                     "every text (3 different texts so far), so retrieval could only rank at "
                                     "random; check the embedding model it serves")
