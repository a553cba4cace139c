"""Registration of the built-in agents (imported lazily by the registry)."""

from __future__ import annotations

from typing import Any

from .base import AgentFactory
from .native import native
from .registry import register


@register(r"native", "native (whole conversation in context)")
def _native(**options: Any) -> AgentFactory:
    if options:
        raise TypeError(f"native takes no options, got {sorted(options)}")
    return native
