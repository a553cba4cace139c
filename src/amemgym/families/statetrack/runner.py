"""A statetrack run from code: :class:`Runner` plays an environment's users on the engine and returns the outcome.

The command line goes through :func:`amemgym.engine.runner.run_units` (``driver.py``); self-evolution, the Inspect
task, the benchmarks and tests await :meth:`Runner.run` inside their own event loop. Both play the users
through the one engine path, :func:`amemgym.engine.runner.play_units`, with statetrack's unit family
(``units.py``). What a resume must match is in ``protocol.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...agents.registry import AgentSpec
from ...config import AppConfig
from ...engine.executor import UnitExecutor
from ...engine.runner import RunOutcome, play_units
from ...errors import RunError
from ...llm.client import LLMClient
from ...llm.preflight import run_roles
from .data.model import Environment
from .episode import PeriodHook
from .layout import RunDir
from .progress import RunProgress
from .protocol import environment_hash, protocol_of
from .units import STATETRACK_UNITS, statetrack_plan, units_of

__all__ = ["Runner"]


class Runner:
    """Runs one agent on one environment into a run directory; re-running resumes. The caller holds the run lock.

    Args:
        env: the environment (its users are the run's units).
        spec: the agent.
        rundir: the run directory.
        cfg: the run's config.
        llm: the run's client (the caller closes it).
        env_path: the environment file, recorded in the manifest.
        off_policy: a finished run whose conversations are replayed instead of simulated.
        progress: the live display (None: none).
        after_period: called after each period's evaluation (self-evolution).
        allow_model_change: resume although a role's served model changed (the change is recorded).
        protocol: :func:`protocol_of` for these inputs when the caller has it (it hashes the whole environment).
        environment_cut: a ``--limit`` run's cut of its file, recorded in a new manifest.
    """

    def __init__(self, env: Environment, spec: AgentSpec, rundir: Path, cfg: AppConfig, llm: LLMClient, *,
                 env_path: Path | None = None, off_policy: Path | None = None, progress: RunProgress | None = None,
                 after_period: PeriodHook | None = None, allow_model_change: bool = False,
                 protocol: dict[str, Any] | None = None, environment_cut: dict[str, Any] | None = None) -> None:
        self.env, self.spec, self.rundir, self.cfg, self.llm = env, spec, Path(rundir), cfg, llm
        self.env_path, self.off_policy, self.progress = env_path, off_policy, progress
        self.after_period, self.allow_model_change = after_period, allow_model_change
        self.protocol, self.environment_cut = protocol, environment_cut

    async def run(self, user_ids: list[str] | None = None, *, executor: UnitExecutor | None = None) -> RunOutcome:
        """Run or resume the selected users (all by default) and write the run's files.

        Args:
            user_ids: the users to play; all by default (metrics are over every user either way).
            executor: where the episodes run; None runs them concurrently on this event loop.

        Raises:
            RunError: two users would share a folder, the off-policy source is no run directory, or the run
                directory holds another run.
        """
        if self.off_policy is not None and not RunDir(self.off_policy).manifest.exists():
            raise RunError(f"{self.off_policy}: not a run directory (no manifest.json) for --off-policy")
        sha256 = self.protocol["environment_sha256"] if self.protocol else environment_hash(self.env)
        units = units_of(self.env, sha256)  # refuses users that would share a folder
        protocol = self.protocol or protocol_of(sha256, self.spec, self.cfg, self.off_policy)
        plan = statetrack_plan(self.spec, protocol, run_roles(self.spec.roles, off_policy=self.off_policy is not None),
                               off_policy=self.off_policy, after_period=self.after_period,
                               environment_cut=self.environment_cut)
        if self.progress is not None:
            self.progress.watch(self.env.users, self.rundir)
        only = None if user_ids is None else {u.id for u in units if u.data.id in user_ids}
        return await play_units(STATETRACK_UNITS, units, plan, self.llm, self.cfg, self.rundir, env=self.env_path,
                                executor=executor, progress=self.progress,
                                allow_model_change=self.allow_model_change, only=only)
