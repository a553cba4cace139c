"""Checks on an endpoint's base URL that turn a doomed configuration into one clear config error."""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

from .errors import ConfigError


def base_url_problem(url: str) -> str | None:
    """What is wrong with ``url`` as an OpenAI-compatible API root, or None.

    Only ``http`` and ``https`` can work: any other scheme would fail the same way on every retry. Credentials
    in the URL would be sent as HTTP basic auth next to the key's bearer header, which servers reject in
    ways that look like a broken reply; the key belongs in the key variable or key file.
    """
    try:
        parts = urlsplit(url.strip())
        port = parts.port  # raises on a non-numeric or out-of-range port
    except ValueError as exc:
        return f"malformed base_url ({exc})"
    del port
    if parts.scheme.lower() not in ("http", "https"):
        shown = f"{parts.scheme}://" if parts.scheme else "no scheme"
        return f"base_url must start with http:// or https:// (got {shown})"
    if not parts.hostname:
        return "base_url has no host"
    if parts.username is not None or parts.password is not None:
        return "put credentials in the key variable or key file, not in base_url (user:password@host)"
    return None


def host_port(url: str) -> str:
    """``host[:port]`` of ``url`` without credentials; an IPv6 address keeps its brackets."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    return f"{host}:{parts.port}" if parts.port else host


#: Query parameters whose value is a credential by name (``?code=`` of a function host, ``?key=``, ``?sig=``).
_SECRET_PARAM = re.compile(r"(?i)key|code|token|sig|secret|pass|auth|cred")


def query_secret(name: str) -> bool:
    """Whether a base URL's query parameter ``name`` carries a credential, judged by its name alone: a value
    judged by its look could be a model or version name, which run records must keep as it is."""
    return _SECRET_PARAM.search(name) is not None


def public_url(url: str) -> str:
    """``url`` without credentials, path parameters (``;key=...``), query string or fragment, safe to log,
    record and key the cache with."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, host_port(url), bare_path(parts.path).rstrip("/"), "", ""))


def bare_path(path: str) -> str:
    """A URL path without its segments' parameters (``/v1;key=abc`` -> ``/v1``), where a key may sit."""
    return "/".join(segment.split(";", 1)[0] for segment in path.split("/"))


def path_params(url: str) -> list[tuple[str, str]]:
    """The ``name=value`` parameters of ``url``'s path segments (``/v1;key=abc``), as a server reads them."""
    found = []
    for segment in urlsplit(url).path.split("/"):
        for param in segment.split(";")[1:]:
            name, _, value = param.partition("=")
            found.append((name, value))
    return found


def check_base_url(url: str, source: str = "base_url") -> None:
    """Raise :class:`ConfigError` (exit 2) naming ``source`` when ``url`` cannot work."""
    problem = base_url_problem(url)
    if problem is not None:
        raise ConfigError(f"{source}: {problem}")


#: What to do about a redirect: neither the client nor the preflight follows one (a POST cannot be replayed
#: blindly), so the fix is the address it points at.
REDIRECT_ADVICE = "redirects are not followed, so base_url must name the address that answers"
