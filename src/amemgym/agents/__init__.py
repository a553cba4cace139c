"""Memory agents: the contract, the registry, the built-in agents and the conformance checker.

Names are imported on first access, so resolving the native agent does not load the retrieval agents (and
NumPy with them).
"""

from __future__ import annotations

import importlib
from typing import Any

_WHERE = {
    "AweAgent": "awe", "AwiAgent": "awi", "AgentContext": "base", "AgentFactory": "base", "MemoryAgent": "base",
    "BufferedAgent": "buffered", "MessageBuffer": "buffered", "CheckReport": "checker", "CheckResult": "checker",
    "check_agent": "checker", "RagAgent": "rag", "AgentSpec": "registry", "known_agents": "registry",
    "register": "registry", "resolve_agent": "registry", "MemoryRecord": "vector_store",
    "NumpyVectorStore": "vector_store", "VectorStore": "vector_store",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
    globals()[name] = value
    return value
