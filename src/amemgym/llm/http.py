"""HTTP/1.1 client for the OpenAI-compatible backend: h11 parses and frames, asyncio streams carry bytes.

One :class:`HTTPPool` per endpoint keeps idle keep-alive connections for reuse; it has no concurrency
limit of its own (the ``LLMClient``'s adaptive limiter is the one bound). Each request runs under the
endpoint's three limits: connecting (TCP, the proxy's CONNECT and TLS), read idle (between any two reads
or writes) and total (the whole attempt). Bodies larger than the configured maximum are refused while
reading, without buffering the rest. Redirects are not followed: a POST cannot be replayed blindly, so a
3xx reaches the caller as a status like any other. Why this and not a general-purpose client: see
docs/design.md §10 (start-up time).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import ssl
import zlib
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

import h11

from .timeouts import Timeouts

_READ_CHUNK = 1 << 16
_USER_AGENT = "amemgym"


class ProtocolError(Exception):
    """The server's bytes are not a valid HTTP/1.1 response (or a body ended before its declared length)."""


class ReplyTooLarge(Exception):
    """A response body (declared or received) is larger than the pool's ``max_body``."""


class ProxyError(ConnectionError):
    """The proxy refused to open a tunnel to the endpoint."""


@dataclass(frozen=True)
class Response:
    """A complete response: status, headers (names lower-cased, the last value of a repeated one) and body."""

    status: int
    headers: dict[str, str]
    body: bytes


@dataclass(frozen=True)
class _Origin:
    scheme: str
    host: str
    port: int

    @classmethod
    def of(cls, url: str) -> _Origin:
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        return cls(scheme, parts.hostname or "", parts.port or (443 if scheme == "https" else 80))

    @property
    def host_port(self) -> str:
        """``host:port`` with the port always given (an IPv6 address in brackets), as CONNECT names it."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    @property
    def authority(self) -> str:
        """The Host header: ``host_port`` without a default port."""
        default = 443 if self.scheme == "https" else 80
        return self.host_port.rpartition(":")[0] if self.port == default else self.host_port


class _Connection:
    """One TCP (or TLS) connection and the h11 state machine that frames it."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.h11 = h11.Connection(h11.CLIENT)

    def usable(self) -> bool:
        """Whether an idle connection can carry another request (the server has not closed it meanwhile)."""
        return (self.h11.our_state is h11.IDLE and not self.reader.at_eof()
                and not self.writer.is_closing())

    def abort(self) -> None:
        """Drop the connection at once, unread bytes and all."""
        with contextlib.suppress(Exception):
            self.writer.transport.abort()


class HTTPPool:
    """Keep-alive connections to one origin, and requests over them.

    Args:
        root: the URL whose scheme, host and port every request goes to (its path is not used here).
        timeouts: connect, read-idle and total seconds per request.
        headers: sent with every request (e.g. Authorization); Host, Content-Length, User-Agent and
            Accept-Encoding are added.
        proxy: an ``http://[user:password@]host:port`` proxy, or None for a direct connection.
        max_body: the largest response body accepted, in bytes.
    """

    def __init__(self, root: str, *, timeouts: Timeouts, headers: dict[str, str], proxy: str | None = None,
                 max_body: int) -> None:
        self.origin = _Origin.of(root)
        self.timeouts = timeouts
        self.max_body = max_body
        self._headers = [(k, v) for k, v in headers.items()
                         if k.lower() not in ("host", "content-length", "accept-encoding", "connection")]
        if not any(k.lower() == "user-agent" for k, _ in self._headers):
            self._headers.append(("User-Agent", _USER_AGENT))
        self._proxy = _Origin.of(proxy) if proxy else None
        self._proxy_auth: str | None = None
        if proxy:
            parts = urlsplit(proxy)
            if self._proxy is not None and self._proxy.scheme != "http":
                raise ValueError(f"only http:// proxies are supported (got {self._proxy.scheme}://)")
            if parts.username is not None:
                raw = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
                self._proxy_auth = "Basic " + base64.b64encode(raw).decode("ascii")
        self._idle: list[_Connection] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ssl: ssl.SSLContext | None = None

    async def request(self, method: str, target: str, body: bytes | None = None) -> Response:
        """Send one request (``target``: path and query) and return the whole response.

        Raises:
            TimeoutError: a limit ran out. ``ConnectionError``/``OSError``: the connection failed or
            closed before any reply. :class:`ProtocolError`: a malformed or cut-short reply.
            :class:`ReplyTooLarge`: a body above ``max_body``.
        """
        async with asyncio.timeout(self.timeouts.total):
            conn = await self._acquire()
            try:
                response = await self._exchange(conn, method, target, body)
            except BaseException:
                conn.abort()
                raise
            if conn.h11.our_state is h11.DONE and conn.h11.their_state is h11.DONE:
                conn.h11.start_next_cycle()
                self._idle.append(conn)
            else:
                conn.abort()  # the server asked to close, or framing left the connection unusable
            return response

    async def aclose(self) -> None:
        """Close every idle connection."""
        idle, self._idle = self._idle, []
        for conn in idle:
            conn.writer.close()
        for conn in idle:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(conn.writer.wait_closed(), 1.0)

    async def _acquire(self) -> _Connection:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            # Connections belong to the loop that opened them; a pool reused under a new loop starts afresh.
            for conn in self._idle:
                conn.abort()
            self._idle = []
            self._loop = loop
        while self._idle:
            conn = self._idle.pop()
            if conn.usable():
                return conn
            conn.abort()
        return await asyncio.wait_for(self._connect(), self.timeouts.connect)

    def _tls(self) -> ssl.SSLContext:
        # Built on first use only: loading the system's CA certificates costs ~50 ms, and a plain-HTTP
        # endpoint never needs them.
        if self._ssl is None:
            self._ssl = ssl.create_default_context()
        return self._ssl

    async def _connect(self) -> _Connection:
        origin = self.origin
        tls = self._tls() if origin.scheme == "https" else None
        if self._proxy is None:
            reader, writer = await asyncio.open_connection(
                origin.host, origin.port, ssl=tls, server_hostname=origin.host if tls else None)
            return _Connection(reader, writer)
        reader, writer = await asyncio.open_connection(self._proxy.host, self._proxy.port)
        conn = _Connection(reader, writer)
        if tls is None:
            return conn  # plain HTTP goes to the proxy with absolute targets (see _target)
        try:
            await self._tunnel(conn)
            await writer.start_tls(tls, server_hostname=origin.host)
        except BaseException:
            conn.abort()
            raise
        return _Connection(reader, writer)

    async def _tunnel(self, conn: _Connection) -> None:
        """Ask the proxy for a CONNECT tunnel to the origin."""
        headers = [("Host", self.origin.authority)]
        if self._proxy_auth:
            headers.append(("Proxy-Authorization", self._proxy_auth))
        request = h11.Request(method="CONNECT", target=self.origin.host_port, headers=headers)
        conn.writer.write(conn.h11.send(request) or b"")
        await conn.writer.drain()
        try:
            while True:
                event = conn.h11.next_event()
                if event is h11.NEED_DATA:
                    conn.h11.receive_data(await conn.reader.read(_READ_CHUNK))
                elif isinstance(event, h11.Response):
                    if not 200 <= event.status_code < 300:
                        raise ProxyError(f"the proxy refused the tunnel (HTTP {event.status_code})")
                elif event is h11.PAUSED:
                    return
                elif not isinstance(event, h11.InformationalResponse):
                    raise ProxyError(f"the proxy answered CONNECT with {type(event).__name__}")
        except h11.RemoteProtocolError as exc:
            raise ProxyError(f"the proxy's answer to CONNECT is not valid HTTP: {exc}") from exc

    def _target(self, target: str) -> str:
        # Through a proxy, a plain-HTTP request names the whole URL; over a tunnel (TLS) it stays a path.
        if self._proxy is not None and self.origin.scheme == "http":
            return f"http://{self.origin.authority}{target}"
        return target

    async def _exchange(self, conn: _Connection, method: str, target: str, body: bytes | None) -> Response:
        payload = body or b""
        headers = [("Host", self.origin.authority), *self._headers, ("Accept-Encoding", "gzip, deflate"),
                   ("Content-Length", str(len(payload)))]
        if self._proxy_auth and self._proxy is not None and self.origin.scheme == "http":
            headers.append(("Proxy-Authorization", self._proxy_auth))
        h = conn.h11
        out = [h.send(h11.Request(method=method, target=self._target(target), headers=headers)) or b""]
        if payload:
            out.append(h.send(h11.Data(data=payload)) or b"")
        out.append(h.send(h11.EndOfMessage()) or b"")
        conn.writer.write(b"".join(out))
        read_limit = self.timeouts.read
        await asyncio.wait_for(conn.writer.drain(), read_limit)
        status = 0
        resp_headers: dict[str, str] = {}
        chunks: list[bytes] = []
        size = 0
        received = False
        try:
            while True:
                event = h.next_event()
                if event is h11.NEED_DATA:
                    data = await asyncio.wait_for(conn.reader.read(_READ_CHUNK), read_limit)
                    if not data and not received:
                        raise ConnectionError("the server closed the connection without replying")
                    received = True
                    h.receive_data(data)
                elif isinstance(event, h11.InformationalResponse):
                    continue
                elif isinstance(event, h11.Response):
                    status = event.status_code
                    resp_headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in event.headers}
                    declared = resp_headers.get("content-length")
                    if declared is not None and declared.isdigit() and int(declared) > self.max_body:
                        raise ReplyTooLarge(f"reply of {declared} bytes exceeds max_reply_bytes={self.max_body}")
                elif isinstance(event, h11.Data):
                    size += len(event.data)
                    if size > self.max_body:
                        raise ReplyTooLarge(f"reply exceeds max_reply_bytes={self.max_body} bytes")
                    chunks.append(bytes(event.data))
                elif isinstance(event, h11.EndOfMessage):
                    break
                else:
                    raise ProtocolError(f"unexpected {type(event).__name__} before the end of the reply")
        except h11.RemoteProtocolError as exc:
            raise ProtocolError(f"malformed HTTP reply: {exc}") from exc
        raw = b"".join(chunks)
        encoding = resp_headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            raw = _decode(raw, encoding, self.max_body)
        return Response(status, resp_headers, raw)


def _decode(raw: bytes, encoding: str, limit: int) -> bytes:
    """Undo a gzip or deflate content encoding, refusing output above ``limit`` bytes."""
    if encoding == "gzip":
        decoder: Any = zlib.decompressobj(16 + zlib.MAX_WBITS)
    elif encoding == "deflate":
        decoder = zlib.decompressobj()
    else:
        raise ProtocolError(f"unsupported content encoding {encoding!r}")
    try:
        out = decoder.decompress(raw, limit + 1)
    except zlib.error as exc:
        raise ProtocolError(f"reply body is not valid {encoding}: {exc}") from exc
    if len(out) > limit or decoder.unconsumed_tail:
        raise ReplyTooLarge(f"decoded reply exceeds max_reply_bytes={limit} bytes")
    return out
