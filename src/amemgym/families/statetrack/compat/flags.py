"""Shared flag parsing and config mapping for the original-style entry points (see docs/compat.md)."""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ....config import PROTOCOL_MAX_TOKENS, PROTOCOL_RUN, AppConfig, load_config
from ....errors import AMemGymError, ConfigError
from ..data.io import load_environment
from ..driver import run_command
from .original_layout import import_original_interactions, is_original_folder, write_original_layout

#: Environment variables that carry a key given inside an original config file to the client, so the key
#: itself never enters amemgym's config, manifest or logs.
AGENT_KEY_ENV = "AMEMGYM_COMPAT_AGENT_API_KEY"
SIMULATOR_KEY_ENV = "AMEMGYM_COMPAT_SIMULATOR_API_KEY"
GENERATOR_KEY_ENV = "AMEMGYM_COMPAT_GENERATOR_API_KEY"


def parser(description: str) -> argparse.ArgumentParser:
    """The original scripts' flags (a superset of all four)."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--env_data", "--data_file", dest="env_data", default="data/v1.base/data.json",
                   help="Environment data file (data.json).")
    p.add_argument("--env_config", default=None,
                   help="Original env config JSON (sizes, rounds per session, the simulated user's model).")
    p.add_argument("--agent_config", default=None, help="Original agent config JSON (type, name, llm_config).")
    p.add_argument("--output_dir", default="eval-output", help="Output folder; the run goes to <dir>/<agent name>.")
    p.add_argument("--off_policy_dir", default="",
                   help="Replay the conversations of this folder (an original output folder of one agent, or "
                        "an amemgym run directory).")
    p.add_argument("--reset", action="store_true", help="Delete existing output first.")
    return p


def _read_json(path: str, what: str) -> dict[str, Any]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read {what}: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: {what} must be a JSON object, got {type(data).__name__}")
    return data


def _endpoint(llm: Any, where: str, key_env: str) -> dict[str, Any]:
    """amemgym endpoint overrides from an original ``llm_config`` block (its key goes to ``key_env``)."""
    if llm is None:
        return {}
    if not isinstance(llm, dict):
        raise ConfigError(f"{where}: expected an object")
    out: dict[str, Any] = {}
    if llm.get("llm_model"):
        out["model"] = str(llm["llm_model"])
    if llm.get("base_url"):
        out["base_url"] = str(llm["base_url"])
    try:
        if llm.get("temperature") is not None:
            out["temperature"] = float(llm["temperature"])
        if llm.get("max_tokens"):
            out["max_tokens"] = int(llm["max_tokens"])
    except (TypeError, ValueError):
        raise ConfigError(f"{where}: temperature and max_tokens must be numbers") from None
    if llm.get("api_key"):
        # The original falls back to OPENAI_API_KEY when the file has no key; so does amemgym's default.
        os.environ[key_env] = str(llm["api_key"])
        out["api_key_env"] = key_env
    return out


@dataclass(frozen=True)
class OriginalAgent:
    """An original agent config, mapped.

    Attributes:
        kind: the amemgym agent name (``native``, ``rag-2-4-30``, ...).
        name: the original ``name`` (the output folder).
        endpoint: agent-role endpoint overrides (model, base URL, temperature, max_tokens, key variable).
        raw: the file's content with any API key blanked (what is written back into results).
    """

    kind: str
    name: str
    endpoint: dict[str, Any] = field(default_factory=dict)
    raw: dict[str, Any] = field(default_factory=dict)

    @property
    def max_tokens(self) -> int:
        """The agent's completion budget (the original protocol's 8192 when the file sets none)."""
        return int(self.endpoint.get("max_tokens") or PROTOCOL_MAX_TOKENS)


#: Field names of an original agent config that hold a credential (``api_key``, ``openai_api_key``, ``token``,
#: ``secret``, ``password``), at any depth: the config is copied into the results.
_KEY_FIELD = re.compile(r"(?i)(api[_-]?key|token|secret|password)$")


def _without_keys(value: Any) -> Any:
    """``value`` (a JSON value) with every credential field of :data:`_KEY_FIELD` set to None."""
    if isinstance(value, dict):
        return {k: None if isinstance(k, str) and _KEY_FIELD.search(k) and v else _without_keys(v)
                for k, v in value.items()}
    if isinstance(value, list):
        return [_without_keys(v) for v in value]
    return value


def agent_from_original(path: str | None) -> OriginalAgent:
    """The amemgym agent and its endpoint from an original agent config (native with defaults when None)."""
    if path is None:
        return OriginalAgent("native", "native", {}, {"type": "native", "name": "native"})
    cfg = _read_json(path, "agent config")
    kind = cfg.get("type")
    knobs = cfg.get("agent_config") or {}
    freq, ns, topk = knobs.get("update_bsz", 2), knobs.get("local_length", 4), knobs.get("top_k", 30)
    names = {"native": "native", "rag": f"rag-{freq}-{ns}-{topk}", "awe": f"awe-{freq}-{ns}-{topk}",
             "awi": f"awi-{freq}-{ns}"}
    if kind not in names:
        raise ConfigError(f"{Path(path).name}: type: unsupported agent type {kind!r} (known: {', '.join(names)})")
    endpoint = _endpoint(cfg.get("llm_config"), f"{Path(path).name}: llm_config", AGENT_KEY_ENV)
    raw = _without_keys(json.loads(json.dumps(cfg)))  # results never carry keys
    return OriginalAgent(names[kind], str(cfg.get("name") or names[kind]), endpoint, raw)


def app_config(args: argparse.Namespace, agent: OriginalAgent) -> AppConfig:
    """Our config for the original protocol: sizes from the env config, every model setting from the files.

    The agent's model, temperature, base URL and max_tokens come from the agent config (its budget serves
    replies and answers alike, as in the original); the simulated user's from ``llm_config_low_temp`` of the
    env config. The native agent sends no system prompt, sees the whole conversation, and invalid answers
    follow the original's rule.
    """
    cfg = load_config(args.env_config) if args.env_config else load_config("v1.base")
    raw = _read_json(args.env_config, "env config") if args.env_config else {}
    name = Path(args.env_config).name if args.env_config else "env config"
    sim = _endpoint(raw.get("llm_config_low_temp"), f"{name}: llm_config_low_temp", SIMULATOR_KEY_ENV)
    gen = _endpoint(raw.get("llm_config_high_temp"), f"{name}: llm_config_high_temp", GENERATOR_KEY_ENV)
    gen.pop("temperature", None)  # amemgym's generation steps set their own temperatures
    roles: dict[Any, dict[str, Any]] = dict(cfg.llm.roles)
    for role, over in (("agent", agent.endpoint), ("simulator", sim), ("generator", gen)):
        if over:
            roles[role] = {**roles.get(role, {}), **over}
    cfg.llm.roles = roles  # type: ignore[assignment]
    cfg.run = cfg.run.model_copy(update={
        **PROTOCOL_RUN, "reply_max_tokens": agent.max_tokens, "eval_max_tokens": agent.max_tokens,
        "simulator_max_tokens": int(sim.get("max_tokens") or PROTOCOL_MAX_TOKENS), "answer_rule": "original",
    })
    try:
        return AppConfig.model_validate(cfg.model_dump())
    except ValidationError as exc:
        err = exc.errors()[0]
        raise ConfigError(f"original configs give {'.'.join(map(str, err['loc']))}: {err['msg']}") from None


def output_dir(args: argparse.Namespace, name: str) -> Path:
    """``<output_dir>/<name>``, emptied first with ``--reset``.

    Raises:
        ConfigError: ``name`` (the agent config's ``name``) is not one plain folder name: ``../x`` or an absolute
            path would put the run, and ``--reset``'s deletion, outside ``--output_dir``.
    """
    if not name or name in (".", "..") or Path(name).name != name or "\\" in name:
        raise ConfigError(f"agent config name {name!r}: must be one folder name inside --output_dir (no path)")
    out = Path(args.output_dir) / name
    if args.reset and out.exists():
        shutil.rmtree(out)
    return out


def main_guard(fn: Callable[[], int]) -> None:
    """Run an entry point, turning amemgym errors into one line and exit code."""
    try:
        code = fn()
    except AMemGymError as exc:
        print(f"error: {exc}", file=sys.stderr)
        code = exc.exit_code
    sys.exit(code)


def run_original(args: argparse.Namespace, console: Any) -> tuple[int, Path]:
    """Run (or resume) one agent as the original's overall script did; returns (exit code, agent folder).

    The amemgym run directory and the original's per-user files both land in ``<output_dir>/<name>``.
    ``--off_policy_dir`` may name an original agent folder (its interactions are imported into
    ``<name>/off_policy_import`` first) or an amemgym run directory.
    """
    agent = agent_from_original(args.agent_config)
    cfg = app_config(args, agent)
    env_path = Path(args.env_data)
    env = load_environment(env_path)
    out = output_dir(args, agent.name)
    off: Path | None = None
    if args.off_policy_dir:
        off = Path(args.off_policy_dir)
        if not off.is_dir():
            raise ConfigError(f"{off}: --off_policy_dir is not a folder")
        if is_original_folder(off):
            off = import_original_interactions(off, env, cfg, out / "off_policy_import")
    code = run_command(cfg, env_path, agent.kind, out, off_policy=off, console=console)
    config_name = Path(args.agent_config).name if args.agent_config else "agent_config.json"
    write_original_layout(env, out, agent.raw, config_name)
    console.print(f"original-layout files: {out}/<user id>/ (overall_results.json, overall_metrics.json, "
                  "diagnosis_metrics.json, interactions/)", highlight=False)
    return code, out
