"""The model client's HTTP/1.1 transport (llm/http.py) against scripted servers that misbehave on purpose.

Each server reads one request head (and its body) at a time and answers with the next scripted action, so
a test states byte for byte what the client sees. Through the backend, every failure must map onto the
same error kinds the retry policy and the failure counts rely on.
"""

from __future__ import annotations

import asyncio
import base64
import gzip
import json
import ssl
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

import pytest

from amemgym.llm.backends import PermanentError, TransientError
from amemgym.llm.http import HTTPPool, ProtocolError, ProxyError, ReplyTooLarge
from amemgym.llm.openai_backend import OpenAIBackend
from amemgym.llm.timeouts import Timeouts

LIMITS = Timeouts(connect=2.0, read=2.0, total=5.0)
CHAT = json.dumps({"model": "m", "choices": [{"message": {"content": "hello"}, "finish_reason": "stop"}],
                   "usage": {"prompt_tokens": 3, "completion_tokens": 1}}).encode()


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


Action = Callable[[Request, asyncio.StreamWriter], "asyncio.Future[None] | None"] | bytes | str


@dataclass
class Server:
    """Answers request k with ``script[k]``: bytes to send, ``"close"`` to hang up, ``"stall"`` to go quiet."""

    script: list[Action]
    requests: list[Request] = field(default_factory=list)
    connections: int = 0
    port: int = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                try:
                    head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                req = Request(head, b"")
                size = int(req.header("content-length") or 0)
                req.body = await reader.readexactly(size) if size else b""
                self.requests.append(req)
                action = self.script[min(len(self.requests), len(self.script)) - 1]
                if action == "close":
                    writer.close()
                    return
                if action == "stall":
                    await asyncio.sleep(30)
                    return
                if callable(action):
                    await action(req, writer)  # type: ignore[misc]
                    return
                assert isinstance(action, bytes)
                writer.write(action)
                await writer.drain()
        finally:
            writer.close()


@pytest.fixture
async def serve() -> AsyncIterator[Callable[..., Server]]:
    servers: list[asyncio.Server] = []

    async def start(script: list[Action], tls: ssl.SSLContext | None = None) -> Server:
        srv = Server(script)
        server = await asyncio.start_server(srv.handle, "127.0.0.1", 0, ssl=tls)
        srv.port = server.sockets[0].getsockname()[1]
        servers.append(server)
        return srv

    yield start  # type: ignore[misc]
    for server in servers:
        server.close()


def backend(port: int, **kw: object) -> OpenAIBackend:
    return OpenAIBackend(f"http://127.0.0.1:{port}/v1", "m", "sk-test", timeout_s=5.0, **kw)  # type: ignore[arg-type]


async def chat(be: OpenAIBackend) -> str:
    from amemgym.llm.types import ChatRequest

    result = await be.complete(ChatRequest(role="agent", messages=({"role": "user", "content": "hi"},),
                                           temperature=0.0,
                                           max_tokens=8))
    return result.text


async def test_keep_alive_reuses_one_connection(serve) -> None:
    srv = await serve([reply(CHAT)])
    be = backend(srv.port)
    assert [await chat(be) for _ in range(5)] == ["hello"] * 5
    assert srv.connections == 1 and len(srv.requests) == 5
    first = srv.requests[0]
    assert first.line == "POST /v1/chat/completions HTTP/1.1"
    assert first.header("authorization") == "Bearer sk-test" and first.header("host") == f"127.0.0.1:{srv.port}"
    assert json.loads(first.body)["messages"] == [{"role": "user", "content": "hi"}]
    await be.aclose()


async def test_connection_close_and_idle_hangup_open_a_fresh_connection(serve) -> None:
    srv = await serve([reply(CHAT, extra="Connection: close\r\n"), reply(CHAT), "close", reply(CHAT)])
    pool = HTTPPool(f"http://127.0.0.1:{srv.port}", timeouts=LIMITS, headers={}, max_body=1 << 20)
    assert (await pool.request("GET", "/a")).status == 200  # server asked to close: not reused
    assert (await pool.request("GET", "/b")).status == 200
    with pytest.raises(ConnectionError):  # hung up on a request without a byte of reply
        await pool.request("GET", "/c")
    assert (await pool.request("GET", "/d")).body == CHAT
    assert srv.connections == 3
    await pool.aclose()


async def test_server_closing_an_idle_connection_is_not_an_error(serve) -> None:
    async def answer_then_hang_up(req: Request, writer: asyncio.StreamWriter) -> None:
        writer.write(reply(CHAT))
        await writer.drain()
        writer.close()  # keep-alive promised, then closed while idle (as servers do after their idle limit)

    srv = await serve([answer_then_hang_up])
    pool = HTTPPool(f"http://127.0.0.1:{srv.port}", timeouts=LIMITS, headers={}, max_body=1 << 20)
    await pool.request("GET", "/a")
    await asyncio.sleep(0.05)  # the FIN arrives while the connection sits idle
    assert (await pool.request("GET", "/b")).status == 200
    assert srv.connections == 2
    await pool.aclose()


async def test_chunked_and_gzip_bodies_are_decoded(serve) -> None:
    chunked = (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
               + b"".join(f"{len(p):x}\r\n".encode() + p + b"\r\n" for p in (CHAT[:10], CHAT[10:])) + b"0\r\n\r\n")
    srv = await serve([chunked, reply(gzip.compress(CHAT), extra="Content-Encoding: gzip\r\n")])
    be = backend(srv.port)
    assert await chat(be) == "hello"
    assert await chat(be) == "hello"
    assert srv.requests[0].header("accept-encoding") == "gzip, deflate"
    await be.aclose()


async def test_oversized_replies_are_refused_declared_streamed_or_compressed(serve) -> None:
    big = b"x" * 5000
    unsized = b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + big  # no length: read to close
    bomb = gzip.compress(b"{" + b" " * 100_000 + b"}")
    srv = await serve([reply(big), unsized, reply(bomb, extra="Content-Encoding: gzip\r\n")])
    be = backend(srv.port, max_reply_bytes=4096)
    for _ in range(3):
        with pytest.raises(PermanentError) as err:
            await chat(be)
        assert err.value.kind == "reply_too_large"
    await be.aclose()


@pytest.mark.parametrize(("raw", "kind"), [
    (b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"choices\": ", "malformed_body"),  # cut short
    (b"SMTP ready\r\n\r\n", "malformed_body"),  # not HTTP at all
    (b"HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\nnotjson", "malformed_body"),
    ("close", "connection"),  # hung up without a byte
])
async def test_broken_replies_map_onto_the_retry_kinds(serve, raw: Action, kind: str) -> None:
    async def send_and_close(req: Request, writer: asyncio.StreamWriter) -> None:
        assert isinstance(raw, bytes)
        writer.write(raw)
        await writer.drain()
        writer.close()

    srv = await serve([raw if isinstance(raw, str) else send_and_close])
    be = backend(srv.port)
    with pytest.raises(TransientError) as err:
        await chat(be)
    assert err.value.kind == kind
    await be.aclose()


async def test_read_idle_and_total_limits(serve) -> None:
    async def trickle(req: Request, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n")
        for _ in range(100):  # one byte every 0.1 s: never idle for long, never done
            writer.write(b" ")
            await writer.drain()
            await asyncio.sleep(0.1)

    srv = await serve(["stall", trickle])
    idle = HTTPPool(f"http://127.0.0.1:{srv.port}", timeouts=Timeouts(connect=1, read=0.3, total=5),
                    headers={}, max_body=1 << 20)
    loop = asyncio.get_running_loop()
    start = loop.time()
    with pytest.raises(TimeoutError):
        await idle.request("GET", "/stalled")
    assert loop.time() - start < 2
    total = HTTPPool(f"http://127.0.0.1:{srv.port}", timeouts=Timeouts(connect=1, read=0.5, total=0.8),
                     headers={}, max_body=1 << 20)
    start = loop.time()
    with pytest.raises(TimeoutError):
        await total.request("GET", "/trickle")
    assert loop.time() - start < 3
    await idle.aclose()
    await total.aclose()


async def test_redirects_are_reported_not_followed(serve) -> None:
    srv = await serve([reply(b"", status=301, extra="Location: https://api.example.com/v1/chat/completions\r\n")])
    be = backend(srv.port)
    with pytest.raises(PermanentError) as err:
        await chat(be)
    assert err.value.kind == "http_301" and "https://api.example.com/v1" in str(err.value)
    assert len(srv.requests) == 1
    await be.aclose()


async def test_a_query_string_in_the_base_url_goes_with_every_request(serve) -> None:
    srv = await serve([reply(CHAT)])
    be = OpenAIBackend(f"http://127.0.0.1:{srv.port}/openai/deploy?api-version=2024-06-01", "m", None)
    await chat(be)
    assert srv.requests[0].line == "POST /openai/deploy/chat/completions?api-version=2024-06-01 HTTP/1.1"
    await be.aclose()


async def test_http_proxy_gets_absolute_targets_and_credentials(serve, monkeypatch) -> None:
    proxy = await serve([reply(CHAT)])
    monkeypatch.setenv("HTTP_PROXY", f"http://alice:s%40cret@127.0.0.1:{proxy.port}")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    be = OpenAIBackend("http://models.example.test/v1", "m", "sk-test")
    assert await chat(be) == "hello"
    req = proxy.requests[0]
    assert req.line == "POST http://models.example.test/v1/chat/completions HTTP/1.1"
    assert req.header("host") == "models.example.test"
    assert req.header("proxy-authorization") == "Basic " + base64.b64encode(b"alice:s@cret").decode()
    await be.aclose()


async def test_https_direct_and_through_a_connect_proxy(serve) -> None:
    trustme = pytest.importorskip("trustme")
    ca = trustme.CA()
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(server_ctx)
    client_ctx = ssl.create_default_context()
    ca.configure_trust(client_ctx)
    origin = await serve([reply(CHAT)], tls=server_ctx)

    direct = HTTPPool(f"https://127.0.0.1:{origin.port}", timeouts=LIMITS, headers={}, max_body=1 << 20)
    direct._ssl = client_ctx  # trust the test CA instead of the system's
    assert (await direct.request("GET", "/v1/models")).body == CHAT

    lines: list[str] = []

    async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
        while data := await src.read(1 << 16):
            dst.write(data)
            await dst.drain()
        dst.close()

    async def connect_proxy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        lines.append((await reader.readuntil(b"\r\n\r\n")).decode().split("\r\n", 1)[0])
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", origin.port)
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        await writer.drain()
        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer), return_exceptions=True)

    proxy = await asyncio.start_server(connect_proxy, "127.0.0.1", 0)
    via = HTTPPool(f"https://127.0.0.1:{origin.port}", timeouts=LIMITS, headers={},
                   proxy=f"http://127.0.0.1:{proxy.sockets[0].getsockname()[1]}", max_body=1 << 20)
    via._ssl = client_ctx
    assert (await via.request("GET", "/v1/models")).body == CHAT
    assert lines == [f"CONNECT 127.0.0.1:{origin.port} HTTP/1.1"]
    assert origin.requests[-1].line == "GET /v1/models HTTP/1.1"
    proxy.close()
    await direct.aclose()
    await via.aclose()


async def test_a_proxy_refusing_the_tunnel_is_a_connection_failure(serve) -> None:
    proxy = await serve([reply(b"no", status=407)])
    pool = HTTPPool("https://models.example.test", timeouts=LIMITS, headers={},
                    proxy=f"http://127.0.0.1:{proxy.port}", max_body=1 << 20)
    with pytest.raises(ProxyError, match="407"):
        await pool.request("GET", "/v1/models")
    with pytest.raises(ValueError, match="only http:// proxies"):
        HTTPPool("https://x.test", timeouts=LIMITS, headers={}, proxy="socks5://127.0.0.1:1080", max_body=1)


def test_error_classes_are_distinct() -> None:
    # ProtocolError must not be an OSError (it would be counted as a dropped connection, not a bad reply).
    assert not issubclass(ProtocolError, OSError) and not issubclass(ReplyTooLarge, OSError)
    assert issubclass(ProxyError, ConnectionError)


async def test_fake_endpoint_latency_covers_its_own_work() -> None:
    # The benchmarks charge everything above the configured latency to the harness, so the fake endpoint's
    # own work (here a responder taking 0.15 s) must happen inside the latency, not after it.
    import time

    from amemgym.testing.fake_endpoint import FakeEndpoint

    def slow(body: dict[str, object]) -> str:
        time.sleep(0.15)
        return "ok"

    with FakeEndpoint(latency=0.4, responder=slow) as ep:
        pool = HTTPPool(ep.base_url, timeouts=LIMITS, headers={"Content-Type": "application/json"},
                        max_body=1 << 20)
        body = json.dumps({"model": "fake-model", "messages": [{"role": "user", "content": "hi"}]}).encode()
        loop = asyncio.get_running_loop()
        took = []
        for _ in range(3):
            start = loop.time()
            resp = await pool.request("POST", "/v1/chat/completions", body)
            took.append(loop.time() - start)
            assert json.loads(resp.body)["choices"][0]["message"]["content"] == "ok"
        await pool.aclose()
    assert min(took) >= 0.4
    assert min(took) < 0.5  # not 0.4 + 0.15


async def test_a_redirected_model_list_is_a_wrong_base_url_even_with_a_model_name(serve) -> None:
    srv = await serve([reply(b"", status=308, extra="Location: https://api.example.com/v1/models\r\n")])
    be = backend(srv.port)  # the model name is configured, so a missing model list alone would be fine
    with pytest.raises(PermanentError, match="redirects to https://api.example.com/v1/models"):
        await be.model_identity()
    await be.aclose()
