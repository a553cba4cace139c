"""``amemgym evolve``: the self-evolution experiment (docs/design.md §7), reported per cycle."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from ..agents.registry import resolve_agent
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
    out,
)
from ..console import styled
from ..engine.flags import ModelFlags
from ..engine.lock import run_lock
from ..errors import ConfigError
from ..evolve import LLMEvolver, LLMRecallJudge, PolicyLimits, evolve_loop, feedback_builder
from ..families.statetrack.command import settings_for
from ..families.statetrack.cut import first_users
from ..families.statetrack.data.io import load_environment
from ..families.statetrack.driver import default_environment, write_run_report
from ..families.statetrack.metrics import FAILURE_GROUP
from ..families.statetrack.progress import RunProgress
from ..families.statetrack.summary import print_summary
from ..llm.client import LLMClient
from ..llm.preflight import preflight, run_roles
from ..runfiles import METRICS
from ..scoring.registry import registered

if TYPE_CHECKING:
    from rich.console import Console

    from ..families.statetrack.data.model import Environment

_ROLES = ("agent", "memory", "judge", "generator", "simulator")


def _num(stat: Any) -> str:
    value = stat.get("mean") if isinstance(stat, dict) else stat
    return "n/a" if value is None else f"{value:.3f}"


def print_cycles(console: Console, metrics: dict[str, Any], evolution: dict[str, Any]) -> None:
    """One row per cycle (period): memory score, failure rates, recall, and what happened to the policy."""
    rates = [m for m in registered("pooled") if m.group == FAILURE_GROUP]
    status: dict[int, list[str]] = {}
    for cycles in evolution.get("users", {}).values():
        for c in cycles:
            status.setdefault(int(c["period"]), []).append(c["status"])
    table = Table("cycle", "memory score", *(m.label for m in rates), "recall", "policy updates",
                  title=f"{metrics.get('agent')}: per cycle (mean over users)")
    for row in metrics.get("per_period", []):
        p = int(row["period"])
        done = status.get(p, [])
        updates = ", ".join(f"{done.count(s)} {s}" for s in ("accepted", "rejected", "unchanged") if s in done)
        table.add_row(str(p), _num(row.get("memory_score")), *(_num(m.read(row)) for m in rates),
                      _num(row.get("memory_recall")), updates or "-")
    o = metrics["overall"]
    table.add_row("all", _num(o.get("memory_score")), *(_num(m.read(o)) for m in rates), _num(o.get("memory_recall")),
                  "", style="bold")
    console.print(table)


def evolve_command(cfg: Any, env_path: Path | None, agent: str, feedback: str, out_dir: Path, *,
                   evolver_role: str, max_policy_chars: int, recall: bool, console: Console,
                   allow_model_change: bool = False, flags: Any = None, limit: int | None = None,
                   environment: Environment | None = None) -> int:
    """Resolve inputs, run (or resume) the evolution loop, print the per-cycle table. Returns the exit code.

    ``flags`` (a :class:`~amemgym.engine.flags.ModelFlags`) and ``limit`` (first N users) work as for ``run``;
    every role the loop will call is checked before the first model call. ``environment``: the file at
    ``env_path`` already read (with ``limit``), when the caller has it.
    """
    if evolver_role not in _ROLES:
        raise ConfigError(f"--evolver-role must be one of {', '.join(_ROLES)}, got {evolver_role!r}")
    if max_policy_chars < 100:
        raise ConfigError(f"--max-policy-chars must be at least 100, got {max_policy_chars}")
    builder = feedback_builder(feedback)
    spec = resolve_agent(agent)
    env_path = env_path or default_environment()

    env = first_users(environment if environment is not None else load_environment(env_path, limit=limit), limit)
    if spec.llm_overrides:
        roles = dict(cfg.llm.roles)
        roles["agent"] = {**roles.get("agent", {}), **spec.llm_overrides}
        cfg.llm.roles = roles
    extra = ([evolver_role] if feedback != "none" else []) + (["judge"] if recall else [])
    called = run_roles(spec.roles, extra=extra)
    if flags is not None:
        flags.refuse_unused_judge(called, "amemgym evolve", "--no-recall, and the policy is not rewritten by the "
                                  "judge role")
        flags.apply(cfg)
    preflight(cfg.llm, called)
    llm = LLMClient.from_config(cfg.llm, serial=cfg.run.serial)
    limits = PolicyLimits(max_chars=max_policy_chars)
    evolver = None if feedback == "none" else LLMEvolver(llm, role=evolver_role, max_chars=max_policy_chars)
    judge = LLMRecallJudge(llm) if recall else None
    with run_lock(out_dir, "amemgym evolve"):
        progress = RunProgress()

        async def go() -> Any:
            try:
                return await evolve_loop(env, spec, out_dir, cfg, llm, feedback=builder, evolver=evolver, judge=judge,
                                         limits=limits, settings={"evolver_role": evolver_role, "recall": recall},
                                         env_path=env_path, progress=progress,
                                         allow_model_change=allow_model_change)
            finally:
                progress.close()
                await llm.aclose()

        outcome = asyncio.run(go())
        print_summary(console, outcome.metrics, out_dir)
        print_cycles(console, outcome.metrics, outcome.evolution)
        if outcome.failures:
            console.print(styled("red", f"{len(outcome.failures)} failure(s)", f" (see {out_dir / 'failures.json'}); "
                                 "re-run the same command to retry what failed"), highlight=False)
        console.print(f"results: {out_dir / METRICS}, policies per cycle: {out_dir / 'evolution.json'}",
                      highlight=False)
        write_run_report(out_dir, console)
        return 1 if outcome.failures or not outcome.metrics["complete"] else 0


def register(app: typer.Typer) -> None:
    """Add ``evolve`` to the CLI."""

    @app.command("evolve")
    @handled
    def evolve(
        out_dir: Annotated[Path, typer.Option("--out", "-o", help="Run directory (created; re-running resumes).")],
        env: Annotated[Path | None, typer.Option("--env", help="Environment file (default: the bundled tiny one).")]
        = None,
        agent: Annotated[str, typer.Option("--agent", "-a", help="An agent with an evolvable policy (awi).")]
        = "awi",
        feedback: Annotated[str, typer.Option("--feedback", help="none, question-only or complete.")] = "complete",
        config: ConfigOpt = None,
        set_: SetOpt = None,
        evolver_role: Annotated[str, typer.Option("--evolver-role", help="Role whose model rewrites the policy.")]
        = "memory",
        max_policy_chars: Annotated[int, typer.Option("--max-policy-chars", help="Longest accepted policy.")]
        = 2000,
        recall: Annotated[bool, typer.Option("--recall/--no-recall", help="Judge memory factual recall.")] = True,
        serial: Annotated[bool, typer.Option("--serial", help="One call at a time (debugging).")] = False,
        no_cache: NoCacheOpt = False,
        allow_model_change: AllowModelChangeOpt = False,
        model: ModelOpt = None,
        user_model: UserModelOpt = None,
        judge_model: JudgeModelOpt = None,
        max_connections: MaxConnectionsOpt = None,
        limit: LimitOpt = None,
    ) -> None:
        """Self-evolution: the agent rewrites its memory policy after every period from the chosen feedback."""
        # Settings as `run` takes them, so an evolve run keeps the token limits its environment was made for.
        environment = load_environment(env, limit=limit) if env else None
        cfg, note = settings_for(environment, config, set_)
        if note:
            out.print(note, highlight=False, soft_wrap=True)
        if serial:
            cfg.run.serial = True
        if no_cache:
            cfg.llm.cache = False
        flags = ModelFlags(model, user_model, judge_model, max_connections)
        raise typer.Exit(evolve_command(cfg, env, agent, feedback, out_dir, evolver_role=evolver_role,
                                        max_policy_chars=max_policy_chars, recall=recall, console=out,
                                        allow_model_change=allow_model_change, flags=flags, limit=limit,
                                        environment=environment))
