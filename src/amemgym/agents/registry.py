"""Agents by name: built-ins (``native``, ``rag-2-4-30``, ...), config files, and ``module:factory`` plug-ins."""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import json
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml
from pydantic import ValidationError

from ..config import ROLES, EndpointConfig, shown_typed, yaml_problem
from ..errors import AMemGymError, ConfigError
from ..llm.client import LLMClient
from .base import AgentContext, AgentFactory, MemoryAgent
from .guard import call_factory
from .plugin import GuardedAgent

#: name pattern -> builder(match groups, options) -> factory, help line, roles. Filled by :func:`register`.
_BUILDERS: list[tuple[re.Pattern[str], Callable[..., AgentFactory], str, tuple[str, ...] | None]] = []


def register(
    pattern: str, help_text: str, *, roles: tuple[str, ...] | None = None
) -> Callable[[Callable[..., AgentFactory]], Callable[..., AgentFactory]]:
    """Register a builder for agent names matching ``pattern`` (a regex with named groups).

    Args:
        pattern: the name regex.
        help_text: one line for the list of known agents.
        roles: the LLM roles the agent calls (``agent``, ``memory``, ``embedder``), checked before a run
            starts; None means unknown (all are checked).
    """

    def deco(builder: Callable[..., AgentFactory]) -> Callable[..., AgentFactory]:
        _BUILDERS.append((re.compile(pattern + r"\Z"), builder, help_text, roles))
        return builder

    return deco


@dataclass(frozen=True)
class AgentSpec:
    """A resolved agent: its display name, factory, options and any per-agent LLM overrides."""

    name: str
    factory: AgentFactory
    options: dict[str, Any] = field(default_factory=dict)
    llm_overrides: dict[str, Any] = field(default_factory=dict)
    #: LLM roles the agent calls; None when unknown (a plug-in without a ``roles`` attribute).
    roles: tuple[str, ...] | None = None
    #: A ``module:factory`` plug-in: built with a context that holds nothing a player could not know, and
    #: called through the guard (``agents/plugin.py``).
    plugin: bool = False

    def build(self, llm: LLMClient, ctx: AgentContext) -> MemoryAgent:
        """A fresh agent for one user.

        A plug-in is told no state schema (only oracle ablations, which are built-ins, may read it) and is
        returned behind :class:`~amemgym.agents.plugin.GuardedAgent`.

        Raises:
            ConfigError: the factory (a plug-in's, typically) raised, or returned something that is not an agent.
            AgentError: a plug-in's factory ran past ``run.agent_factory_timeout``.
        """
        if self.plugin:
            ctx = replace(ctx, state_schema={})
        try:
            agent = call_factory(self.name, "its factory", self.factory, llm, ctx) if self.plugin \
                else self.factory(llm, ctx)
        except AMemGymError:
            raise
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: BLE001 - a plug-in's own bug (any kind): one line naming it
            raise plugin_failure(self.name, "its factory", exc) from None
        if not isinstance(agent, MemoryAgent):
            raise ConfigError(f"agent {self.name!r}: its factory returned {type(agent).__name__}, not a memory agent "
                              "(needs reply, ingest, answer, snapshot, restore, memory_view and stats)")
        if self.plugin:
            return GuardedAgent(agent, self.name)  # type: ignore[return-value]
        return agent


def _load_builtins() -> None:
    # Importing the module registers the built-ins exactly once, even if a plug-in registered first.
    from . import builtins  # noqa: F401


def known_agents() -> list[str]:
    """Help lines for the registered name patterns."""
    _load_builtins()
    return [h for _, _, h, _ in _BUILDERS]


def _add_to_path(directory: str) -> None:
    # Appended, not prepended: a local file never shadows an installed module of the same name.
    if directory not in sys.path:
        sys.path.append(directory)


def _import_plugin_module(name: str, module_name: str) -> Any:
    """The module of a plug-in: a dotted module (also found in the current directory) or a ``.py`` file."""
    if module_name.endswith(".py") or "/" in module_name or "\\" in module_name:
        path = Path(module_name).expanduser().resolve()
        if not path.is_file():
            raise ConfigError(f"agent {name!r}: no such file {module_name}")
        # A stable, unique name: the same file imported twice is the same module (pickling, dataclasses).
        mod_name = _FILE_MODULE_PREFIX + re.sub(r"\W", "_", str(path.with_suffix("")))
        if mod_name in sys.modules:
            return sys.modules[mod_name]
        _add_to_path(str(path.parent))  # its sibling modules import as they would next to a script
        spec = importlib.util.spec_from_file_location(mod_name, path)
        if spec is None or spec.loader is None:
            raise ConfigError(f"agent {name!r}: {module_name} is not a Python file")
        module = importlib.util.module_from_spec(spec)
        sys.modules[mod_name] = module
        try:
            call_factory(name, f"importing {module_name}", spec.loader.exec_module, module)
        except AMemGymError:
            del sys.modules[mod_name]
            raise
        except BaseException as exc:  # noqa: BLE001 - the file's own code, whatever it raised
            del sys.modules[mod_name]
            if isinstance(exc, KeyboardInterrupt):
                raise
            raise _import_failure(name, module_name, exc) from None
        return module
    try:
        try:
            return call_factory(name, f"importing {module_name}", importlib.import_module, module_name)
        except ModuleNotFoundError as exc:
            # Like running a script: a module next to where the command runs is found without PYTHONPATH=.
            if exc.name != module_name.split(".")[0] or not module_name:
                raise
            _add_to_path(str(Path.cwd()))
            importlib.invalidate_caches()
            return call_factory(name, f"importing {module_name}", importlib.import_module, module_name)
    except (ImportError, ValueError, TypeError) as exc:  # empty or relative module names raise the latter two
        raise ConfigError(f"agent {name!r}: cannot import module {module_name!r}: {exc}") from None
    except (KeyboardInterrupt, AMemGymError):
        raise
    except BaseException as exc:  # noqa: BLE001 - the plug-in's own module-level code failed
        raise _import_failure(name, module_name, exc) from None


#: Prefix of the module name a plug-in file is imported under (see :func:`_import_plugin_module`).
_FILE_MODULE_PREFIX = "amemgym_plugin_"


def loaded_plugin_modules() -> list[ModuleType]:
    """The modules of the ``.py`` plug-in files this process has imported, by name."""
    return [m for n, m in sorted(list(sys.modules.items())) if n.startswith(_FILE_MODULE_PREFIX)
            and getattr(m, "__file__", None)]


def loaded_plugin_files() -> list[str]:
    """The ``.py`` plug-in files this process has imported. A worker process must import them too before it
    reads its work: the agent's factory is pickled by its module's name, which only an import of the file makes."""
    return sorted(str(m.__file__) for m in loaded_plugin_modules())


def load_plugin_files(paths: list[str]) -> None:
    """Import plug-in files (:func:`loaded_plugin_files` of the driver) under the names the driver used."""
    for path in paths:
        _import_plugin_module(Path(path).stem, path)


def _import_failure(name: str, module_name: str, exc: BaseException) -> ConfigError:
    """One line for a plug-in whose module failed to import (its own bug, a syntax error, or an exit)."""
    if isinstance(exc, SyntaxError):
        return ConfigError(f"agent {name!r}: {module_name} has a syntax error: {exc}")
    return plugin_failure(name, f"importing {module_name}", exc)


def plugin_failure(name: str, step: str, exc: BaseException) -> ConfigError:
    """One line for a plug-in step (``step``: what amemgym was doing) that raised or called ``sys.exit``."""
    if isinstance(exc, SystemExit):
        # A plug-in must not end the process: that would look like a run that ended with no output.
        return ConfigError(f"agent {name!r}: {step} called sys.exit({exc.code!r})")
    return ConfigError(f"agent {name!r}: {step} raised {type(exc).__name__}: {exc}")


_Maker = Callable[[dict[str, Any]], AgentFactory]


def _build(builder: Callable[..., AgentFactory], groups: dict[str, Any], options: dict[str, Any]) -> AgentFactory:
    return builder(**groups, **options)


def unknown_agent(name: str, also: Sequence[str] = ()) -> ConfigError:
    """The refusal of an agent name nobody registered: the known names, and the closest one (difflib).

    ``also`` are names the caller's environment family runs besides the registered agents (the budget
    family's tool agents), listed first.
    """
    _load_builtins()
    # The bare name of each pattern's help line ("rag[-FREQ-NS-TOPK] (...)" -> "rag").
    builtin = [h.split()[0].split("[")[0] for _, _, h, _ in _BUILDERS]
    close = difflib.get_close_matches(name, list(dict.fromkeys([*also, *builtin])), n=1, cutoff=0.6)
    hint = f"did you mean {close[0]!r}? " if close else ""
    known = "; ".join([*(a for a in also if a not in builtin), *known_agents()])
    return ConfigError(f"unknown agent {shown_typed(name)}; {hint}known: {known}; or module:factory, "
                       "path/file.py:factory, or a file")


def _lookup(name: str, also: Sequence[str] = ()) -> tuple[_Maker, tuple[str, ...] | None, bool]:
    """What ``name`` refers to, as a function of the options, the roles it calls, and whether it is a plug-in.

    Raises:
        ConfigError: for a bad name only (options are checked when the function is called).
    """
    _load_builtins()
    for pattern, builder, _, roles in _BUILDERS:
        m = pattern.match(name)
        if m:
            groups = {k: v for k, v in m.groupdict().items() if v is not None}
            return partial(_build, builder, groups), roles, False
    if ":" in name:
        # rpartition: a Windows path keeps its drive colon.
        module_name, _, attr = name.rpartition(":")
        module = _import_plugin_module(name, module_name)
        try:  # a module-level __getattr__, or a property on the factory, is the plug-in's own code
            factory = getattr(module, attr, None)
            declared = getattr(factory, "roles", None)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: BLE001 - the plug-in's own code
            raise plugin_failure(name, f"looking up {attr!r} in {module_name}", exc) from None
        if factory is None or not callable(factory):
            raise ConfigError(f"agent {name!r}: module {module_name!r} has no callable {attr!r}")
        roles = tuple(str(r) for r in declared) if isinstance(declared, tuple | list) else None
        unknown = sorted(set(roles or ()) - set(ROLES))
        if unknown:
            raise ConfigError(f"agent {name!r}: roles names unknown role {unknown[0]!r}; known: {', '.join(ROLES)}")
        def plugin(options: dict[str, Any]) -> AgentFactory:
            if options:  # a plug-in's factory takes (llm, ctx) only: options would be recorded, never used
                raise ConfigError(f"agent {name!r}: options {sorted(options)} given, but a module:factory plug-in "
                                  "takes none; read your settings in your own module")
            return factory  # type: ignore[no-any-return]

        return plugin, roles, True
    raise unknown_agent(name, also)


def may_be_plugin(spec: str) -> bool:
    """Whether ``spec`` may name a plug-in: a ``module:factory`` name, or an agent config file (whose ``type`` may
    be one). Built-in names have no colon."""
    return ":" in spec or Path(spec).suffix.lower() in (".json", ".yaml", ".yml")


def _first_problem(exc: Exception) -> str:
    if not isinstance(exc, ValidationError):
        return str(exc)  # a non-string key in the mapping
    first = exc.errors()[0]
    msg = "unknown field" if first["type"] == "extra_forbidden" else first["msg"]
    return f"{'.'.join(str(p) for p in first['loc'])}: {msg}"


def resolve_agent(spec: str, *, also: Sequence[str] = ()) -> AgentSpec:
    """Resolve an agent name, a ``module:factory`` plug-in, or a JSON/YAML agent config file.

    An agent config file has ``type`` (a name as on the command line), optional ``name``, ``options``
    (the agent's knobs) and ``llm`` (endpoint overrides for the agent role, e.g. its model). ``also`` are
    the names a family runs besides these, offered when ``spec`` is unknown (:func:`unknown_agent`).

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
            make, roles, plugin = _lookup(data["type"], also)
        except ConfigError as exc:
            raise ConfigError(f"{path.name}: type: {exc}") from None
        try:
            factory = make(options)
        except (TypeError, ConfigError) as exc:
            raise ConfigError(f"{path.name}: options: {exc}") from None
        return AgentSpec(str(data.get("name") or data["type"]), factory, options, llm, roles, plugin)
    make, roles, plugin = _lookup(spec, also)
    try:
        return AgentSpec(spec, make({}), roles=roles, plugin=plugin)
    except TypeError as exc:
        raise ConfigError(f"agent {spec!r}: {exc}") from None
