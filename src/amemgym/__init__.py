"""amemgym: an on-policy gym for the memory of LLM assistants.

The public API is re-exported on first access (PEP 562): every ``amemgym.*`` module imports this package first,
so re-exporting eagerly would import each module of the API, and the optional extras some need, on any import.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    "AppConfig": "amemgym.config",
    "load_config": "amemgym.config",
    "Environment": "amemgym.families.statetrack.data",
    "UserEnv": "amemgym.families.statetrack.data",
    "load_environment": "amemgym.families.statetrack.data",
    "save_environment": "amemgym.families.statetrack.data",
    "LLMClient": "amemgym.llm",
    "MemoryAgent": "amemgym.agents",
    "AgentContext": "amemgym.agents",
    "resolve_agent": "amemgym.agents",
    "register": "amemgym.agents",
    "check_agent": "amemgym.agents",
    "Runner": "amemgym.families.statetrack.runner",
    "generate_procedural": "amemgym.families.statetrack.generate.procedural",
    "MemoryEnv": "amemgym.train",
    "check_env": "amemgym.train",
    "export_run": "amemgym.train",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'amemgym' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
