"""``BudgetEnv``: one budget-family episode as a Gymnasium-style environment whose policy picks the tool calls.

- **Observation**: the text the harness would send the agent next. That is either the opening of an event
  (the one-line memory summary, the event's documents, notice, memo or question, and what to do) or the
  harness's feedback on the previous call (a tool result, an error, or a protocol error). ``info["system"]``
  at reset holds the system prompt; the harness cuts the conversation back to it after every event, so a
  policy that wants the conversation keeps it itself.
- **Action**: one reply in the strict text protocol, a JSON object ``{"tool": NAME, "args": {...}}`` (one
  code fence allowed). Anything else is answered with a protocol error, costs a step and touches nothing.
- **Reward**: 1.0 for a ``submit_answer`` the checker accepts for the question on screen, else 0.0 (storage
  calls, searches, protocol errors, wrong answers and refusals of answerable questions all earn 0.0). The sum
  of an episode's rewards is its number of correct answers. Storage is not rewarded step by step: the
  storage gate and efficiency enter the axes, which ``info["score"]`` carries when the episode ends
  (breadth, maintenance, reasoning, efficiency, composite, abstention, accuracy) beside ``info["verdicts"]``
  (each question's verdict). Both come from the same function as ``amemgym run``
  (:func:`~amemgym.families.budget.run.score_harness`), so a policy gets the same numbers both ways.
- ``terminated`` once the last event is played; ``truncated`` when ``max_steps`` actions were taken first (a
  truncated episode has no score: its unplayed questions would count as wrong).

The real :class:`~amemgym.families.budget.harness.Harness` plays the episode on the private event loop of
:mod:`amemgym.train.bridge`; the policy takes its :class:`~amemgym.families.budget.harness.ToolAgent` seat
through :class:`PolicySeat`, whose ``act`` publishes the observation and awaits the action given to
:meth:`BudgetEnv.step`. So the store, its budget, the per-event cap of tool calls, the context cut and the
trace are exactly those of ``amemgym run`` (docs/budget.md, "Gym environment").
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import Coroutine, Mapping
from pathlib import Path
from typing import Any

from ...config import AppConfig
from ...errors import ConfigError, RunError
from ...llm.client import LLMClient
from ...train.bridge import BridgedEnv, LoopThread, TurnChannel, check_seed
from ...train.spaces import HAVE_GYMNASIUM, UnicodeText, env_base
from .generate import build_episode
from .harness import Harness, system_prompt
from .io import load_episode
from .model import Episode, Event
from .policies import policy_of
from .run import score_harness
from .tiers import get_tier
from .validity import judge

_OPTION_KEYS = frozenset({"max_steps"})


class PolicySeat:
    """The tool agent of a :class:`BudgetEnv`: hands each observation to ``step`` and returns its action.

    Before publishing, it scores the answers the harness accepted since the previous publication (the reward
    of the previous action), using the checker as ``amemgym run`` does.
    """

    def __init__(self, harness: Harness, channel: TurnChannel) -> None:
        self.harness, self.channel = harness, channel
        self._scored: dict[str, str] = {}
        self._event = -1
        self._event_step = 0

    async def act(self, messages: list[dict[str, str]], *, event: Event) -> str:
        """Publish the latest message as the observation and wait for the policy's reply."""
        self.record_outcomes()
        if event.index != self._event:
            self._event, self._event_step = event.index, 0
        else:
            self._event_step += 1
        return await self.channel.ask(messages[-1]["content"], self.info(event))

    def info(self, event: Event) -> dict[str, Any]:
        """Where the episode is (never the gold answer of the question on screen)."""
        store = self.harness.store
        return {"event": event.index, "events": len(self.harness.episode.events), "event_kind": event.kind,
                "session": event.session, "event_step": self._event_step, "question": event.question,
                "writes_used": store.writes_used, "writes_left": store.writes_left, "notes": len(store.notes)}

    def record_outcomes(self) -> None:
        """Attach a verdict for each answer accepted since the last call (the harness stores one per question)."""
        answers = self.harness.state.answers
        fresh = [qid for qid, text in answers.items() if self._scored.get(qid) != text]
        if not fresh:
            return
        verdicts = judge(self.harness.episode, answers)
        for qid in fresh:
            q, v = self.harness.episode.question(qid), verdicts[qid]
            self._scored[qid] = answers[qid]
            self.channel.record({"question": qid, "kind": q.kind, "answer": answers[qid], "gold": q.gold,
                                 "correct": v.correct, "reason": v.reason, "reward": 1.0 if v.correct else 0.0})


class BudgetEnv(BridgedEnv, env_base()):  # type: ignore[misc]
    """A budget-family episode with the policy in the agent's seat.

    Args:
        episode: an :class:`~amemgym.families.budget.model.Episode`, a path to an episode file, or None to
            generate one from ``tier``, ``domain``, ``seed`` and ``salt`` (then ``reset(seed=k)`` switches to
            the episode of seed ``k``).
        tier, domain, seed, salt: the generated episode (ignored when ``episode`` is given).
        agent: ``native``/``llm`` (the notes store under the budget), ``vector`` (the vector store) or
            ``long-context`` (no budget, no cut), as ``amemgym run --agent``.
        llm: client for the store's search embedder; default one from ``config.llm``, created on first use
            and closed by :meth:`close`.
        config: settings for that default client.
        embed_search: fuse the embedder into the notes store's search, as ``amemgym run`` does (off: BM25).
        max_steps: actions per episode before truncation (None: unlimited). Per episode:
            ``options={"max_steps": N}``; ``gymnasium.make(id, max_episode_steps=N)`` works as well.
        render_mode: None or ``"ansi"``.
    """

    metadata: dict[str, Any] = {"render_modes": ["ansi"]}
    render_mode: str | None = None

    def __init__(self, episode: Episode | str | Path | None = None, *, tier: str = "lite",
                 domain: str = "companies", seed: int = 0, salt: int = 0, agent: str = "native",
                 llm: LLMClient | None = None, config: AppConfig | None = None, embed_search: bool = True,
                 max_steps: int | None = None, render_mode: str | None = None) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ConfigError(f"BudgetEnv: render_mode must be None or 'ansi', got {render_mode!r}")
        self.render_mode = render_mode
        self.policy, self.store_mode = policy_of(agent)
        self._max_steps_default = _check_max_steps(max_steps)
        self._fixed = episode is not None
        if isinstance(episode, Episode):
            self.episode = episode
        elif episode is not None:
            self.episode = load_episode(Path(episode))[0]
        else:
            get_tier(tier)
            for name, value in (("seed", seed), ("salt", salt)):
                if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                    raise ConfigError(f"BudgetEnv: {name} must be a whole number of 0 or more, got {value!r}")
            self._spec = (tier, domain, salt)
            self.episode = build_episode(tier, domain, seed, salt)
        self.config = config or AppConfig()
        self.embed_search = embed_search
        self.observation_space = UnicodeText()
        self.action_space = UnicodeText()
        self._llm, self._owns_llm = llm, llm is None
        self._loop = LoopThread("amemgym-budget-env-loop")
        self._workdir: Path | None = None
        self.harness: Harness | None = None
        self._init_bridge()

    @property
    def system(self) -> str:
        """The system prompt the harness gives the agent of this episode."""
        return system_prompt(self.episode, policy=self.policy)

    # ---- the two verbs -------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        """Start the episode from its first event and return the first observation and info.

        Args:
            seed: for a generated episode, the generation seed of the episode to play (None: the current one);
                for a given episode it only seeds ``np_random``.
            options: ``max_steps``.
        """
        check_seed(seed, "BudgetEnv")
        if HAVE_GYMNASIUM:
            super().reset(seed=seed)
        if options is not None and not isinstance(options, Mapping):
            raise ConfigError(f"BudgetEnv.reset: options must be a dict, got {type(options).__name__}")
        opts = dict(options or {})
        unknown = set(opts) - _OPTION_KEYS
        if unknown:
            raise ConfigError(f"BudgetEnv.reset: unknown option {sorted(map(repr, unknown))[0]}; known: "
                              f"{', '.join(sorted(_OPTION_KEYS))}")
        self._max_steps = _check_max_steps(opts.get("max_steps", self._max_steps_default))
        self._stop_episode()
        if seed is not None and not self._fixed and seed != self.episode.seed:
            tier, domain, salt = self._spec
            self.episode = build_episode(tier, domain, seed, salt)
        self._workdir = Path(tempfile.mkdtemp(prefix="amemgym-budget-env-"))
        harness = Harness(self.episode, self._client(), self._workdir, policy=self.policy,
                          store_mode=self.store_mode, embed_search=self.embed_search)
        self.harness = harness

        def play(channel: TurnChannel) -> Coroutine[Any, Any, None]:
            harness.agent = PolicySeat(harness, channel)
            return _play(harness, channel)

        pub = self._begin(play)
        if pub.kind != "observation":
            raise RunError("BudgetEnv: the episode has no events")
        ep = self.episode
        info = {**pub.info, "system": self.system, "tier": ep.tier.name, "domain": ep.domain, "seed": ep.seed,
                "salt": ep.salt, "questions": len(ep.questions), "budget": harness.store.budget, "step": 0}
        self._shown = (pub.text, info, None)
        return pub.text, info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Give the policy's reply (one tool call) to the current observation.

        Returns:
            ``(observation, reward, terminated, truncated, info)``. ``info`` describes the new observation
            (``event``, ``event_kind``, ``event_step``, ``question``, ``writes_used``, ``writes_left``,
            ``notes``) and holds ``outcomes`` (the verdict on an answer this action submitted); at the end,
            ``score`` and ``verdicts``.
        """
        pub, terminated, truncated = self._exchange(action)
        reward = float(sum(o["reward"] for o in pub.outcomes))
        info = {**pub.info, "step": self._steps, "outcomes": pub.outcomes}
        self._shown = (pub.text, info, reward)
        return pub.text, reward, terminated, truncated, info

    def render(self) -> str | None:
        """The current observation with a header line (``render_mode="ansi"``); None without a render mode."""
        if self.render_mode is None:
            return None
        if self._shown is None:
            return "(no episode: call reset())\n"
        text, info, reward = self._shown
        if "score" in info:
            head = f"episode over | step {info['step']} | composite {info['score']['composite']}"
        else:
            left = info.get("writes_left")
            head = (f"event {info['event'] + 1}/{info['events']} ({info['event_kind']}) | call "
                    f"{info['event_step'] + 1} | step {info['step']} | writes used {info['writes_used']}, left "
                    f"{'unlimited' if left is None else left}")
        if reward is not None:
            head += f" | last reward {reward:g}"
        return head + "\n" + text + "\n"

    # ---- helpers -------------------------------------------------------------------------------
    def _episode_stopped(self) -> None:
        if self._workdir is not None:
            shutil.rmtree(self._workdir, ignore_errors=True)
            self._workdir = None


def _check_max_steps(value: Any) -> int | None:
    if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
        raise ConfigError(f"BudgetEnv: max_steps must be a positive int, got {value!r}")
    return value  # type: ignore[no-any-return]


async def _play(harness: Harness, channel: TurnChannel) -> None:
    """Play the whole episode, then publish its score (or the error that ended it); cancellation propagates."""
    try:
        await harness.run()
        assert isinstance(harness.agent, PolicySeat)
        harness.agent.record_outcomes()
        verdicts, score = score_harness(harness)
        channel.finish({"score": score.to_dict(), "writes_used": harness.store.writes_used,
                        "search_embedder_problem": harness.embedder_problem,
                        "verdicts": {qid: {"correct": v.correct, "reason": v.reason}
                                     for qid, v in verdicts.items()}})
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # handed to the caller's thread, which re-raises it
        channel.fail(exc)


def make_budget_env(episode: str | Path | Episode | None = None, **options: Any) -> BudgetEnv:
    """The entry point behind the family's Gymnasium ids (``amemgym/Budget-<tier>-v0``)."""
    return BudgetEnv(episode, **options)


__all__ = ["BudgetEnv", "PolicySeat", "make_budget_env"]
