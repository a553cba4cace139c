"""One user's episode as the policy sees it: the same sessions and questions as ``amemgym run``.

The conversation walks the runner's schedule (:func:`amemgym.families.statetrack.schedule.episode_schedule`) and
is played by :func:`amemgym.families.statetrack.simulate.run_session` with the same simulator, seeds and rounds; the
policy takes the agent's seat through :class:`PolicySeat`, a :class:`~amemgym.agents.base.MemoryAgent` adapter whose
``reply``/``answer`` wait for the action given to ``step``. After each period the overall questions (and,
optionally, the state probes) are put to the policy one at a time, parsed and scored with the prompts,
parsers and seeds of :mod:`amemgym.families.statetrack.questioning`, and the period's numbers come from
:func:`amemgym.families.statetrack.metrics.aggregate`, so a policy scores the same here and in a run.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from ..config import AppConfig
from ..errors import AMemGymError
from ..families.statetrack.asking import overall_prompt, probe_prompt, score_overall, score_probe
from ..families.statetrack.data.model import UserEnv
from ..families.statetrack.metrics import QuestionOutcome, aggregate, answer_scores
from ..families.statetrack.questioning import upper_bound_answers, upper_bound_key
from ..families.statetrack.results import question_outcome
from ..families.statetrack.schedule import PeriodEnd, build_simulator, episode_schedule, user_seed
from ..families.statetrack.simulate import run_session
from ..llm.client import LLMClient
from .bridge import TurnChannel


@dataclass(frozen=True)
class EpisodeOptions:
    """What one episode asks of the policy.

    Attributes:
        upper_bound: ask the bare model (role ``agent``) for the upper bound, needed for the memory score.
        probes: also put the state probes to the policy (for write/read/utilization diagnosis).
    """

    upper_bound: bool = True
    probes: bool = False


class PolicySeat:
    """The agent's seat in a session, filled by the external policy through a :class:`TurnChannel`.

    The policy keeps its own memory, so there is nothing to snapshot here; ``answer`` is never used by
    the episode (questions are asked through the channel with their own metadata) but forwards too.
    """

    def __init__(self, channel: TurnChannel, info: dict[str, Any]) -> None:
        self.channel = channel
        self.info = info
        self.round = 0

    async def reply(self, message: str, *, time: str) -> str:
        """Show the user turn to the policy and return its reply."""
        info = {**self.info, "round": self.round, "time": time}
        self.round += 1
        return await self.channel.ask(message, info)

    async def ingest(self, user: str, assistant: str, *, time: str) -> None:
        """Nothing to record: the policy sees every turn itself."""

    async def answer(self, prompt: str) -> str:
        """Forward a prompt to the policy."""
        return await self.channel.ask(prompt, {**self.info, "kind": "evaluation"})

    async def snapshot(self) -> dict[str, Any]:
        """The policy's memory lives outside the environment."""
        return {}

    def restore(self, snapshot: dict[str, Any]) -> None:
        """Nothing to restore."""

    def memory_view(self) -> str:
        """The policy's memory lives outside the environment."""
        return "(external policy)"

    def stats(self) -> dict[str, Any]:
        """No counters."""
        return {}


class PolicyEpisode:
    """Plays one user's whole timeline against the policy behind ``channel``.

    Args:
        user: the simulated user.
        llm: client for the simulator (role ``simulator``) and the upper bound (role ``agent``).
        cfg: rounds fallback (``cfg.env``), budgets and the run seed (``cfg.run``), as in ``amemgym run``.
        channel: the hand-off to the synchronous caller.
        options: upper bound and probes.
    """

    def __init__(self, user: UserEnv, llm: LLMClient, cfg: AppConfig, channel: TurnChannel,
                 options: EpisodeOptions) -> None:
        self.user = user
        self.llm = llm
        self.cfg = cfg
        self.channel = channel
        self.options = options
        # The same per-user seed as the runner's episode, so simulator calls and fallbacks match.
        self.seed = user_seed(cfg, user)
        self.simulator = build_simulator(llm, cfg)
        self.outcomes: list[QuestionOutcome] = []
        self.failures: list[dict[str, Any]] = []
        self._ub_task: asyncio.Task[dict[str, Any]] | None = None
        self._ub: dict[str, Any] | None = None

    def base_info(self, kind: str, period: int, **extra: Any) -> dict[str, Any]:
        """Metadata common to every observation."""
        return {"kind": kind, "user": self.user.id, "period": period, **extra}

    async def main(self) -> None:
        """Run the episode, publishing its end or its error; cancellation propagates."""
        try:
            if self.options.upper_bound:
                self._ub_task = asyncio.create_task(
                    upper_bound_answers(self.llm, self.user, {}, self.cfg.run.eval_max_tokens, self.seed))
            for step in episode_schedule(self.user, self.cfg, self.seed):
                if isinstance(step, PeriodEnd):
                    await self.evaluate(step.period)
                    continue
                seat = PolicySeat(self.channel, self.base_info("chat", step.period, session=step.session,
                                                               sessions=step.sessions, rounds=step.rounds))
                await run_session(seat, self.simulator, self.user, step.spec, step.rounds, seed=step.seed)
            self.channel.finish(self.base_info("end", len(self.user.periods) - 1)
                                | {"metrics": aggregate(self.outcomes, len(self.user.periods)),
                                   "failures": list(self.failures)})
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # handed to the caller's thread, which re-raises it
            self.channel.fail(exc)
        finally:
            if self._ub_task is not None and not self._ub_task.done():
                self._ub_task.cancel()

    async def evaluate(self, p: int) -> None:
        """Ask period ``p``'s questions one at a time, scoring each answer as the runner does."""
        user = self.user
        asked: list[tuple[int, float, dict[str, bool]]] = []
        for q, qa in enumerate(user.qas):
            common = {"question": q, "questions": len(user.qas), "n_choices": len(qa.answer_choices)}
            reply = await self.channel.ask(overall_prompt(qa), self.base_info("evaluation", p, **common))
            scored = score_overall(user, p, q, reply, self.seed)
            score, _ = answer_scores(scored, self.cfg.run.answer_rule)  # the rule `amemgym run` scores with
            outcome: dict[str, Any] = {"kind": "evaluation", "period": p, **scored, "reward": score}
            probe_ok: dict[str, bool] = {}
            if self.options.probes:
                # The answer's outcome (its gold option, its reward) waits until the probe is answered: the gold
                # option's state is what the probe asks for.
                preply = await self.channel.ask(probe_prompt(user, qa), self.base_info("probe", p, **common))
                values, probe_ok = score_probe(user, p, qa, preply)
                self.channel.record(outcome)
                self.channel.record({"kind": "probe", "period": p, "question": q, "reply": preply,
                                     "probe_values": values, "probe_correct": probe_ok, "reward": 0.0})
            else:
                self.channel.record(outcome)
            asked.append((q, score, probe_ok))
        # The upper bound is awaited only once the questions are out, so it never delays the policy.
        for q, score, probe_ok in asked:
            self.outcomes.append(question_outcome(user, p, q, score, await self.ub_score(p, q), probe_ok))
        cell = aggregate(self.outcomes, len(user.periods))["per_user"][user.id][str(p)]
        self.channel.record({"kind": "period", "period": p, **cell, "reward": 0.0})

    async def ub_score(self, p: int, q: int) -> float | None:
        """The upper-bound score of question ``q`` at period ``p``, or None when disabled or failed."""
        if self._ub_task is None:
            return None
        if self._ub is None:
            try:
                self._ub = await self._ub_task
            except AMemGymError as exc:
                self.failures.append({"user": self.user.id, "period": None, "stage": "upper_bound",
                                      "error": str(exc)})
                self._ub = {}
        entry = self._ub.get(upper_bound_key(self.user, p, q))
        if not entry:
            return None
        if self.cfg.run.answer_rule == "original" and entry.get("score_original_rule") is not None:
            return float(entry["score_original_rule"])
        return float(entry["score"])
