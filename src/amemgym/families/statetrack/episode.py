"""One user's episode: periods and sessions in order, checkpoints, and evaluations off snapshots.

The episode writes nothing itself: it hands its records (session lines, checkpoints, snapshots, evaluations,
upper-bound answers) by name to the engine's :class:`~amemgym.engine.unit_writer.UnitWriter` for the user's
folder, which lands them in the order they were handed over, off the event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from ...agents.base import AgentContext, MemoryAgent
from ...agents.registry import AgentSpec
from ...config import AppConfig
from ...engine.unit_writer import UnitWriter
from ...errors import AMemGymError, RunError
from ...llm.client import LLMClient
from ...llm.limiter import background_calls
from ...llm.redact import redact
from ...records import EvaluationRecord, Snapshot, UpperBoundRecord, as_dict, versioned
from ...records.base import load_json_file
from .data.model import UserEnv
from .layout import SESSIONS, UPPER_BOUND, RunDir, evaluation_name, save_state, snapshot_name
from .questioning import evaluate_period, upper_bound_answers, upper_bound_key
from .resume import checked_state, lost_fix, snapshot_digest
from .schedule import PeriodEnd, build_simulator, episode_schedule, user_seed
from .simulate import LeakTally, replay_session, run_session

#: The roles whose model shapes a run's conversations and answers; their served models are pinned in the
#: manifest and recorded with every session.
RUN_ROLES: tuple[str, ...] = ("simulator", "agent", "memory")


def load_json(path: Any) -> Any:
    """Read a JSON file written by this package (a missing, truncated or non-JSON one is a RunError)."""
    return load_json_file(path)


def recorded_sessions(rundir: RunDir, user_id: str) -> dict[tuple[int, int], list[dict[str, str]]]:
    """Finished sessions of a user, last record winning (a session redone after a kill replaces the first)."""
    return {key: rec["messages"] for key, rec in rundir.session_records(user_id).items()}


#: Called with (user, live agent, period, evaluation record or None) once a period's evaluation is done and
#: before the next period starts; it may change the live agent (self-evolution sets its policy here). It
#: runs again for the last finished period on resume, so it must be idempotent.
PeriodHook = Callable[[UserEnv, MemoryAgent, int, "dict[str, Any] | None"], Awaitable[None]]


@dataclass
class EpisodeEvents:
    """Hooks the runner uses for progress display."""

    on_session: Callable[[str, int, int], None] = lambda u, p, s: None
    on_eval: Callable[[str, int], None] = lambda u, p: None
    failures: list[dict[str, Any]] = field(default_factory=list)


class Episode:
    """Runs (or resumes) one user's episode and its evaluations."""

    def __init__(
        self,
        user: UserEnv,
        spec: AgentSpec,
        llm: LLMClient,
        cfg: AppConfig,
        rundir: RunDir,
        *,
        off_policy: RunDir | None = None,
        events: EpisodeEvents | None = None,
        after_period: PeriodHook | None = None,
        writer: UnitWriter | None = None,
    ) -> None:
        self.user = user
        self.spec = spec
        self.llm = llm
        self.cfg = cfg
        self.rundir = rundir
        #: Where every file of this user goes (the engine's writer of ``users/<folder>``).
        self.out = writer if writer is not None else rundir.writer(user.id)
        self.off_policy = off_policy
        self.events = events or EpisodeEvents()
        self.after_period = after_period
        self.seed = user_seed(cfg, user)
        self.ctx = AgentContext(
            user_id=user.id, seed=self.seed, reply_max_tokens=cfg.run.reply_max_tokens,
            eval_max_tokens=cfg.run.eval_max_tokens, context_window=cfg.run.context_window,
            state_schema=dict(user.state_schema), system_prompt=cfg.run.agent_system_prompt,
        )
        self.simulator = build_simulator(llm, cfg)
        self._ub: asyncio.Task[dict[str, Any]] | None = None

    def _fail(self, period: int | None, stage: str, exc: BaseException) -> None:
        self.events.failures.append({"user": self.user.id, "period": period, "stage": stage,
                                    "error": redact(str(exc))})

    async def _upper_bound(self) -> dict[str, Any]:
        saved = self.out.read(UPPER_BOUND, UpperBoundRecord)
        done = as_dict(saved)["answers"] if saved is not None else {}
        with background_calls():
            result = await upper_bound_answers(self.llm, self.user, done, self.cfg.run.eval_max_tokens, self.seed)
        if result != done:
            self.out.put(UPPER_BOUND, versioned({"answers": result}))
            await self.out.flush()
        return result

    def _start_upper_bound(self) -> asyncio.Task[dict[str, Any]]:
        """The upper-bound questions, started on first need (docs/design.md §4).

        That is once the conversation's first session is done, or at the first evaluation or the end if
        sooner: started with the first session they would launch a burst of calls just as the conversation's
        first call (and every other user's) is being sent, and delay it. They are needed only by evaluations.
        """
        if self._ub is None:
            self._ub = asyncio.create_task(self._upper_bound())
        return self._ub

    async def _evaluate(self, period: int, snapshot: dict[str, Any]) -> None:
        upper_bound = self._start_upper_bound()
        try:
            with background_calls():
                result = await evaluate_period(self.llm, self.spec, self.ctx, self.user, period, snapshot, self.seed)
            ub = await upper_bound
        except AMemGymError as exc:
            self._fail(period, "evaluation", exc)
            return
        for q in result["questions"]:
            key = upper_bound_key(self.user, period, q["question"])
            q["ub_score"] = ub[key]["score"]
            q["ub_score_original_rule"] = ub[key].get("score_original_rule", ub[key]["score"])
        self.out.put(evaluation_name(period), versioned(result))
        await self.out.flush()
        self.events.on_eval(self.user.id, period)

    async def _finish_period(self, agent: MemoryAgent, period: int, evals: list[asyncio.Task[None]]) -> None:
        # The hook's feedback needs this period's evaluation, so the next period waits for it (on-policy).
        assert self.after_period is not None
        await asyncio.gather(*evals)  # each has landed its evaluation before it ends
        saved = self.out.read(evaluation_name(period), EvaluationRecord)
        await self.after_period(self.user, agent, period, as_dict(saved) if saved is not None else None)
        # The checkpoint must carry whatever the hook changed, or a resumed run would lose it. It is queued
        # behind every earlier write, so none of those lands after (and over) it.
        save_state(self.out, period + 1, 0, await agent.snapshot())
        await self.out.flush()

    async def run(self) -> None:
        """Play every missing session and evaluate every missing period; failures are recorded, not raised.

        Errors that are not the model's or the agent's (a broken run file, a full disk) are raised, after the
        background evaluations are settled: a task left holding an exception would be logged with a traceback.
        """
        evals: list[asyncio.Task[None]] = []
        try:
            await self._play(evals)
        except BaseException:
            pending = [*evals, *([self._ub] if self._ub is not None else [])]
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
            raise

    async def _play(self, evals: list[asyncio.Task[None]]) -> None:
        user, out = self.user, self.out
        agent = self.spec.build(self.llm, self.ctx)
        start_p, start_s = 0, 0
        state = checked_state(self.rundir, out, user, hooked=self.after_period is not None)
        if state is not None:
            agent.restore(state.snapshot)
            start_p, start_s = state.period, state.session
        recorded = recorded_sessions(self.off_policy, user.id) if self.off_policy else {}
        # A replayed session's text came from the recorded run's models, so its record names those.
        recorded_models = ({k: r.get("models") for k, r in self.off_policy.session_records(user.id).items()}
                           if self.off_policy else {})
        # Periods finished before a restart whose evaluation was not written yet.
        for p in range(min(start_p, len(user.periods))):
            if out.exists(evaluation_name(p)):
                continue
            saved = out.read(snapshot_name(p), Snapshot)
            if saved is None:
                # The agent's memory at the period's end is gone with its evaluation: nothing can score it, and
                # "re-run the same command" would say the same forever.
                raise RunError(f"{out.path(snapshot_name(p))}: period {p} of user {user.id!r} was played, but "
                               f"neither its evaluation nor its snapshot is there to score it; "
                               f"{lost_fix(self.rundir, user)}")
            evals.append(asyncio.create_task(self._evaluate(p, saved.snapshot)))
        period_index = start_p
        try:
            models = {role: await self.llm.model_identity(role) for role in RUN_ROLES}
            if self.after_period is not None and start_s == 0 and start_p > 0:
                period_index = start_p - 1
                await self._finish_period(agent, start_p - 1, evals)
            for step in episode_schedule(user, self.cfg, self.seed, start=(start_p, start_s)):
                p = period_index = step.period
                if isinstance(step, PeriodEnd):
                    snap = await agent.snapshot()
                    # The snapshot lands before the checkpoint past the period (the evaluation is redone from it).
                    # One line: it holds the agent's whole memory, too big for the pure-Python pretty printer.
                    out.put(snapshot_name(p), versioned({"snapshot": snap}), compact=True)
                    # With a hook, the period is not done until the hook has run (_finish_period saves again).
                    save_state(out, p + 1, 0, snap, hook_pending=self.after_period is not None)
                    if not out.exists(evaluation_name(p)):
                        evals.append(asyncio.create_task(self._evaluate(p, snap)))
                    if self.after_period is not None:
                        await self._finish_period(agent, p, evals)
                    continue
                s, session = step.session, step.spec
                leaks = LeakTally()
                if self.off_policy is not None:
                    if (p, s) not in recorded:
                        raise AMemGymError(f"off-policy run has no recorded session {s} of period {p}")
                    messages = recorded[(p, s)]
                    await replay_session(agent, session, messages)
                else:
                    messages = await run_session(agent, self.simulator, user, session, step.rounds,
                                                 seed=step.seed, tally=leaks)
                # Commit order: the session record first, then the checkpoint that points past it; both are
                # queued on the writer, so their fsyncs stay off the conversation's critical path. Every payload
                # is a copy the agent no longer touches. The checkpoint journal appends only what the session
                # changed in the snapshot (for the native agent: its new messages).
                snap = await agent.snapshot()
                # The digest of the checkpoint saved next: a resume holds that checkpoint against it (resume.py).
                record = versioned({"period": p, "session": s, "time": session.session_time, "messages": messages,
                                    "models": recorded_models.get((p, s)) if self.off_policy else models,
                                    **leaks.record_fields(), "state_sha256": snapshot_digest(snap)})
                out.append(SESSIONS, [record])
                save_state(out, p, s + 1, snap)
                self.events.on_session(user.id, p, s)
                self._start_upper_bound()
        except AMemGymError as exc:
            self._fail(period_index, "conversation", exc)
        finally:
            await out.flush()
        await asyncio.gather(*evals)
        try:
            await self._start_upper_bound()
        except AMemGymError as exc:
            self._fail(None, "upper_bound", exc)
