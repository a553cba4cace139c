"""A local OpenAI-compatible HTTP server for tests and benchmarks, with fixed latency and injected faults.

It serves ``/v1/chat/completions``, ``/v1/embeddings`` and ``/v1/models`` on 127.0.0.1 from a background
thread. Replies come from a responder that sees only the request content (by default
:func:`~amemgym.testing.responder.default_responder`, which plays every amemgym role), so a request that
is retried after a fault gets exactly the reply a fault-free server would have given. Faults are drawn
per request from a seeded RNG; which request draws which fault depends on arrival order, the replies do
not.

Example::

    with FakeEndpoint(latency=0.05, fault_rate=0.2, seed=1) as ep:
        cfg = LLMConfig(default=EndpointConfig(base_url=ep.base_url, model="fake-model"))
        ...
        print(ep.faults, ep.max_in_flight)

From a shell (for benchmarks against a real process)::

    python -m amemgym.testing.fake_endpoint --port 0 --latency 0.05

The product never uses this module.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import random
import signal
import socket
import struct
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

from .responder import RequestResponder, default_responder, request_kind, request_schema

#: Every fault the endpoint can inject at random. ``http_400`` is only injected when forced.
FAULT_KINDS: tuple[str, ...] = (
    "http_429", "http_429_retry_after", "http_500", "http_502", "http_503", "reset", "timeout",
    "truncated", "malformed", "schema_break", "empty_choices",
)
#: Faults injected only when forced (``force_faults``), never drawn at random: a 401 whose body echoes the
#: request's Authorization header (as some proxies do), a reply whose content is an empty string, and a
#: reply of ``huge_bytes`` bytes.
FORCED_ONLY: tuple[str, ...] = ("http_400", "echo_auth_401", "empty_content", "huge")
_STATUS = {"http_400": 400, "http_429": 429, "http_429_retry_after": 429, "http_500": 500, "http_502": 502,
           "http_503": 503}


def tokens(text: str) -> int:
    """Token count as the fake endpoint reports it: whitespace-separated words."""
    return len(text.split())


def request_key(body: dict[str, Any]) -> str:
    """A digest of the whole request body (identical requests share it)."""
    return hashlib.sha256(json.dumps(body, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class CallRecord:
    """One chat request the endpoint received.

    Attributes:
        kind: the request kind (see :func:`~amemgym.testing.responder.request_kind`).
        key: digest of the whole body.
        fault: the fault injected, None when served.
        model, temperature, max_tokens: the sampling settings the request carried (None when absent).
        system: whether the request opened with a system message.
        tools: the names of the function tools the request offered (None when it sent no ``tools``).
        tool_choice: the request's ``tool_choice`` (None when absent).
    """

    kind: str
    key: str
    fault: str | None
    model: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    system: bool = False
    tools: tuple[str, ...] | None = None
    tool_choice: Any = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (the request log's line format)."""
        return {"kind": self.kind, "model": self.model, "temperature": self.temperature,
                "max_tokens": self.max_tokens, "system": self.system, "fault": self.fault, "key": self.key,
                "tools": None if self.tools is None else list(self.tools), "tool_choice": self.tool_choice}


def _record(kind: str, body: dict[str, Any], fault: str | None) -> CallRecord:
    msgs = body.get("messages") or []
    first = msgs[0] if msgs and isinstance(msgs[0], dict) else {}
    # Clients send the budget under either name depending on the API generation.
    budget = body.get("max_tokens", body.get("max_completion_tokens"))
    tools = body.get("tools")
    names = (tuple(str((t.get("function") or {}).get("name")) for t in tools if isinstance(t, dict))
             if isinstance(tools, list) else None)
    return CallRecord(kind, request_key(body), fault, model=body.get("model"), temperature=body.get("temperature"),
                      max_tokens=budget, system=first.get("role") == "system", tools=names,
                      tool_choice=body.get("tool_choice"))


class FakeEndpoint:
    """An OpenAI-compatible server on an ephemeral loopback port; use as a context manager.

    Args:
        latency: seconds from a chat or embedding request's arrival to its reply (or fault); the endpoint's own
            work (decoding, the responder, encoding) happens inside it rather than on top of it. With
            ``latency_sigma`` it is the median of a lognormal draw per request; with ``slots`` it is counted
            from the moment the request gets a slot instead of from its arrival.
        latency_sigma: log-scale standard deviation of each request's latency (0 = every request takes
            ``latency``); draws come from an RNG seeded by ``seed``, one per request in the order they are served.
        slots: serve at most this many chat and embedding requests at once and queue the rest, as an inference
            server's batch does (None = no limit, every request is served on arrival).
        responder: maps the parsed request body to reply text; must depend on content only.
        fault_rate: probability that a chat request gets a random fault from ``fault_kinds``.
        fault_kinds: the faults to draw from (``schema_break`` only applies to structured requests).
        seed: seed of the fault RNG.
        force_faults: request kind (``answer``, ``probe``, ``structured``, ``simulator``, ``chat`` or ``*``)
            -> fault injected on every such request, e.g. ``{"simulator": "http_500"}``; ``http_400`` here
            gives a deterministic client error.
        force_budget: how many forced faults to inject before serving normally (None = no limit), e.g. 2
            to make the first two attempts fail and the third succeed.
        bad_request: answer every chat request with HTTP 400 (deterministic client error).
        reject_tools: answer every chat request that offers ``tools`` with HTTP 400 saying tools are not
            supported (as servers without function calling do).
        retry_after: seconds sent in ``Retry-After`` for ``http_429_retry_after``.
        timeout_sleep: how long a ``timeout`` fault holds the request before dropping it; set it above the
            client's timeout.
        model: the served model: the only id ``/v1/models`` lists, and the ``model`` of every reply whatever
            the request named (as a llama.cpp server answers as the model it loaded).
        served_models: the model ids ``/v1/models`` lists (default: just the current ``model``); chat accepts
            any name.
        embed_dim: dimension of the (hashing) embeddings.
        host, port: where to listen (port 0 = ephemeral).
        huge_bytes: size of the body a ``huge`` fault sends.
        log_path: if set, every chat request's :meth:`CallRecord.to_dict` is appended there as a JSON line
            (for tests that run the client in another process); the in-memory ``log`` is kept either way.

    The attributes ``fault_rate``, ``force_faults``, ``force_budget``, ``bad_request``, ``latency`` and ``model``
    may be changed while the server runs (e.g. to turn faults off before a re-run against the same URL, which
    keeps cache keys, or to swap the served model behind an unchanged URL).
    """

    def __init__(
        self,
        *,
        latency: float = 0.0,
        latency_sigma: float = 0.0,
        slots: int | None = None,
        responder: RequestResponder = default_responder,
        fault_rate: float = 0.0,
        fault_kinds: tuple[str, ...] = FAULT_KINDS,
        seed: int = 0,
        force_faults: dict[str, str] | None = None,
        force_budget: int | None = None,
        bad_request: bool = False,
        reject_tools: bool = False,
        retry_after: float = 0.01,
        timeout_sleep: float = 1.0,
        model: str = "fake-model",
        served_models: tuple[str, ...] | None = None,
        embed_dim: int = 64,
        host: str = "127.0.0.1",
        port: int = 0,
        huge_bytes: int = 5 << 20,
        log_path: str | None = None,
    ) -> None:
        unknown = sorted(set(fault_kinds) - set(FAULT_KINDS) - set(FORCED_ONLY))
        if unknown:
            raise ValueError(f"unknown fault kind(s): {', '.join(unknown)}")
        if slots is not None and slots < 1:
            raise ValueError("slots must be at least 1")
        self.latency = latency
        self.latency_sigma = latency_sigma
        self._slots = threading.BoundedSemaphore(slots) if slots is not None else None
        self._latency_rng = random.Random(f"latency:{seed}")
        self.responder = responder
        self.fault_rate = fault_rate
        self.fault_kinds = tuple(fault_kinds)
        self.force_faults = dict(force_faults or {})
        self.force_budget = force_budget
        self.bad_request = bad_request
        self.reject_tools = reject_tools
        self.retry_after = retry_after
        self.timeout_sleep = timeout_sleep
        self.model = model
        # None follows ``model``, which tests may change while the server runs (a model swapped behind a URL).
        self.served_models = tuple(served_models) if served_models is not None else None
        self.embed_dim = embed_dim
        self.huge_bytes = huge_bytes
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._host, self._port = host, port
        self.log_path = log_path
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self.reset_counters()

    # ---- lifecycle ------------------------------------------------------------------------------------
    def start(self) -> FakeEndpoint:
        """Bind and start serving in a daemon thread."""
        if self._server is not None:
            return self
        self._server = _Server((self._host, self._port), _Handler)
        self._server.endpoint = self
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-endpoint", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket (requests still sleeping are abandoned)."""
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server, self._thread = None, None

    def __enter__(self) -> FakeEndpoint:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The bound port."""
        if self._server is None:
            raise RuntimeError("the fake endpoint is not running")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """The OpenAI base URL (``http://127.0.0.1:<port>/v1``)."""
        return f"http://{self._host}:{self.port}/v1"

    # ---- counters -------------------------------------------------------------------------------------
    def reset_counters(self) -> None:
        """Zero every counter and the call log."""
        with self._lock:
            self.calls = 0
            self.served = 0
            self.calls_by_kind: Counter[str] = Counter()
            self.faults: Counter[str] = Counter()
            self.embed_calls = 0
            self.model_calls = 0
            self.in_flight = 0
            self.max_in_flight = 0
            #: Seconds of service drawn for the requests served so far (their summed latencies).
            self.service_seconds = 0.0
            #: Requests holding one of the ``slots`` now, and the most that ever did at once.
            self.serving = 0
            self.max_serving = 0
            #: With ``slots``: one ``(arrived, started, ended)`` per request that held a slot (``time.perf_counter``
            #: seconds, which is CLOCK_MONOTONIC on Linux, so another process's clock can place them).
            self.spans: list[tuple[float, float, float]] = []
            self.log: list[CallRecord] = []
            self.authorizations: set[str] = set()

    def timeline(self) -> list[tuple[float, float, float]]:
        """The ``(arrived, started, ended)`` of every request that held a slot so far, in the order they ended."""
        with self._lock:
            return list(self.spans)

    def stats(self) -> dict[str, Any]:
        """Counters as a plain dict."""
        with self._lock:
            return {"calls": self.calls, "served": self.served, "calls_by_kind": dict(self.calls_by_kind),
                    "faults": dict(self.faults), "embed_calls": self.embed_calls, "model_calls": self.model_calls,
                    "max_in_flight": self.max_in_flight, "service_seconds": self.service_seconds,
                    "max_serving": self.max_serving}

    def served_keys(self) -> Counter[str]:
        """How often each distinct request was answered successfully."""
        with self._lock:
            return Counter(r.key for r in self.log if r.fault is None)

    def _enter(self, auth: str | None) -> None:
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            if auth:
                self.authorizations.add(auth)

    def _service_time(self) -> float:
        """One request's latency: fixed, or a lognormal draw around ``latency`` (counted in ``service_seconds``)."""
        with self._lock:
            seconds = self.latency
            if self.latency_sigma > 0:
                seconds *= math.exp(self._latency_rng.gauss(0.0, self.latency_sigma))
            self.service_seconds += seconds
        return seconds

    def _leave(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def _decide(self, body: dict[str, Any]) -> tuple[str, str | None]:
        """The request's kind and the fault to inject (None = serve it), recorded in the log."""
        kind = request_kind(body)
        structured = request_schema(body) is not None
        with self._lock:
            fault = self.force_faults.get(kind) or self.force_faults.get("*")
            if fault is not None and self.force_budget is not None:
                if self.force_budget <= 0:
                    fault = None
                else:
                    self.force_budget -= 1
            if fault is None and self.bad_request:
                fault = "http_400"
            if fault is None and self.reject_tools and body.get("tools") is not None:
                fault = "tools_400"
            if fault is None and self.fault_rate > 0 and self._rng.random() < self.fault_rate:
                options = [k for k in self.fault_kinds if structured or k != "schema_break"]
                fault = self._rng.choice(options) if options else None
            self.calls += 1
            self.calls_by_kind[kind] += 1
            if fault is None:
                self.served += 1
            else:
                self.faults[fault] += 1
            record = _record(kind, body, fault)
            self.log.append(record)
            if self.log_path:
                with open(self.log_path, "a", encoding="utf-8") as fh:
                    fh.write(json.dumps(record.to_dict()) + "\n")
        return kind, fault

    # ---- replies ----------------------------------------------------------------------------------------
    def completion(self, body: dict[str, Any], text: str | dict[str, Any] | None, *,
                   empty: bool = False) -> dict[str, Any]:
        """A chat completion response object for ``body`` with content ``text`` (or a reply message that calls
        tools, as a responder may return)."""
        prompt = sum(tokens(str(m.get("content") or "")) for m in body.get("messages", []))
        message: dict[str, Any] = {"role": "assistant", "content": text}
        finish = "stop"
        if isinstance(text, dict):
            message = {"role": "assistant", "content": text.get("content"), "tool_calls": text.get("tool_calls")}
            finish = "tool_calls" if text.get("tool_calls") else "stop"
            text = json.dumps(text.get("tool_calls")) + str(text.get("content") or "")
        completion = tokens(text or "")
        choices = [] if empty else [{"index": 0, "finish_reason": finish, "message": message}]
        return {"id": "chatcmpl-fake", "object": "chat.completion", "created": 0,
                "model": self.model, "choices": choices,
                "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                          "total_tokens": prompt + completion}}

    def embeddings(self, body: dict[str, Any]) -> dict[str, Any]:
        """An embeddings response: deterministic unit vectors from hashed words."""
        texts = body.get("input", [])
        texts = [texts] if isinstance(texts, str) else list(texts)
        vecs = np.zeros((len(texts), self.embed_dim), dtype=np.float64)
        for i, text in enumerate(texts):
            for word in str(text).lower().split():
                h = int.from_bytes(hashlib.blake2b(word.encode("utf-8"), digest_size=8).digest(), "little")
                vecs[i, h % self.embed_dim] += 1.0 if (h >> 63) & 1 else -1.0
            norm = np.linalg.norm(vecs[i])
            vecs[i] = vecs[i] / norm if norm > 0 else vecs[i]
            if norm == 0:
                vecs[i, 0] = 1.0
        data = [{"object": "embedding", "index": i, "embedding": [float(x) for x in v]} for i, v in enumerate(vecs)]
        used = sum(tokens(str(t)) for t in texts)
        return {"object": "list", "data": data, "model": body.get("model") or self.model,
                "usage": {"prompt_tokens": used, "total_tokens": used}}


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # The stdlib default backlog of 5 refuses connections when a run opens hundreds at once.
    request_queue_size = 1024
    block_on_close = False  # a request sleeping through a ``timeout`` fault must not hold up stop()
    endpoint: FakeEndpoint

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client killed mid-connection (the soak's SIGKILLs) resets its idle keep-alive socket; that is
        # the expected end of the connection, not a server error worth a traceback.
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        return  # keep test and benchmark output clean

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in two writes; with Nagle's algorithm the body would wait for the
        # client's delayed ACK (up to 40 ms), a latency that would be charged to the harness.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    _arrived = 0.0
    _started = 0.0
    _due: float | None = None
    _holds_slot = False
    _counted = False  # this request is counted in ``in_flight``

    def parse_request(self) -> bool:
        # The request has arrived once its first line is read: without slots its latency runs from here.
        self._arrived, self._due = time.perf_counter(), None
        return super().parse_request()

    def handle_one_request(self) -> None:
        try:
            super().handle_one_request()
        finally:
            if self._holds_slot:
                ep = self.server.endpoint
                self._holds_slot = False
                with ep._lock:
                    ep.serving -= 1
                    ep.spans.append((self._arrived, self._started, time.perf_counter()))
                ep._slots.release()  # type: ignore[union-attr]

    def _take_slot(self) -> None:
        """Start the request's latency: at once, or when it gets one of the ``slots`` (queued until then).

        Called as soon as a chat or embedding request's path is known, so the endpoint's own work (reading
        and decoding the body, the responder, encoding the reply) happens inside the latency and its slot,
        as a server's does, rather than on top of it: a request that found a free slot is answered after
        its drawn latency, not after the endpoint's Python work plus that latency.
        """
        ep = self.server.endpoint
        if self._due is None:
            start = self._arrived
            if ep._slots is not None:
                ep._slots.acquire()  # queued behind the requests being served, as in a server's batch
                self._holds_slot = True
                with ep._lock:
                    ep.serving += 1
                    ep.max_serving = max(ep.max_serving, ep.serving)
                start = self._started = time.perf_counter()
            self._due = start + ep._service_time()

    def _wait_due(self) -> None:
        """Hold the reply until the request's latency has passed: from its arrival, or from getting a slot."""
        self._take_slot()
        assert self._due is not None
        delay = self._due - time.perf_counter()
        if delay > 0:
            time.sleep(delay)

    def _send(self, status: int, payload: bytes, headers: dict[str, str] | None = None) -> None:
        self._wait_due()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self._stop_counting()
        self.end_headers()
        self.wfile.write(payload)

    def _stop_counting(self) -> None:
        """Take the request out of ``in_flight`` before its reply goes out: the client may send its next
        request as soon as this reply arrives, before this thread runs another line, and ``max_in_flight``
        must never count the two at once."""
        if self._counted:
            self._counted = False
            self.server.endpoint._leave()

    def _json(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        self._send(status, json.dumps(obj).encode("utf-8"), headers)

    def do_GET(self) -> None:  # noqa: N802 - stdlib naming
        ep = self.server.endpoint
        self._due = 0.0  # the model list answers at once
        if self.path.split("?")[0].rstrip("/").endswith("/models"):
            with ep._lock:
                ep.model_calls += 1
            served = ep.served_models or (ep.model,)
            self._json(200, {"object": "list", "data": [{"id": m, "object": "model", "created": 0,
                                                         "owned_by": "amemgym-fake"} for m in served]})
        else:
            self._json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

    def do_POST(self) -> None:  # noqa: N802 - stdlib naming
        ep = self.server.endpoint
        path = self.path.split("?")[0].rstrip("/")
        ep._enter(self.headers.get("Authorization"))  # in flight from here, queued for a slot or served
        self._counted = True
        try:
            if path.endswith(("/chat/completions", "/embeddings")):
                self._take_slot()
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                body = json.loads(raw or b"{}")
            except json.JSONDecodeError:
                self._json(400, {"error": {"message": "request body is not JSON", "type": "invalid_request_error"}})
                return
            if path.endswith("/chat/completions"):
                self._chat(ep, body)
            elif path.endswith("/embeddings"):
                with ep._lock:
                    ep.embed_calls += 1
                self._json(200, ep.embeddings(body))
            else:
                self._json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up (e.g. its timeout fired first)
        finally:
            self._stop_counting()

    def _chat(self, ep: FakeEndpoint, body: dict[str, Any]) -> None:
        _, fault = ep._decide(body)
        if fault == "echo_auth_401":
            auth = self.headers.get("Authorization") or ""
            self._json(401, {"error": {"message": f"invalid credentials: {auth}", "type": "auth_error",
                                       "received_headers": {"Authorization": auth}}})
        elif fault == "empty_content":
            self._json(200, ep.completion(body, ""))
        elif fault == "huge":
            pad = "x" * max(0, ep.huge_bytes)
            self._json(200, ep.completion(body, pad))
        elif fault is None:
            self._json(200, ep.completion(body, ep.responder(body)))
        elif fault == "tools_400":
            self.close_connection = True
            self._json(400, {"error": {"message": "this server does not support tools (function calling)",
                                       "type": "invalid_request_error"}})
        elif fault in _STATUS:
            headers = {"Retry-After": f"{ep.retry_after:g}"} if fault == "http_429_retry_after" else None
            self.close_connection = fault == "http_400"
            self._json(_STATUS[fault], {"error": {"message": f"fake endpoint: injected {fault}",
                                                  "type": "invalid_request_error" if fault == "http_400"
                                                  else "server_error"}}, headers)
        elif fault == "reset":
            self._wait_due()
            # SO_LINGER 0 makes close() send RST instead of FIN: the client sees a reset, not an empty reply.
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            self.connection.close()
        elif fault == "timeout":
            self._wait_due()
            time.sleep(ep.timeout_sleep)
            self.close_connection = True
        elif fault == "truncated":
            full = json.dumps(ep.completion(body, ep.responder(body))).encode("utf-8")
            self._send(200, full[: len(full) // 2])
        elif fault == "malformed":
            self._send(200, b'{"id": "chatcmpl-fake", "choices": [{"index": 0, "message": oops}]')
        elif fault == "schema_break":
            self._json(200, ep.completion(body, "Sure! Here is what you asked for, in prose rather than JSON."))
        elif fault == "empty_choices":
            self._json(200, ep.completion(body, None, empty=True))
        else:  # pragma: no cover - guarded by the constructor
            raise ValueError(f"unknown fault {fault}")


def main(argv: list[str] | None = None) -> int:
    """Serve until interrupted, printing the base URL first and the counters at exit."""
    parser = argparse.ArgumentParser(prog="python -m amemgym.testing.fake_endpoint",
                                     description="A local fake OpenAI-compatible endpoint for tests and benchmarks.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds per call (the median with --latency-sigma)")
    parser.add_argument("--latency-sigma", type=float, default=0.0, help="log-sd of a lognormal latency per call")
    parser.add_argument("--slots", type=int, default=None, help="requests served at once; the rest queue")
    parser.add_argument("--fault-rate", type=float, default=0.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--model", default="fake-model")
    parser.add_argument("--timeout-sleep", type=float, default=1.0)
    parser.add_argument("--log-requests", default=None, metavar="FILE",
                        help="append model, temperature and max_tokens of every chat request to FILE (JSON lines)")
    args = parser.parse_args(argv)
    ep = FakeEndpoint(latency=args.latency, latency_sigma=args.latency_sigma, slots=args.slots,
                      fault_rate=args.fault_rate, seed=args.seed, model=args.model,
                      timeout_sleep=args.timeout_sleep, host=args.host, port=args.port, log_path=args.log_requests)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with ep:
        print(ep.base_url, flush=True)
        try:
            while not stop.wait(0.5):
                pass
        except KeyboardInterrupt:
            pass
    print(json.dumps(ep.stats()), file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
