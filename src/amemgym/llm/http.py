"""The HTTP transport of every model call and of the preflight's model list: httpx, one Transport per endpoint.

httpx (the OpenAI SDK's own transport) does the protocol: keep-alive pooling, TLS, proxies (``http://``
and ``https://``; ``socks5://`` with the ``socksio`` package), chunked and compressed bodies. This module
adds what a benchmark harness needs on top, the same for every request (docs/design.md §10):

- three limits: connecting, read idle (no byte for that long) and a total deadline for the whole attempt;
- a reply-size cap counted on the decoded body while it streams, so an endless or decompressing body
  stops at the cap instead of filling memory;
- no redirects followed (a POST cannot be replayed blindly): a 3xx comes back as a status;
- the system's CA store (``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` override it, as OpenSSL defines), also for
  an ``https://`` proxy;
- a connection whose server sent bytes beyond the reply is closed, never reused, so those bytes can never
  be read as the reply to the next request.
"""

from __future__ import annotations

import asyncio
import functools
import importlib.util
import ipaddress
import os
import ssl
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit
from urllib.request import getproxies_environment, proxy_bypass_environment  # type: ignore[attr-defined]

import httpx

from ..urls import public_url
from .redact import register_secret
from .timeouts import Timeouts

_USER_AGENT = "amemgym"


class ReplyTooLarge(Exception):
    """A response body (declared, or counted while decoding) is larger than the cap."""


class SetupError(Exception):
    """The environment asks for something this installation cannot do: a socks proxy without socksio, a
    proxy of an unknown scheme, or a CA file that cannot be loaded."""


@dataclass(frozen=True)
class Response:
    """A complete response: status, headers (names lower-cased, a repeated one's values joined by commas), body."""

    status: int
    headers: dict[str, str]
    body: bytes


def env_proxy(url: str) -> str | None:
    """The proxy that ``HTTP(S)_PROXY`` / ``ALL_PROXY`` / ``NO_PROXY`` choose for ``url``, or None (always None
    for a loopback address).

    Read with the standard library's parser of these variables and handed to httpx explicitly (the client
    itself does not read the environment), so the proxy in use is known and can be named in errors.
    """
    proxies = getproxies_environment()
    parts = urlsplit(url)
    host = parts.hostname or ""
    if not proxies or _loopback(host) or proxy_bypass_environment(host, proxies):
        return None
    return proxies.get(parts.scheme) or proxies.get("all")


def _loopback(host: str) -> bool:
    # A proxy cannot reach this machine's loopback (the embedded server, a local vLLM): never send it there.
    if host.lower() in ("localhost", "localhost.") or host.lower().endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def tls_context() -> ssl.SSLContext:
    """The CA store every connection verifies against: the system's, or ``SSL_CERT_FILE``/``SSL_CERT_DIR``.

    httpx's own default would be certifi's bundle only, which misses a company's (or a test's) CA that is
    installed on the machine or named by those variables.
    """
    return _tls_context(os.environ.get("SSL_CERT_FILE") or None, os.environ.get("SSL_CERT_DIR") or None)


@functools.cache
def _tls_context(cafile: str | None, capath: str | None) -> ssl.SSLContext:
    # Cached: loading a CA store costs tens of milliseconds, and every endpoint of a run shares one.
    ctx = ssl.create_default_context()
    if cafile or capath:
        # Named explicitly as well: not every platform's OpenSSL reads these variables itself.
        try:
            ctx.load_verify_locations(cafile=cafile, capath=capath)
        except (OSError, ssl.SSLError) as exc:
            name = "SSL_CERT_FILE" if cafile else "SSL_CERT_DIR"
            raise SetupError(f"{name}={cafile or capath}: cannot load CA certificates ({exc})") from None
    return ctx


class Transport:
    """The connection pools of one endpoint, and one request at a time through them.

    Args:
        root: the endpoint's scheme, host and port (every request goes there).
        timeouts: the connect and read-idle limits of each request (the total is given per request).
        headers: sent with every request (e.g. Authorization).

    Raises:
        SetupError: the environment's proxy for ``root`` or its CA settings cannot be used here.

    Requests go straight to httpx's transport layer (``httpx.AsyncHTTPTransport``): the client layer above
    it adds cookies, auth flows, event hooks and redirect handling, none of which a model call uses, for
    about a quarter of the CPU per call. They spread over several pools, each opened when the others are
    busy with :data:`SHARD` requests: httpcore's pool re-examines every connection (and polls every idle
    socket) on each request and each reply, a cost that grows with the square of its connections. At 64
    requests in flight one pool spent about 9 ms of CPU per call in that bookkeeping; pools of four bring
    it to about 1 ms (measured with pools of four and eight alike).
    """

    #: Requests in flight on one pool before the next request goes to another pool.
    SHARD = 4

    def __init__(self, root: str, timeouts: Timeouts, headers: dict[str, str]) -> None:
        proxy_url = env_proxy(root)
        self.proxy = public_url(proxy_url) if proxy_url else None
        proxy: httpx.Proxy | None = None
        if proxy_url:
            parts = urlsplit(proxy_url)
            if parts.password:
                # Sent as basic auth to the proxy, which may echo it back like any key.
                password = unquote(parts.password)
                register_secret(password)
                register_secret(f"{unquote(parts.username or '')}:{password}")
            elif parts.username:
                # A user name with no password is a token (``http://TOKEN@proxy``), sent as basic auth all the same.
                register_secret(unquote(parts.username))
            scheme = parts.scheme.lower()
            if scheme.startswith("socks"):
                if importlib.util.find_spec("socksio") is None:
                    raise SetupError(f"the proxy {self.proxy} is a socks proxy, which needs the socksio package: "
                                     "pip install 'httpx[socks]'")
            elif scheme not in ("http", "https"):
                raise SetupError(f"the proxy {self.proxy} has an unsupported scheme {scheme}://")
            # The proxy's own certificate is checked against the same store as the endpoint's.
            proxy = httpx.Proxy(proxy_url, ssl_context=tls_context() if scheme == "https" else None)
        # A plain-HTTP endpoint never makes a TLS connection of its own (redirects are not followed), so the
        # CA store is loaded only for an https:// one; httpx would otherwise build a certifi context anyway.
        verify: ssl.SSLContext | bool = tls_context() if urlsplit(root).scheme.lower() == "https" else False
        self._options: dict[str, Any] = {
            "verify": verify, "proxy": proxy,
            # No pool bound: the client's adaptive limiter is the one limit on concurrent calls.
            "limits": httpx.Limits(max_connections=None, max_keepalive_connections=None, keepalive_expiry=30.0)}
        self._headers = httpx.Headers({"User-Agent": _USER_AGENT, "Accept": "*/*",
                                       "Accept-Encoding": "gzip, deflate", **headers})
        self._timeout = httpx.Timeout(connect=timeouts.connect, read=timeouts.read, write=timeouts.read,
                                      pool=timeouts.connect).as_dict()
        self._pools: list[httpx.AsyncHTTPTransport] = []
        self._busy: list[int] = []
        # Each URL parsed once: httpx parses a string URL on every request (about a third of building one).
        self._urls: dict[str, httpx.URL] = {}

    def timeout(self) -> dict[str, float | None]:
        """The connect, read, write and pool limits each request carries."""
        return dict(self._timeout)

    def _pick(self) -> int:
        """The least busy pool (a new one when every pool has :data:`SHARD` requests in flight)."""
        if not self._pools or min(self._busy) >= self.SHARD:
            self._pools.append(httpx.AsyncHTTPTransport(**self._options))
            self._busy.append(0)
        return self._busy.index(min(self._busy))

    async def fetch(self, method: str, url: str, body: bytes | None, *, max_body: int, total: float) -> Response:
        """Send one request and read its whole reply, within ``total`` seconds and ``max_body`` decoded bytes.

        Raises:
            TimeoutError: the total deadline passed. :class:`ReplyTooLarge`: the body is above ``max_body``.
            httpx.HTTPError: the transport failed (see ``openai_backend.classify`` for what each means).
        """
        opened: list[httpx.Response] = []

        async def trace(event: str, info: dict[str, Any]) -> None:
            # Called by httpcore at each step; this one comes after the body and before the connection is
            # declared idle, the last moment a connection can still be kept out of the pool.
            if event == "http11.response_closed.started" and opened:
                _close_if_overrun(opened[0])

        parsed = self._urls.get(url)
        if parsed is None:
            parsed = self._urls[url] = httpx.URL(url)
        request = httpx.Request(method, parsed, headers=self._headers, content=body,
                                extensions={"timeout": self._timeout, "trace": trace})
        k = self._pick()
        busy = self._busy  # the count goes back to this list even if aclose() replaced it meanwhile
        busy[k] += 1
        try:
            async with asyncio.timeout(total):
                resp = await self._pools[k].handle_async_request(request)
                resp.request = request
                opened.append(resp)
                try:
                    return await _read(resp, max_body)
                finally:
                    await resp.aclose()
        finally:
            busy[k] -= 1

    async def aclose(self) -> None:
        """Close every pool and its connections."""
        pools, self._pools, self._busy = self._pools, [], []
        for pool in pools:
            await pool.aclose()


async def _read(resp: httpx.Response, max_body: int) -> Response:
    declared = resp.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_body:
        raise ReplyTooLarge(f"reply of {declared} bytes exceeds max_reply_bytes={max_body}")
    chunks: list[bytes] = []
    size = 0
    async for chunk in resp.aiter_bytes():  # decoded: a compressed body is counted as it expands
        size += len(chunk)
        if size > max_body:
            raise ReplyTooLarge(f"reply exceeds max_reply_bytes={max_body} bytes")
        chunks.append(chunk)
    return Response(resp.status_code, {k.lower(): v for k, v in resp.headers.items()}, b"".join(chunks))


def _close_if_overrun(resp: httpx.Response) -> None:
    """Keep a connection out of the pool when its server sent bytes past the end of this reply.

    httpcore keeps such bytes buffered and would read them as the reply to the connection's next request
    (an idle connection that turns readable is dropped, but bytes that arrived together with the reply are
    already off the socket). h11 exposes them as ``trailing_data``; marking our side failed makes httpcore
    close the connection instead of reusing it. The h11 state is reached through httpcore's stream objects
    (the route httpcore issue #872 describes); tests/llm/test_http_transport.py pins it.
    """
    state = _h11_state(resp)
    if state is not None and state.trailing_data[0]:
        state.send_failed()


def _h11_state(resp: httpx.Response) -> Any:
    stream: Any = resp.stream
    for _ in range(6):
        conn = getattr(stream, "_connection", None)
        if conn is not None:
            return getattr(conn, "_h11_state", None)  # None for HTTP/2, which frames every stream itself
        stream = getattr(stream, "_stream", None) or getattr(stream, "_httpcore_stream", None)
        if stream is None:
            return None
    return None
