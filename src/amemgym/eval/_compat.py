"""Shared flag parsing and mapping for the original-style entry points."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..config import AppConfig, load_config
from ..errors import AMemGymError, ConfigError


def parser(description: str) -> argparse.ArgumentParser:
    """The original scripts' flags (a superset of all four)."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--env_data", "--data_file", dest="env_data", default="data/v1.base/data.json",
                   help="Environment data file (data.json).")
    p.add_argument("--env_config", default=None, help="Original env config JSON (rounds per session etc.).")
    p.add_argument("--agent_config", default=None, help="Original agent config JSON.")
    p.add_argument("--output_dir", default="eval-output", help="Output folder; the run goes to <dir>/<agent name>.")
    p.add_argument("--off_policy_dir", default="", help="Run directory whose conversations are replayed.")
    p.add_argument("--reset", action="store_true", help="Delete existing output first.")
    return p


def agent_from_original(path: str | None) -> tuple[str, str, dict[str, Any]]:
    """(amemgym agent name, display name, agent-role LLM overrides) from an original agent config."""
    if path is None:
        return "native", "native", {}
    try:
        cfg = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read agent config: {exc}") from None
    kind = cfg.get("type")
    knobs = cfg.get("agent_config") or {}
    freq, ns, topk = knobs.get("update_bsz", 2), knobs.get("local_length", 4), knobs.get("top_k", 30)
    names = {"native": "native", "rag": f"rag-{freq}-{ns}-{topk}", "awe": f"awe-{freq}-{ns}-{topk}",
             "awi": f"awi-{freq}-{ns}"}
    if kind not in names:
        raise ConfigError(f"{Path(path).name}: type: unsupported agent type {kind!r} (known: {', '.join(names)})")
    llm = cfg.get("llm_config") or {}
    overrides: dict[str, Any] = {}
    if llm.get("llm_model"):
        overrides["model"] = llm["llm_model"]
    if llm.get("base_url"):
        overrides["base_url"] = llm["base_url"]
    if llm.get("max_tokens"):
        overrides["max_tokens"] = int(llm["max_tokens"])
    return names[kind], str(cfg.get("name") or names[kind]), overrides


def app_config(args: argparse.Namespace, agent_overrides: dict[str, Any]) -> AppConfig:
    """Our config from the original env config, with the agent's model overrides."""
    cfg = load_config(args.env_config) if args.env_config else load_config("v1.base")
    if agent_overrides:
        cfg.llm.roles = {**cfg.llm.roles, "agent": {**cfg.llm.roles.get("agent", {}), **agent_overrides}}
    return cfg


def output_dir(args: argparse.Namespace, name: str) -> Path:
    """``<output_dir>/<name>``, emptied first with ``--reset``."""
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
