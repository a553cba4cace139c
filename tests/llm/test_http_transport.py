"""The model client's HTTP transport (httpx under llm/http.py) against scripted servers that misbehave on purpose.

Each server runs in a thread, reads one request head (and its body) at a time and answers with the next
scripted action, so a test states byte for byte what the client sees. Through the backend, every failure
must map onto the error kinds the retry policy and the failure counts rely on.
"""

from __future__ import annotations

import asyncio
import base64
import email.utils
import gzip
import json
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from amemgym.config import EndpointConfig, LLMConfig
from amemgym.errors import LLMError
from amemgym.llm.backends import PermanentError, TransientError
from amemgym.llm.client import LLMClient
from amemgym.llm.health import uncounted_note
from amemgym.llm.openai_backend import OpenAIBackend, status_error
from amemgym.llm.types import ChatRequest
from amemgym.urls import public_url

CHAT = json.dumps({"model": "m", "choices": [{"message": {"content": "hello"}, "finish_reason": "stop"}],
                   "usage": {"prompt_tokens": 3, "completion_tokens": 1}}).encode()


def chat_body(text: str) -> bytes:
    return json.dumps({"model": "m", "choices": [{"message": {"content": text}, "finish_reason": "stop"}]}).encode()


def reply(body: bytes, status: int = 200, extra: str = "") -> bytes:
    return (f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n{extra}\r\n"
            .encode() + body)


@dataclass
class Request:
    head: str
    body: bytes

    @property
    def line(self) -> str:
        return self.head.split("\r\n", 1)[0]

    def header(self, name: str) -> str | None:
        for row in self.head.split("\r\n")[1:]:
            key, _, value = row.partition(":")
            if key.strip().lower() == name.lower():
                return value.strip()
        return None


Action = Callable[[Request, socket.socket], None] | bytes | str


def read_request(conn: socket.socket, buf: bytearray) -> Request | None:
    while b"\r\n\r\n" not in buf:
        data = conn.recv(65536)
        if not data:
            return None
        buf += data
    head, _, rest = bytes(buf).partition(b"\r\n\r\n")
    req = Request(head.decode("latin-1"), b"")
    size = int(req.header("content-length") or 0)
    while len(rest) < size:
        data = conn.recv(65536)
        if not data:
            return None
        rest += data
    req.body, buf[:] = rest[:size], rest[size:]
    return req


@dataclass
class Server:
    """Answers request k with ``script[k]`` (the last one repeats): bytes to send, ``"close"`` to hang up,
    ``"stall"`` to go quiet, or a function of (request, socket) that does anything and then hangs up."""

    script: list[Action]
    tls: ssl.SSLContext | None = None
    requests: list[Request] = field(default_factory=list)
    connections: int = 0
    port: int = 0
    stop: threading.Event = field(default_factory=threading.Event)

    def start(self) -> Server:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}/v1"

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            if self.tls is not None:
                conn = self.tls.wrap_socket(conn, server_side=True)
            buf = bytearray()
            while (req := read_request(conn, buf)) is not None:
                self.requests.append(req)
                action = self.script[min(len(self.requests), len(self.script)) - 1]
                if action == "close":
                    return
                if action == "stall":
                    self.stop.wait(30)
                    return
                if callable(action):
                    action(req, conn)
                    return
                assert isinstance(action, bytes)
                conn.sendall(action)
        except (OSError, ssl.SSLError):
            return
        finally:
            conn.close()

    def close(self) -> None:
        self.stop.set()
        self.sock.close()


@pytest.fixture
def serve() -> Iterator[Callable[..., Server]]:
    servers: list[Server] = []

    def start(script: list[Action], tls: ssl.SSLContext | None = None) -> Server:
        servers.append(Server(script, tls).start())
        return servers[-1]

    yield start
    for srv in servers:
        srv.close()


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "SSL_CERT_FILE", "SSL_CERT_DIR"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    return monkeypatch


def backend(url: str, **kw: Any) -> OpenAIBackend:
    kw.setdefault("timeout_s", 5.0)
    return OpenAIBackend(url, "m", "sk-test", **kw)


async def chat(be: OpenAIBackend) -> str:
    req = ChatRequest(role="agent", messages=({"role": "user", "content": "hi"},), temperature=0.0, max_tokens=8)
    return (await be.complete(req)).text


def sends_then(raw: bytes, then: str = "close", pause: float = 0.0) -> Callable[[Request, socket.socket], None]:
    """An action that sends ``raw`` and then hangs up (or, with ``then="stall"``, sends nothing more)."""
    def act(req: Request, conn: socket.socket) -> None:
        conn.sendall(raw)
        if pause:
            time.sleep(pause)
        if then == "stall":
            time.sleep(30)
    return act


# ---- connections ---------------------------------------------------------------------------------------------
async def test_keep_alive_reuses_one_connection(serve, clean_env) -> None:
    srv = serve([reply(CHAT)])
    be = backend(srv.url)
    assert [await chat(be) for _ in range(5)] == ["hello"] * 5
    assert srv.connections == 1 and len(srv.requests) == 5
    first = srv.requests[0]
    assert first.line == "POST /v1/chat/completions HTTP/1.1"
    assert first.header("authorization") == "Bearer sk-test" and first.header("host") == f"127.0.0.1:{srv.port}"
    assert json.loads(first.body)["messages"] == [{"role": "user", "content": "hi"}]
    await be.aclose()


async def test_connection_close_and_hangups_open_a_fresh_connection(serve, clean_env) -> None:
    srv = serve([reply(CHAT, extra="Connection: close\r\n"), reply(CHAT), "close", reply(CHAT)])
    be = backend(srv.url)
    assert await chat(be) == "hello"  # the server asked to close: not reused
    assert await chat(be) == "hello"
    with pytest.raises(TransientError) as err:  # hung up on a request without a byte of reply
        await chat(be)
    assert err.value.kind == "connection"
    assert await chat(be) == "hello"
    assert srv.connections == 3
    await be.aclose()


async def test_a_server_closing_an_idle_connection_is_not_an_error(serve, clean_env) -> None:
    srv = serve([sends_then(reply(CHAT))])  # keep-alive promised, then closed while idle
    be = backend(srv.url)
    assert await chat(be) == "hello"
    await asyncio.sleep(0.1)  # the FIN arrives while the connection sits idle
    assert await chat(be) == "hello"
    assert srv.connections == 2
    await be.aclose()


async def test_concurrent_requests_spread_over_clients_of_a_bounded_size(serve, clean_env) -> None:
    from amemgym.llm.http import Transport

    def slow(req: Request, conn: socket.socket) -> None:
        time.sleep(0.3)
        conn.sendall(reply(CHAT, extra="Connection: close\r\n"))

    srv = serve([slow])
    be = backend(srv.url)
    assert await asyncio.gather(*(chat(be) for _ in range(20))) == ["hello"] * 20
    transport = be._http()
    assert len(transport._pools) == -(-20 // Transport.SHARD) and transport._busy == [0] * len(transport._pools)
    assert srv.connections == 20
    await be.aclose()


# ---- a reply belongs to its own request ----------------------------------------------------------------------------
async def test_bytes_after_a_complete_reply_never_answer_the_next_request(serve, clean_env) -> None:
    # The first reply comes with a second, unrequested one in the same write: a client that kept the
    # connection would take "INJECTED" as the reply to its next question.
    srv = serve([reply(chat_body("first")) + reply(chat_body("INJECTED")), reply(chat_body("second"))])
    be = backend(srv.url)
    assert await chat(be) == "first"
    assert await chat(be) == "second"
    assert srv.connections == 2 and len(srv.requests) == 2
    await be.aclose()


async def test_a_reply_pushed_on_an_idle_connection_never_answers_the_next_request(serve, clean_env) -> None:
    def answer_then_push(req: Request, conn: socket.socket) -> None:
        conn.sendall(reply(chat_body("first")))
        time.sleep(0.2)  # the client is idle now
        conn.sendall(reply(chat_body("INJECTED")))
        time.sleep(2)

    srv = serve([answer_then_push, reply(chat_body("second"))])
    be = backend(srv.url)
    assert await chat(be) == "first"
    await asyncio.sleep(0.6)
    assert await chat(be) == "second"
    assert srv.connections == 2
    await be.aclose()


# ---- bodies ----------------------------------------------------------------------------------------------------------
async def test_chunked_and_gzip_bodies_are_decoded(serve, clean_env) -> None:
    chunked = (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
               + b"".join(f"{len(p):x}\r\n".encode() + p + b"\r\n" for p in (CHAT[:10], CHAT[10:])) + b"0\r\n\r\n")
    srv = serve([chunked, reply(gzip.compress(CHAT), extra="Content-Encoding: gzip\r\n")])
    be = backend(srv.url)
    assert await chat(be) == "hello"
    assert await chat(be) == "hello"
    assert "gzip" in (srv.requests[0].header("accept-encoding") or "")
    await be.aclose()


async def test_oversized_replies_are_refused_declared_streamed_endless_or_compressed(serve, clean_env) -> None:
    big = b"x" * 5000
    unsized = b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + big  # no length: read to close

    def endless(req: Request, conn: socket.socket) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        for _ in range(10_000):  # 40 MB if nobody stops reading
            conn.sendall(b"1000\r\n" + b"y" * 4096 + b"\r\n")

    bomb = gzip.compress(b"{" + b" " * 100_000 + b"}")  # 100 KB of JSON in a few hundred bytes
    srv = serve([reply(big), unsized, endless, reply(bomb, extra="Content-Encoding: gzip\r\n")])
    be = backend(srv.url, max_reply_bytes=4096)
    for _ in range(4):
        with pytest.raises(PermanentError) as err:
            await chat(be)
        assert err.value.kind == "reply_too_large"
    await be.aclose()


@pytest.mark.parametrize(("raw", "kind"), [
    (b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"choices\": ", "malformed_body"),  # cut short
    (b"SMTP ready\r\n\r\n", "malformed_body"),  # not HTTP at all
    (b"HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\nnotjson", "malformed_body"),
    (b"", "connection"),  # hung up without a byte
])
async def test_broken_replies_map_onto_the_retry_kinds(serve, clean_env, raw: bytes, kind: str) -> None:
    srv = serve([sends_then(raw)])
    be = backend(srv.url)
    with pytest.raises(TransientError) as err:
        await chat(be)
    assert err.value.kind == kind
    await be.aclose()


def with_usage(usage: Any) -> bytes:
    return reply(json.dumps({"model": "m", "choices": [{"message": {"content": "hello"}}], "usage": usage}).encode())


@pytest.mark.parametrize("usage", [
    {"prompt_tokens": -1000, "completion_tokens": 5},  # would subtract from the run's usage and cost
    {"prompt_tokens": 10**30},  # beyond any call, and beyond what the usage files can hold
    {"prompt_tokens": 2**62},
    {"completion_tokens": 1.5},
    {"completion_tokens": "many"},
    {"prompt_tokens": True},
    [3, 1],
])
async def test_token_counts_that_are_not_counts_are_malformed_replies(serve, clean_env, usage: Any) -> None:
    srv = serve([with_usage(usage)])
    be = backend(srv.url)
    with pytest.raises(TransientError) as err:
        await chat(be)
    assert err.value.kind == "malformed_body"
    await be.aclose()


async def test_token_counts_written_as_text_or_whole_floats_are_read(serve, clean_env) -> None:
    srv = serve([with_usage({"prompt_tokens": "12", "completion_tokens": 3.0})])
    be = backend(srv.url)
    req = ChatRequest(role="agent", messages=({"role": "user", "content": "hi"},), temperature=0.0, max_tokens=8)
    res = await be.complete(req)
    assert (res.prompt_tokens, res.completion_tokens) == (12, 3)
    await be.aclose()


async def test_a_request_that_cannot_be_sent_is_permanent(serve, clean_env) -> None:
    srv = serve([reply(CHAT)])
    be = OpenAIBackend(srv.url, "m", "key-with\nnewline")  # e.g. a key file with a line break inside
    with pytest.raises(PermanentError) as err:
        await chat(be)
    assert err.value.kind == "bad_request" and srv.requests == []
    await be.aclose()


# ---- embeddings ------------------------------------------------------------------------------------------------------
def embeddings(*rows: tuple[int | None, list[float]]) -> bytes:
    data = [{"embedding": vec, **({} if i is None else {"index": i})} for i, vec in rows]
    return reply(json.dumps({"data": data}).encode())


@pytest.mark.parametrize("raw", [
    embeddings((0, [1.0, 0.0])),  # one vector for two texts
    embeddings((0, [1.0, 0.0]), (1, [0.0, 1.0]), (2, [1.0, 1.0])),  # one too many
    embeddings((0, [1.0, 0.0]), (0, [0.0, 1.0])),  # the first text twice, the second never
    embeddings((0, [1.0, 0.0]), (5, [0.0, 1.0])),  # an index that names no input
    embeddings((0, [1.0, 0.0]), (None, [0.0, 1.0])),  # numbered in part
    embeddings((0, [1.0, 0.0]), (1, [0.0, 1.0, 0.5])),  # vectors of different lengths
    embeddings((0, []), (1, [])),  # empty vectors
    embeddings((0, [1.0]), (1, [1.0])),  # one dimension: every text points the same way
    embeddings((0, [1.0, 0.0]), (1, [0.0, 0.0])),  # all zeros: no direction to compare
    reply(b'{"data": [{"index": 0, "embedding": [1e999, 0]}, {"index": 1, "embedding": [0, 1]}]}'),  # infinite
    reply(b'{"data": [{"index": 0, "embedding": ["0.5", "1"]}, {"index": 1, "embedding": [0, 1]}]}'),  # strings
    reply(b'{"data": [{"index": 0, "embedding": [true, false]}, {"index": 1, "embedding": [0, 1]}]}'),  # booleans
    reply(b'{"data": [[1, 0], [0, 1]]}'),  # bare vectors, not objects (was "unexpected")
    reply(b'{"data": [{"index": 0, "embedding": [1, 0]}, {"index": [1], "embedding": [0, 1]}]}'),  # a list index
])
async def test_embeddings_that_do_not_match_their_inputs_are_malformed(serve, clean_env, raw: bytes) -> None:
    srv = serve([raw])
    be = backend(srv.url)
    with pytest.raises(TransientError) as err:
        await be.embed(["first", "second"])
    assert err.value.kind == "malformed_body"
    await be.aclose()


async def test_one_vector_for_three_different_texts_is_malformed(serve, clean_env) -> None:
    same = embeddings((0, [0.6, 0.8]), (1, [0.6, 0.8]), (2, [0.6, 0.8]))
    srv = serve([same, same])
    be = backend(srv.url)
    with pytest.raises(TransientError, match="the same vector for every text") as err:
        await be.embed(["first", "second", "third"])
    assert err.value.kind == "malformed_body"
    assert (await be.embed(["same text", "same text", ""])).shape == (3, 2)  # the same text may well agree
    await be.aclose()


async def test_embeddings_of_extreme_magnitude_keep_their_direction(serve, clean_env) -> None:
    srv = serve([embeddings((0, [3e-40, 4e-40]), (1, [0.0, 1e30])), embeddings((0, [3e-310, 4e-310]), (1, [1e200, 0]))])
    be = backend(srv.url)
    for _ in range(2):
        vecs = await be.embed(["tiny", "huge"])
        assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0) and np.allclose(np.abs(vecs).max(axis=1), [0.8, 1.0])
    await be.aclose()


async def test_embeddings_come_back_in_the_order_of_their_inputs(serve, clean_env) -> None:
    srv = serve([embeddings((1, [0.0, 2.0]), (0, [3.0, 0.0])), embeddings((None, [3.0, 0.0]), (None, [0.0, 2.0]))])
    be = backend(srv.url)
    for _ in range(2):  # numbered out of order, then unnumbered in order
        assert (await be.embed(["first", "second"])).tolist() == [[1.0, 0.0], [0.0, 1.0]]
    await be.aclose()


def embedder_client(url: str) -> LLMClient:
    return LLMClient(LLMConfig(roles={"embedder": {"base_url": url, "model": "m", "timeout_s": 5.0}}),
                     backoff_base=0.0)


async def test_an_http_embedder_is_retried_counted_and_fails_in_one_line(serve, clean_env) -> None:
    ok = embeddings((0, [1.0, 0.0]))
    srv = serve([reply(b"{}", status=503), ok, reply(b'{"error": {"message": "no such model"}}', status=400)])
    llm = embedder_client(srv.url)
    assert (await llm.embed(["text"])).shape == (1, 2)
    usage = llm.ledger.role("embedder")
    assert usage.retries == 1 and usage.faults["http_503"] == 1 and usage.calls == 1
    with pytest.raises(LLMError) as err:
        await llm.embed(["text"])
    assert str(err.value) == ("embedder call rejected by the endpoint (http_400); not retried: "
                              "HTTP 400: no such model")
    assert len(srv.requests) == 3 and usage.failures == 1
    await llm.aclose()


async def test_an_embedder_that_changes_its_vectors_length_stops_the_run(serve, clean_env) -> None:
    srv = serve([embeddings((0, [1.0, 0.0])), embeddings((0, [1.0, 0.0, 0.0]))])
    llm = embedder_client(srv.url)
    await llm.embed(["text"])
    with pytest.raises(LLMError, match="now returns 3-dimensional embeddings, not 2 as before in this run"):
        await llm.embed(["text"])
    assert len(srv.requests) == 2  # refused at once: retrying cannot bring the old model back
    await llm.aclose()



async def test_an_embedder_that_gives_every_text_one_vector_stops_the_run_across_calls(serve, clean_env) -> None:
    same = embeddings((0, [0.6, 0.8]))
    srv = serve([same] * 5 + [embeddings((0, [0.8, 0.6]))] + [same] * 3)
    llm = embedder_client(srv.url)
    await llm.embed(["first"])
    await llm.embed(["first"])  # the same text may well get the same vector again
    await llm.embed(["second"])
    with pytest.raises(LLMError, match="gives the same vector for every text"):
        await llm.embed(["third"])  # one text per call, as a retriever's queries come
    assert len(srv.requests) == 4  # refused at once: the server embeds nothing, whatever it is asked again
    await llm.aclose()
    varied = embedder_client(srv.url)  # once one text gets another vector, agreeing texts are no sign of it
    await varied.embed(["first"])
    await varied.embed(["second"])
    for text in ("third", "fourth", "fifth"):
        assert (await varied.embed([text])).shape == (1, 2)
    await varied.aclose()

# ---- limits ----------------------------------------------------------------------------------------------------------
async def test_read_idle_and_total_limits(serve, clean_env) -> None:
    def trickle(req: Request, conn: socket.socket) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n")
        for _ in range(100):  # one byte every 0.1 s: never idle for long, never done
            conn.sendall(b" ")
            time.sleep(0.1)

    srv = serve(["stall"])
    idle = backend(srv.url, read_timeout_s=0.3)
    with pytest.raises(TransientError) as err:
        await chat(idle)
    assert err.value.kind == "timeout" and "ReadTimeout" in str(err.value)
    slow = serve([trickle])
    total = backend(slow.url, read_timeout_s=0.5, timeout_s=0.8)
    with pytest.raises(TransientError) as err:
        await chat(total)
    assert err.value.kind == "timeout" and "ReadTimeout" not in str(err.value)  # the total deadline, not idleness
    await idle.aclose()
    await total.aclose()


async def test_the_connect_limit_reaches_the_client_and_its_expiry_is_a_timeout(clean_env) -> None:
    # (An unanswered connect cannot be staged reliably on a test machine; the limit's wiring and the mapping of
    # its expiry are checked instead.)
    import httpx

    from amemgym.llm.openai_backend import classify

    be = backend("http://127.0.0.1:9/v1", connect_timeout_s=0.3, read_timeout_s=4.0)
    limits = be._http().timeout()
    assert (limits["connect"], limits["read"]) == (0.3, 4.0)
    assert classify(httpx.ConnectTimeout("connect timed out")).kind == "timeout"
    await be.aclose()


# ---- redirects, URLs ------------------------------------------------------------------------------------------------
async def test_redirects_are_reported_not_followed(serve, clean_env) -> None:
    srv = serve([reply(b"", status=301, extra="Location: https://api.example.com/v1/chat/completions\r\n")])
    be = backend(srv.url)
    with pytest.raises(PermanentError) as err:
        await chat(be)
    assert err.value.kind == "http_301" and "https://api.example.com/v1" in str(err.value)
    assert len(srv.requests) == 1
    await be.aclose()


async def test_a_redirected_model_list_is_a_wrong_base_url_even_with_a_model_name(serve, clean_env) -> None:
    srv = serve([reply(b"", status=308, extra="Location: https://api.example.com/v1/models\r\n")])
    be = backend(srv.url)  # the model name is configured, so a missing model list alone would be fine
    with pytest.raises(PermanentError, match="redirects to https://api.example.com/v1/models"):
        await be.model_identity()
    await be.aclose()


async def test_a_query_string_in_the_base_url_goes_with_every_request(serve, clean_env) -> None:
    srv = serve([reply(CHAT)])
    be = OpenAIBackend(f"http://127.0.0.1:{srv.port}/openai/deploy?api-version=2024-06-01", "m", None)
    await chat(be)
    assert srv.requests[0].line == "POST /openai/deploy/chat/completions?api-version=2024-06-01 HTTP/1.1"
    await be.aclose()


def test_ipv6_hosts_keep_their_brackets_in_recorded_urls_and_cache_keys() -> None:
    assert public_url("http://user:pw@[::1]:8000/v1/?x=1") == "http://[::1]:8000/v1"
    assert public_url("https://[2001:db8::5]/v1") == "https://[2001:db8::5]/v1"
    v6 = OpenAIBackend("http://[::1]:8000/v1", "m", None)
    v4 = OpenAIBackend("http://127.0.0.1:8000/v1", "m", None)
    assert v6.backend_id == "openai:http://[::1]:8000/v1"
    req = ChatRequest(role="agent", messages=({"role": "user", "content": "hi"},), temperature=0.0, max_tokens=8)
    # Without brackets "::1:8000" reads as another address (port-less, ending in :8000): keys must differ.
    assert req.cache_key(v6.backend_id, "m") != req.cache_key("openai:http://::1:8000/v1", "m")
    assert req.cache_key(v6.backend_id, "m") != req.cache_key(v4.backend_id, "m")


def test_retry_after_reads_seconds_and_http_dates() -> None:
    assert status_error(429, b"", {"retry-after": "7"}).retry_after == 7.0  # type: ignore[union-attr]
    when = email.utils.formatdate(time.time() + 120, usegmt=True)
    waited = status_error(503, b"", {"retry-after": when}).retry_after  # type: ignore[union-attr]
    assert waited is not None and 100 < waited <= 120
    past = email.utils.formatdate(time.time() - 600, usegmt=True)
    assert status_error(503, b"", {"retry-after": past}).retry_after == 0.0  # type: ignore[union-attr]
    assert status_error(503, b"", {"retry-after": "soon"}).retry_after is None  # type: ignore[union-attr]


def test_an_html_error_page_is_not_pasted_into_the_error() -> None:
    err = status_error(404, b"<html><body><h1>Not Found</h1>" + b"x" * 500 + b"</body></html>",
                       {"content-type": "text/html; charset=utf-8"})
    assert str(err) == "HTTP 404 (text/html reply, not the API's JSON)"


# ---- proxies ---------------------------------------------------------------------------------------------------------
async def test_http_proxy_gets_absolute_targets_and_credentials(serve, clean_env) -> None:
    proxy = serve([reply(CHAT)])
    clean_env.setenv("HTTP_PROXY", f"http://alice:s%40cret@127.0.0.1:{proxy.port}")
    be = OpenAIBackend("http://models.example.test/v1", "m", "sk-test")
    assert await chat(be) == "hello"
    req = proxy.requests[0]
    assert req.line == "POST http://models.example.test/v1/chat/completions HTTP/1.1"
    assert req.header("host") == "models.example.test"
    assert req.header("proxy-authorization") == "Basic " + base64.b64encode(b"alice:s@cret").decode()
    await be.aclose()


async def test_no_proxy_and_loopback_addresses_bypass_the_proxy(serve, clean_env) -> None:
    from amemgym.llm.http import env_proxy

    clean_env.setenv("HTTP_PROXY", "http://10.0.0.9:3128")
    clean_env.setenv("NO_PROXY", "models.internal")
    assert env_proxy("http://models.internal/v1") is None
    assert env_proxy("http://other.example/v1") == "http://10.0.0.9:3128"
    # A proxy cannot reach this machine's loopback (the embedded server listens there), NO_PROXY or not.
    for url in ("http://127.0.0.1:8080/v1", "http://localhost:8080/v1", "http://[::1]:8080/v1"):
        assert env_proxy(url) is None, url
    origin = serve([reply(CHAT)])
    be = backend(origin.url)
    assert await chat(be) == "hello"
    await be.aclose()


@pytest.fixture
def ca(tmp_path: Path) -> Any:
    trustme = pytest.importorskip("trustme")
    authority = trustme.CA()
    authority.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    authority.pem_path = tmp_path / "ca.pem"
    return authority


def server_tls(ca: Any) -> ssl.SSLContext:
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1", ORIGIN).configure_cert(ctx)
    return ctx


#: The name the tests' proxied origins go by: loopback addresses never go through a proxy, and the proxy
#: below takes every name to this machine.
ORIGIN = "models.test"


class ConnectProxy:
    """A CONNECT (tunnelling) and forwarding proxy in a thread, itself over TLS when ``tls`` is given; every
    host it is asked for is this machine."""

    def __init__(self, tls: ssl.SSLContext | None = None, refuse: int | None = None) -> None:
        self.tls, self.refuse = tls, refuse
        self.lines: list[str] = []
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            if self.tls is not None:
                conn = self.tls.wrap_socket(conn, server_side=True)
            buf = bytearray()
            req = read_request(conn, buf)
            if req is None:
                return
            self.lines.append(req.line)
            if self.refuse:
                conn.sendall(reply(b"no", status=self.refuse))
                return
            method, target, _ = req.line.split(" ")
            if method == "CONNECT":
                port = target.rsplit(":", 1)[1]
                upstream = socket.create_connection(("127.0.0.1", int(port)))
                conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                self._pipe(conn, upstream, bytes(buf))
            else:  # forward an absolute-form request to the origin it names
                port = target.split("/")[2].rsplit(":", 1)[1]
                upstream = socket.create_connection(("127.0.0.1", int(port)))
                upstream.sendall(req.head.encode("latin-1") + b"\r\n\r\n" + req.body)
                self._pipe(conn, upstream, bytes(buf))
        except (OSError, ssl.SSLError):
            return
        finally:
            conn.close()

    @staticmethod
    def _pipe(client: socket.socket, upstream: socket.socket, pending: bytes) -> None:
        if pending:
            upstream.sendall(pending)

        def up() -> None:
            try:
                while data := client.recv(65536):
                    upstream.sendall(data)
            except OSError:
                pass
            finally:
                upstream.close()

        threading.Thread(target=up, daemon=True).start()
        try:
            while data := upstream.recv(65536):
                client.sendall(data)
        except OSError:
            pass

    def close(self) -> None:
        self.sock.close()


async def test_https_with_ssl_cert_file_direct_and_through_a_connect_proxy(serve, clean_env, ca) -> None:
    origin = serve([reply(CHAT)], tls=server_tls(ca))
    clean_env.setenv("SSL_CERT_FILE", str(ca.pem_path))  # the test CA, as a company CA would be named
    direct = backend(origin.url)
    assert await chat(direct) == "hello"
    proxy = ConnectProxy()
    clean_env.setenv("HTTPS_PROXY", proxy.url)
    via = backend(f"https://{ORIGIN}:{origin.port}/v1")
    assert await chat(via) == "hello"
    assert proxy.lines == [f"CONNECT {ORIGIN}:{origin.port} HTTP/1.1"]
    assert origin.requests[-1].line == "POST /v1/chat/completions HTTP/1.1"
    proxy.close()
    await direct.aclose()
    await via.aclose()


async def test_an_https_proxy_carries_plain_and_tls_requests(serve, clean_env, ca) -> None:
    clean_env.setenv("SSL_CERT_FILE", str(ca.pem_path))
    proxy = ConnectProxy(tls=server_tls(ca))  # the client speaks TLS to the proxy itself
    plain = serve([reply(chat_body("plain"))])
    clean_env.setenv("HTTP_PROXY", proxy.url)
    be = backend(f"http://{ORIGIN}:{plain.port}/v1")
    assert await chat(be) == "plain"
    assert proxy.lines == [f"POST http://{ORIGIN}:{plain.port}/v1/chat/completions HTTP/1.1"]
    secure = serve([reply(chat_body("tls in tls"))], tls=server_tls(ca))
    clean_env.setenv("HTTPS_PROXY", proxy.url)
    tunnelled = backend(f"https://{ORIGIN}:{secure.port}/v1")
    assert await chat(tunnelled) == "tls in tls"
    assert proxy.lines[-1] == f"CONNECT {ORIGIN}:{secure.port} HTTP/1.1"
    proxy.close()
    await be.aclose()
    await tunnelled.aclose()


async def test_proxy_failures_name_the_proxy(clean_env) -> None:
    refusing = ConnectProxy(refuse=407)
    clean_env.setenv("HTTPS_PROXY", f"http://bob:pw@127.0.0.1:{refusing.port}")
    be = backend("https://models.example.test/v1")
    with pytest.raises(TransientError) as err:
        await chat(be)
    assert err.value.kind == "proxy" and f"http://127.0.0.1:{refusing.port}" in str(err.value)
    assert "407" in str(err.value) and "pw" not in str(err.value)
    refusing.close()
    clean_env.setenv("HTTPS_PROXY", "http://127.0.0.1:9")  # nothing listens there
    with pytest.raises(TransientError) as err:
        await chat(backend("https://models.example.test/v1"))
    assert "http://127.0.0.1:9" in str(err.value)
    await be.aclose()


async def test_a_socks_proxy_gets_a_clear_line(clean_env) -> None:
    import importlib.util

    if importlib.util.find_spec("socksio") is not None:
        pytest.skip("socksio is installed: socks proxies are supported")
    clean_env.setenv("ALL_PROXY", "socks5://127.0.0.1:1080")
    with pytest.raises(PermanentError) as err:
        await chat(backend("https://models.example.test/v1"))
    assert "socks" in str(err.value) and "pip install" in str(err.value)
    assert "unreachable" not in str(err.value)


def test_the_ca_store_is_the_systems_unless_ssl_cert_file_names_another(clean_env, ca) -> None:
    from amemgym.llm.http import tls_context

    system = ssl.create_default_context().get_ca_certs()
    assert tls_context().get_ca_certs() == system  # the machine's store, not only certifi's bundle
    clean_env.setenv("SSL_CERT_FILE", str(ca.pem_path))
    assert [c["subject"] for c in tls_context().get_ca_certs()] != [c["subject"] for c in system]
    clean_env.setenv("SSL_CERT_FILE", "/no/such/ca.pem")
    with pytest.raises(PermanentError, match="SSL_CERT_FILE=/no/such/ca.pem: cannot load CA certificates"):
        asyncio.run(chat(backend("https://models.example.test/v1")))


# ---- TLS failures are permanent ------------------------------------------------------------------------------------
async def test_an_untrusted_certificate_fails_once_in_one_line(serve, clean_env, ca) -> None:
    srv = serve([reply(CHAT)], tls=server_tls(ca))  # signed by a CA this machine does not trust
    cfg = LLMConfig(default=EndpointConfig(base_url=srv.url, model="m", max_retries=4))
    llm = LLMClient(cfg, backoff_base=0.001)
    with pytest.raises(LLMError) as err:
        await llm.chat("agent", [{"role": "user", "content": "hi"}], use_cache=False)
    await llm.aclose()
    text = str(err.value)
    assert "tls" in text and "certificate verify failed" in text and "SSL_CERT_FILE" in text
    assert "\n" not in text and "not retried" in text
    assert srv.requests == []  # the handshake failed: no request was ever sent, once


def test_an_untrusted_certificate_stops_the_cli_in_one_line(serve, clean_env, ca, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from amemgym.cli import app

    srv = serve([reply(CHAT)], tls=server_tls(ca))
    clean_env.setenv("OPENAI_BASE_URL", srv.url)
    result = CliRunner().invoke(app, ["run", "--out", str(tmp_path / "r"), "--set", "llm.default.model=m"])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "certificate verify failed" in lines[0], result.output
    assert srv.connections == 1 and not (tmp_path / "r").exists()


# ---- the preflight reads /models through the same client --------------------------------------------------------
def endless_models(req: Request, conn: socket.socket) -> None:
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
    head = b'{"data": ['
    conn.sendall(b"%x\r\n%s\r\n" % (len(head), head))
    for _ in range(100_000):  # 400 MB if nobody stops reading
        conn.sendall(b"1000\r\n" + b" " * 4096 + b"\r\n")


def slow_models(req: Request, conn: socket.socket) -> None:
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n")
    for _ in range(60):  # one byte a second: never idle long enough to trip the read limit
        conn.sendall(b" ")
        time.sleep(1)


MANY_HEADERS = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                + b"".join(b"X-H%d: v\r\n" % i for i in range(150))
                + b"Content-Length: 27\r\n\r\n{\"data\": [{\"id\": \"other\"}]}")


@pytest.mark.parametrize(("action", "words"), [
    (endless_models, "max_reply_bytes"),
    (slow_models, "timeout"),
    (sends_then(b"HTTP/1.1 two hundred OK\r\n\r\n"), "malformed"),
    (sends_then(b"HTTP/1.1 200 OK\r\nContent-Length: 500\r\n\r\n{\"data\": ["), "malformed"),
    (MANY_HEADERS, "not served"),  # read in full; the listed model is not the configured one
    (reply(b'{"data": []}'), "(it lists no models)"),
])
def test_the_preflight_ends_every_bad_model_list_in_one_line(serve, clean_env, action: Action, words: str) -> None:
    from amemgym.errors import BackendUnavailable
    from amemgym.llm.preflight import preflight

    srv = serve([action])
    cfg = LLMConfig(default=EndpointConfig(base_url=srv.url, model="m", timeout_s=3.0, max_reply_bytes=1 << 16))
    start = time.monotonic()
    with pytest.raises(BackendUnavailable) as err:
        preflight(cfg, ["agent"])
    text = str(err.value)
    assert words in text and "\n" not in text and "Traceback" not in text, text
    assert time.monotonic() - start < 20  # bounded by the endpoint's own limits, not the server's patience


def silent_models(req: Request, conn: socket.socket) -> None:
    time.sleep(8)  # connected, then nothing


def test_a_model_list_that_never_comes_is_not_called_unreachable(serve, clean_env) -> None:
    from amemgym.errors import BackendUnavailable
    from amemgym.llm.preflight import preflight

    srv = serve([silent_models])
    cfg = LLMConfig(default=EndpointConfig(base_url=srv.url, model="m", read_timeout_s=1.0, timeout_s=3.0))
    with pytest.raises(BackendUnavailable) as err:
        preflight(cfg, ["agent"])
    text = str(err.value)
    assert "accepted the connection but did not answer GET /models" in text and "unreachable" not in text, text


@pytest.mark.parametrize("page", [
    reply(b"<html><body>Welcome to nginx!</body></html>", extra="Content-Type: text/html\r\n"),
    reply(b"<html><body>Not Found</body></html>", status=404, extra="Content-Type: text/html\r\n"),
])
def test_a_server_that_is_not_openai_compatible_stops_the_run_in_one_line(serve, clean_env, tmp_path: Path,
                                                                         page: bytes) -> None:
    from typer.testing import CliRunner

    from amemgym.cli import app

    srv = serve([page])
    clean_env.setenv("OPENAI_BASE_URL", srv.url)
    result = CliRunner().invoke(app, ["run", "--out", str(tmp_path / "r"), "--set", "llm.default.model=m"])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "not an OpenAI-compatible API" in lines[0], result.output
    assert "<html" not in result.output and not (tmp_path / "r").exists()
    assert [r.line.split(" ")[1] for r in srv.requests] == ["/v1/models"]


# ---- the fake endpoint's latency ---------------------------------------------------------------------------------
async def test_fake_endpoint_latency_covers_its_own_work(clean_env) -> None:
    # The benchmarks charge everything above the configured latency to the harness, so the fake endpoint's
    # own work (here a responder taking 0.15 s) must happen inside the latency, not after it.
    from amemgym.testing.fake_endpoint import FakeEndpoint

    def slow(body: dict[str, object]) -> str:
        time.sleep(0.15)
        return "ok"

    with FakeEndpoint(latency=0.4, responder=slow) as ep:
        be = OpenAIBackend(ep.base_url, "fake-model", None)
        loop = asyncio.get_running_loop()
        took = []
        for _ in range(3):
            start = loop.time()
            assert await chat(be) == "ok"
            took.append(loop.time() - start)
        await be.aclose()
    assert min(took) >= 0.4
    assert min(took) < 0.5  # not 0.4 + 0.15


async def test_a_rejected_reply_without_token_counts_is_said_too(serve, clean_env) -> None:
    # Before: a reply rejected after it arrived (here an empty one) with no usage added nothing anywhere, so the
    # totals read as complete.
    models = json.dumps({"object": "list", "data": [{"id": "m", "object": "model"}]}).encode()
    empty = json.dumps({"model": "m", "choices": [{"message": {"content": ""}, "finish_reason": "stop"}]}).encode()
    srv = serve([reply(models), reply(empty), reply(CHAT)])
    llm = LLMClient(LLMConfig(roles={"agent": {"base_url": srv.url, "model": "m", "timeout_s": 5.0}}),
                    backoff_base=0.0)
    await llm.chat("agent", [{"role": "user", "content": "hi"}], max_tokens=8)
    usage = llm.ledger.role("agent")
    assert usage.calls == 1 and usage.uncounted == 0 and usage.uncounted_rejected == 1
    assert uncounted_note(llm.ledger.to_dict()) == ("note: 1 rejected replies (empty or malformed) carried no token "
                                                    "counts; the tokens and cost shown leave them out")
    await llm.aclose()


async def test_a_reply_without_token_counts_is_counted_as_uncounted_not_as_free(serve, clean_env) -> None:
    models = json.dumps({"object": "list", "data": [{"id": "m", "object": "model"}]}).encode()
    srv = serve([reply(models), reply(chat_body("hello")), reply(CHAT)])
    llm = LLMClient(LLMConfig(roles={"agent": {"base_url": srv.url, "model": "m", "timeout_s": 5.0,
                                               "price_per_mtok_in": 1000.0}}), backoff_base=0.0)
    for text in ("first", "second"):
        await llm.chat("agent", [{"role": "user", "content": text}], max_tokens=8)
    usage = llm.ledger.role("agent")
    assert usage.calls == 2 and usage.uncounted == 1 and usage.prompt_tokens == 3
    # Before: "0 prompt tokens, $0" for such replies, said as confidently as a measured figure.
    note = uncounted_note(llm.ledger.to_dict())
    assert note is not None and "1 of 2 fresh replies carried no token counts (agent 1)" in note
    await llm.aclose()
