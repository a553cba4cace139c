"""The self-evolution loop: a run whose agent rewrites its memory policy after every period (docs/design.md §7).

It is an ordinary run (same files, same metrics, so reports work on it) with a period hook: once a
period's evaluation is written, the hook judges memory recall, builds feedback, asks the evolver for a
new policy, checks it, records the cycle under ``users/<id>/evolution/period_XX.json`` and sets the
policy on the live agent before the next period starts. The policy lives in the agent's snapshot, so a
resumed run continues with the text in force; the per-cycle record makes the hook idempotent.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..agents.base import AgentContext, MemoryAgent
from ..agents.registry import AgentSpec
from ..config import AppConfig
from ..errors import ConfigError, RunError
from ..families.statetrack.data.model import Environment, UserEnv
from ..families.statetrack.layout import RunDir
from ..families.statetrack.progress import RunProgress
from ..families.statetrack.runner import Runner
from ..llm.client import LLMClient
from ..llm.redact import redact_obj
from ..records import EvolutionCycle, as_dict, read_record, versioned
from ..scoring.intervals import share_ci
from ..seeding import derive_seed
from .evolver import Evolver, Proposal
from .feedback import FeedbackBuilder, revealed_facts
from .policy import PolicyHolder, PolicyLimits, policy_problem
from .recall import RecallJudge, memory_recall


def evolution_record_name(period: int) -> str:
    """The name of one cycle's record inside its user's folder."""
    return f"evolution/period_{period:02d}.json"


def evolution_record_path(rundir: RunDir, user_id: str, period: int) -> Path:
    """Where the record of one user's cycle (period) is kept."""
    return rundir.user(user_id) / evolution_record_name(period)


def evolution_path(rundir: RunDir) -> Path:
    """``RUNDIR/evolution.json``: every user's cycles, assembled at the end of an invocation."""
    return rundir.root / "evolution.json"


def decide(proposal: Proposal | None, current: str, limits: PolicyLimits,
           feedback: str | None = None) -> tuple[str, str | None]:
    """(status, reason) of a proposal: ``accepted``, ``rejected`` (with why) or ``not_evolved``."""
    if proposal is None:
        return "not_evolved", None
    if proposal.policy is None:
        return "rejected", proposal.problem or "no proposal"
    problem = policy_problem(proposal.policy, limits, feedback)
    if problem is not None:
        return "rejected", problem
    if proposal.policy.strip() == current.strip():
        return "unchanged", "the evolver kept the policy as it was"
    return "accepted", None


class EvolutionHook:
    """The period hook that runs one evolution cycle per (user, period).

    Args:
        rundir: the run directory.
        feedback: builds the evolver's input (None from it means no evolver call).
        evolver: proposes new policies.
        judge: decides memory recall; None skips recall.
        limits: what an accepted policy may be.
        seed: the run seed (cycle seeds derive from it, the user and the period).
    """

    def __init__(self, rundir: RunDir, feedback: FeedbackBuilder, evolver: Evolver | None,
                 judge: RecallJudge | None, limits: PolicyLimits, seed: int) -> None:
        self.rundir = rundir
        self.feedback = feedback
        self.evolver = evolver
        self.judge = judge
        self.limits = limits
        self.seed = seed

    def _version_before(self, user: UserEnv, period: int) -> int:
        if period == 0:
            return 0
        path = evolution_record_path(self.rundir, user.id, period - 1)
        return read_record(path, EvolutionCycle).next_policy_version if path.exists() else 0

    async def __call__(self, user: UserEnv, agent: MemoryAgent, period: int, evaluation: dict[str, Any] | None) -> None:
        """Run (or, when already recorded, re-apply) the cycle of ``period``."""
        if not isinstance(agent, PolicyHolder):
            raise ConfigError(f"agent {type(agent).__name__} has no evolvable 'policy'; use an awi agent")
        # The cycles before this one are on record (a resume re-applies only the last): one gone since would
        # leave the run's counts and policy versions short, and cannot be rebuilt from the state played since.
        gone = next((q for q in range(period) if not evolution_record_path(self.rundir, user.id, q).exists()), None)
        if gone is not None:
            raise RunError(f"{evolution_record_path(self.rundir, user.id, gone)}: missing, though the run went past "
                           f"period {gone}; the run's records are incomplete (use a new --out directory)")
        path = evolution_record_path(self.rundir, user.id, period)
        if path.exists():
            agent.policy = read_record(path, EvolutionCycle).next_policy
            return
        if evaluation is None:
            raise RunError(f"user {user.id}: period {period} has no evaluation, which self-evolution needs; "
                           "re-run to retry")
        policy, memory = agent.policy, agent.memory_view()
        seed = derive_seed(self.seed, user.id, "evolve", period)
        # After the last period nothing would run with a new policy, so no evolver call is made.
        last = period == len(user.periods) - 1
        feedback = None if last or self.evolver is None else self.feedback.build(user, period, evaluation, memory)
        facts = revealed_facts(user, period)
        recall_call = memory_recall(self.judge, facts, memory, seed=seed) if self.judge else None
        evolve_call = self.evolver.propose(policy, feedback, seed=seed) if feedback and self.evolver else None
        recall, proposal = await asyncio.gather(_maybe(recall_call), _maybe(evolve_call))
        status, reason = decide(proposal, policy, self.limits, feedback)
        version = self._version_before(user, period)
        new_policy = proposal.policy.strip() if status == "accepted" and proposal and proposal.policy else policy
        # Through the engine's writer of the user's folder, like every file of a run directory; at once, since
        # the checkpoint written after this hook must not land before it.
        self.rundir.writer(user.id).put_now(evolution_record_name(period), versioned({
            "user": user.id, "period": period, "feedback_kind": self.feedback.kind,
            "policy_version": version, "policy": policy, "feedback": feedback,
            "proposal": proposal.to_dict() if proposal else None,
            "changes": proposal.changes if proposal else [], "status": status, "reason": reason,
            "accepted": status == "accepted",
            "next_policy_version": version + 1 if status == "accepted" else version, "next_policy": new_policy,
            "memory": memory, "recall": recall.to_dict() if recall else None,
        }))
        agent.policy = new_policy


async def _maybe(call: Any) -> Any:
    return await call if call is not None else None


def evolving_spec(spec: AgentSpec, kind: str, settings: dict[str, Any]) -> AgentSpec:
    """The agent renamed ``<name>+evolve(<kind>)``, with the evolution settings in its recorded options.

    The options are part of the run's protocol, so a run directory never mixes feedback kinds. Everything else
    is kept, a plug-in's guard and schema-free context included.
    """
    return replace(spec, name=f"{spec.name}+evolve({kind})",
                   options={**spec.options, "evolve": {"feedback": kind, **settings}})


def collect_evolution(env: Environment, rundir: RunDir) -> dict[str, Any]:
    """Every recorded cycle per user, in period order.

    Raises:
        RunError: a cycle's record is missing where the user went past it (a later cycle is recorded, or every
            period is evaluated): the counts would come out short, and the cycle cannot be played again.
    """
    users: dict[str, list[dict[str, Any]]] = {}
    for user in env.users:
        paths = [evolution_record_path(rundir, user.id, period) for period in range(len(user.periods))]
        there = [p.exists() for p in paths]
        done = all(rundir.evaluation(user.id, period).exists() for period in range(len(user.periods)))
        if done:
            # A user whose last cycle is still owed (interrupted, or its judge failed) plays it on the next run.
            # (The checkpoint holds the agent's whole snapshot: read only when it decides.)
            state = rundir.state(user.id)
            done = not (state is not None and state.hook_pending)
        gone = next((p for k, p in enumerate(paths) if not there[k] and (done or any(there[k + 1:]))), None)
        if gone is not None:
            raise RunError(f"{gone}: missing, though user {user.id} went past that period; the run's records are "
                           "incomplete (use a new --out directory)")
        cycles = [as_dict(read_record(p, EvolutionCycle)) for p, ok in zip(paths, there, strict=True) if ok]
        if cycles:
            users[user.id] = cycles
    return {"users": users}


def add_recall(metrics: dict[str, Any], evolution: dict[str, Any], num_periods: int) -> None:
    """Put memory recall next to the other numbers: per (user, period), per period, and overall."""
    by_period: dict[int, list[float]] = {p: [] for p in range(num_periods)}
    per_user_means: list[float] = []
    accepted = rejected = 0
    for uid, cycles in evolution["users"].items():
        values = []
        for c in cycles:
            accepted += c["status"] == "accepted"
            rejected += c["status"] == "rejected"
            value = (c.get("recall") or {}).get("recall")
            cell = metrics.get("per_user", {}).get(uid, {}).get(str(c["period"]))
            if cell is not None:
                cell["memory_recall"] = value
            if value is not None:
                by_period[c["period"]].append(value)
                values.append(value)
        if values:
            per_user_means.append(sum(values) / len(values))
    for row in metrics.get("per_period", []):
        row["memory_recall"] = share_ci(by_period.get(row["period"], []))  # a recall lives in [0, 1]
    metrics["overall"]["memory_recall"] = share_ci(per_user_means)
    metrics["evolution"] = {"accepted": accepted, "rejected": rejected}


@dataclass
class EvolutionOutcome:
    """What an evolution run produced."""

    metrics: dict[str, Any]
    evolution: dict[str, Any]
    failures: list[dict[str, Any]]
    seconds: float


async def evolve_loop(
    env: Environment,
    spec: AgentSpec,
    rundir: Path,
    cfg: AppConfig,
    llm: LLMClient,
    *,
    feedback: FeedbackBuilder,
    evolver: Evolver | None,
    judge: RecallJudge | None,
    limits: PolicyLimits | None = None,
    settings: dict[str, Any] | None = None,
    env_path: Path | None = None,
    progress: RunProgress | None = None,
    user_ids: list[str] | None = None,
    allow_model_change: bool = False,
) -> EvolutionOutcome:
    """Run (or resume) a self-evolution experiment into ``rundir``.

    Args:
        env: the environment.
        spec: the agent; its agents must satisfy :class:`PolicyHolder`.
        rundir: the run directory (re-running resumes).
        cfg: the run configuration.
        llm: the client.
        feedback: what the evolver is told after each period.
        evolver: proposes policies (ignored when ``feedback`` returns None, as the ``none`` kind does).
        judge: memory recall judge, or None to skip recall.
        limits: acceptance limits of evolved policies.
        settings: extra JSON-ready settings pinned in the run's protocol (e.g. the evolver's role).
        env_path: where the environment came from (recorded in the manifest).
        progress: optional progress display.
        user_ids: run only these users.
        allow_model_change: resume although a role's served model changed (see :class:`Runner`).

    Raises:
        ConfigError: when the agent has no evolvable policy.
    """
    limits = limits or PolicyLimits()
    probe = spec.build(llm, AgentContext(user_id="policy-check", state_schema=dict(env.users[0].state_schema)))
    if not isinstance(probe, PolicyHolder):
        raise ConfigError(f"agent {spec.name!r} has no evolvable memory policy; self-evolution needs an awi agent")
    problem = policy_problem(probe.policy, limits)
    if problem is not None:
        raise ConfigError(f"agent {spec.name!r}: its starting policy is not acceptable: {problem}")
    start = time.perf_counter()
    rd = RunDir(rundir)
    hook = EvolutionHook(rd, feedback, evolver, judge, limits, cfg.run.seed)
    named = evolving_spec(spec, feedback.kind, {"max_policy_chars": limits.max_chars, **(settings or {})})
    outcome = await Runner(env, named, rundir, cfg, llm, env_path=env_path, progress=progress,
                           after_period=hook, allow_model_change=allow_model_change).run(user_ids)
    evolution = {"agent": named.name, "feedback": feedback.kind, **collect_evolution(env, rd)}
    evolution = redact_obj(evolution)
    root = rd.writer()
    root.put_now(evolution_path(rd).name, evolution)
    metrics = outcome.metrics
    add_recall(metrics, evolution, env.num_periods)
    root.put_now(rd.metrics.name, versioned(metrics))
    return EvolutionOutcome(metrics, evolution, outcome.failures, time.perf_counter() - start)
