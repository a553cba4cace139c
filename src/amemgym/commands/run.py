"""``amemgym run``: an agent on an environment, on-policy, evaluated every period (any environment family)."""

from __future__ import annotations

import inspect
import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from ..cli_common import (
    AllowModelChangeOpt,
    ConfigOpt,
    JudgeModelOpt,
    LimitOpt,
    MaxConnectionsOpt,
    ModelOpt,
    NoCacheOpt,
    SetOpt,
    UserModelOpt,
    handled,
    one_line,
    out,
)
from ..errors import AMemGymError
from ..families import OptionValue, RunRequest, family_for_env, family_options
from ..redact import redact


def run(
    out_dir: Annotated[Path, typer.Option("--out", "-o", help="Run directory (created; re-running resumes).")],
    env: Annotated[Path | None, typer.Option("--env", help="Environment file (default: the bundled tiny one).")] = None,
    agent: Annotated[str, typer.Option("--agent", "-a", help="Agent name, module:factory, or agent config file.")]
    = "native",
    config: ConfigOpt = None,
    set_: SetOpt = None,
    off_policy: Annotated[Path | None, typer.Option("--off-policy", help="Replay this run's conversations.")] = None,
    serial: Annotated[bool, typer.Option("--serial", help="One call at a time (debugging).")] = False,
    trials: Annotated[int, typer.Option("--trials", min=1, help="Independent trials (seeds run.seed+k) under "
                                        "OUT/trial_k, with the spread between them.")] = 1,
    executor: Annotated[str, typer.Option("--executor", help="Where episodes run: local (default) or ray.")]
    = "local",
    ray_address: Annotated[str | None, typer.Option("--ray-address", help="Ray cluster to join (auto, HOST:6379); "
                                                    "default: start a local one.")] = None,
    models: Annotated[Path | None, typer.Option("--models", help="YAML map of role -> endpoint settings.")] = None,
    resimulate_leaks: Annotated[bool, typer.Option("--resimulate-leaks", help="Redraw a simulator turn that names "
                                                   "a state value its session did not expose (bounded).")] = False,
    no_cache: NoCacheOpt = False,
    allow_model_change: AllowModelChangeOpt = False,
    model: ModelOpt = None,
    user_model: UserModelOpt = None,
    judge_model: JudgeModelOpt = None,
    max_connections: MaxConnectionsOpt = None,
    limit: LimitOpt = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Estimate calls and tokens per role from the "
                                          "environment and the agent, then stop: no model call, nothing "
                                          "written.")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print a machine-readable summary (JSON) on stdout; "
                                           "everything else goes to stderr.")] = False,
) -> None:
    """Run an agent on an environment (on-policy), evaluate every period, and write metrics."""
    try:
        family = family_for_env(env)
        defaults = {name: p.default for name, p in inspect.signature(run).parameters.items()}
        own = {name: OptionValue(flag, value, value != defaults[param]) for name, flag, param, value in (
            ("off_policy", "--off-policy", "off_policy", off_policy),
            ("resimulate_leaks", "--resimulate-leaks", "resimulate_leaks", resimulate_leaks),
            ("dry_run", "--dry-run", "dry_run", dry_run),
            ("json", "--json", "json_out", json_out))}
        request = RunRequest(out_dir=out_dir, options=family_options(family, "run", own), env=env, agent=agent,
                             config=config, sets=set_, serial=serial, trials=trials, executor=executor,
                             ray_address=ray_address, models=models, no_cache=no_cache,
                             allow_model_change=allow_model_change, model=model, user_model=user_model,
                             judge_model=judge_model, max_connections=max_connections, limit=limit)
        code = family.run(request, out)
    except AMemGymError as exc:
        if json_out:
            # A caller reading stdout gets a JSON object on every exit; the same line still goes to stderr.
            sys.stdout.write(json.dumps({"error": one_line(redact(str(exc))), "exit_code": exc.exit_code}) + "\n")
            sys.stdout.flush()
        raise
    raise typer.Exit(code)


def register(app: typer.Typer) -> None:
    """Add the ``run`` command."""
    app.command("run")(handled(run))
