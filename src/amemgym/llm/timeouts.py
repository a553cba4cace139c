"""Per-endpoint time limits: connecting, waiting for the next bytes of a reply, and a whole attempt.

A hung server must cost a bounded, predictable time. Defaults differ by where the endpoint lives: a server
on this machine or the local network (llama.cpp, vLLM on a workstation) may take minutes on a long prompt
on a CPU, while a hosted API that sends nothing for a minute and a half is stuck.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from urllib.parse import urlsplit

#: (connect, read-idle, total) seconds when the endpoint config leaves them unset.
LOCAL_DEFAULTS = (5.0, 300.0, 600.0)
HOSTED_DEFAULTS = (10.0, 90.0, 180.0)


@dataclass(frozen=True)
class Timeouts:
    """Seconds allowed to connect, between received bytes (read idle), and for a whole attempt."""

    connect: float
    read: float
    total: float


def is_local(url: str) -> bool:
    """Whether ``url`` points at this machine or a private network."""
    host = (urlsplit(url).hostname or "").lower()
    if host in ("localhost", "") or host.endswith((".local", ".localhost", ".internal")):
        return True
    try:
        addr = ipaddress.ip_address(host)
    except ValueError:
        return False
    return addr.is_loopback or addr.is_private or addr.is_link_local


def resolve_timeouts(url: str, connect: float | None, read: float | None, total: float | None) -> Timeouts:
    """The effective limits: configured values win, the rest come from the local or hosted defaults.

    A configured total below a default connect or read limit caps them, so ``timeout_s`` alone still bounds
    an attempt the way it always did.
    """
    d_connect, d_read, d_total = LOCAL_DEFAULTS if is_local(url) else HOSTED_DEFAULTS
    tot = total if total is not None else d_total
    return Timeouts(connect=min(connect if connect is not None else d_connect, tot),
                    read=min(read if read is not None else d_read, tot), total=tot)
