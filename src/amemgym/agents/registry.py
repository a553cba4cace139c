"""Agents by name: built-ins (``native``, ``rag-2-4-30``, ...), config files, and ``module:factory`` plug-ins."""

from __future__ import annotations

import importlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from ..config import EndpointConfig, yaml_problem
from ..errors import AMemGymError, ConfigError
from ..llm.client import LLMClient
from .base import AgentContext, AgentFactory, MemoryAgent

#: name pattern -> builder(match groups, options) -> factory. Filled by :func:`register`.
_BUILDERS: list[tuple[re.Pattern[str], Callable[..., AgentFactory], str]] = []


def register(pattern: str, help_text: str) -> Callable[[Callable[..., AgentFactory]], Callable[..., AgentFactory]]:
    """Register a builder for agent names matching ``pattern`` (a regex with named groups)."""

    def deco(builder: Callable[..., AgentFactory]) -> Callable[..., AgentFactory]:
        _BUILDERS.append((re.compile(pattern + r"\Z"), builder, help_text))
        return builder

    return deco


@dataclass(frozen=True)
class AgentSpec:
    """A resolved agent: its display name, factory, options and any per-agent LLM overrides."""

    name: str
    factory: AgentFactory
    options: dict[str, Any] = field(default_factory=dict)
    llm_overrides: dict[str, Any] = field(default_factory=dict)

    def build(self, llm: LLMClient, ctx: AgentContext) -> MemoryAgent:
        """A fresh agent for one user.

        Raises:
            ConfigError: the factory (a plug-in's, typically) raised, or returned something that is not an agent.
        """
        try:
            agent = self.factory(llm, ctx)
        except AMemGymError:
            raise
        except Exception as exc:  # a plug-in's own bug: one line naming it, not a traceback
            raise ConfigError(f"agent {self.name!r}: its factory raised {type(exc).__name__}: {exc}") from None
        if not isinstance(agent, MemoryAgent):
            raise ConfigError(f"agent {self.name!r}: its factory returned {type(agent).__name__}, not a memory agent "
                              "(needs reply, ingest, answer, snapshot, restore, memory_view and stats)")
        return agent


def _load_builtins() -> None:
    # Importing the module registers the built-ins exactly once, even if a plug-in registered first.
    from . import builtins  # noqa: F401


def known_agents() -> list[str]:
    """Help lines for the registered name patterns."""
    _load_builtins()
    return [h for _, _, h in _BUILDERS]


def _lookup(name: str) -> Callable[[dict[str, Any]], AgentFactory]:
    """What ``name`` refers to, as a function of the options (raises ConfigError for a bad name only)."""
    _load_builtins()
    for pattern, builder, _ in _BUILDERS:
        m = pattern.match(name)
        if m:
            groups = {k: v for k, v in m.groupdict().items() if v is not None}
            return lambda options: builder(**groups, **options)
    if ":" in name:
        module_name, _, attr = name.partition(":")
        try:
            module = importlib.import_module(module_name)
        except (ImportError, ValueError, TypeError) as exc:  # empty or relative module names raise the latter two
            raise ConfigError(f"agent {name!r}: cannot import module {module_name!r}: {exc}") from None
        except SyntaxError as exc:
            raise ConfigError(f"agent {name!r}: module {module_name!r} has a syntax error: {exc}") from None
        except SystemExit as exc:
            # A plug-in must not end the process (that would look like a successful run with no output).
            raise ConfigError(f"agent {name!r}: importing module {module_name!r} called "
                              f"sys.exit({exc.code!r})") from None
        except Exception as exc:  # the plug-in's own code failed at import
            raise ConfigError(f"agent {name!r}: importing module {module_name!r} raised "
                              f"{type(exc).__name__}: {exc}") from None
        factory = getattr(module, attr, None)
        if factory is None or not callable(factory):
            raise ConfigError(f"agent {name!r}: module {module_name!r} has no callable {attr!r}")
        return lambda options: factory  # type: ignore[no-any-return]
    raise ConfigError(f"unknown agent {name!r}; known: {'; '.join(known_agents())}; or module:factory, or a file")


def _from_name(name: str, options: dict[str, Any]) -> AgentFactory:
    return _lookup(name)(options)


def _first_problem(exc: Exception) -> str:
    if not isinstance(exc, ValidationError):
        return str(exc)  # a non-string key in the mapping
    first = exc.errors()[0]
    msg = "unknown field" if first["type"] == "extra_forbidden" else first["msg"]
    return f"{'.'.join(str(p) for p in first['loc'])}: {msg}"


def resolve_agent(spec: str) -> AgentSpec:
    """Resolve an agent name, a ``module:factory`` plug-in, or a JSON/YAML agent config file.

    An agent config file has ``type`` (a name as on the command line), optional ``name``, ``options``
    (the agent's knobs) and ``llm`` (endpoint overrides for the agent role, e.g. its model).

    Raises:
        ConfigError: for unknown names, bad files or bad options.
    """
    path = Path(spec)
    if path.suffix.lower() in (".json", ".yaml", ".yml"):
        if not path.exists():
            raise ConfigError(f"{spec}: agent config file not found")
        try:
            text = path.read_text(encoding="utf-8")
            data = json.loads(text) if path.suffix.lower() == ".json" else yaml.safe_load(text)
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ConfigError(f"{path.name}: cannot parse agent config: {exc}") from None
        except yaml.YAMLError as exc:
            raise ConfigError(f"{path.name}: cannot parse agent config: not valid YAML{yaml_problem(exc)}") from None
        if not isinstance(data, dict) or not isinstance(data.get("type"), str):
            raise ConfigError(f"{path.name}: type: required field is missing (an agent name such as 'awe-2-4-30')")
        unknown = set(data) - {"type", "name", "options", "llm"}
        if unknown:
            raise ConfigError(f"{path.name}: {sorted(unknown)[0]}: unknown field")
        options = data.get("options") or {}
        llm = data.get("llm") or {}
        for key, value in (("options", options), ("llm", llm)):
            if not isinstance(value, dict):
                raise ConfigError(f"{path.name}: {key}: expected a mapping, got {type(value).__name__}")
        if not isinstance(data.get("name"), str | None):
            raise ConfigError(f"{path.name}: name: expected a string, got {type(data['name']).__name__}")
        try:
            EndpointConfig(**llm)
        except (TypeError, ValidationError) as exc:
            raise ConfigError(f"{path.name}: llm: {_first_problem(exc)}") from None
        try:
            make = _lookup(data["type"])
        except ConfigError as exc:
            raise ConfigError(f"{path.name}: type: {exc}") from None
        try:
            factory = make(options)
        except (TypeError, ConfigError) as exc:
            raise ConfigError(f"{path.name}: options: {exc}") from None
        return AgentSpec(str(data.get("name") or data["type"]), factory, options, llm)
    try:
        return AgentSpec(spec, _from_name(spec, {}))
    except TypeError as exc:
        raise ConfigError(f"agent {spec!r}: {exc}") from None
