"""``MemoryEnv``: the memory benchmark as a Gymnasium-style environment whose policy is the assistant.

An episode is one simulated user's whole timeline. Observations are text: the user's turns (the
opening message of each session with its ``[Current Time: ...]`` prefix, then the simulator's turns),
and after each period the overall questions (and optionally the state probes). Actions are the
assistant's replies. The reward of a step is the score of the answer it gave (1.0 if the chosen option
fits the user's current state, else 0.0; conversation turns and probes earn 0.0); when a period's last
question has been answered, ``info["period_result"]`` carries that period's overall, random, upper-bound
and normalised memory score. ``terminated`` is True once every period has been played and evaluated;
``truncated`` is True when the step budget (``max_steps``) runs out first.

Design: the episode is the engine's own async code (:mod:`amemgym.train.episode`), run on a private
event loop in a daemon thread (:mod:`amemgym.train.bridge`). The policy fills the agent's seat through
an adapter whose ``reply`` awaits the action passed to ``step``; ``step`` hands the action over and
blocks until the episode publishes the next observation. So the simulator, its seeds, the prompts, the
parsers and the metrics are those of ``amemgym run``, and a policy scores the same in both. The policy
keeps its own memory: an evaluation observation (``info["kind"] == "evaluation"``) must be answered from
it without being remembered as conversation, as a :class:`~amemgym.agents.base.MemoryAgent` would.

Gymnasium is optional (the ``train`` extra): when installed the class subclasses ``gymnasium.Env``
with text spaces; otherwise it offers the same API standalone. The policy may reuse the environment's
client on its loop with :meth:`MemoryEnv.run_async`.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..config import AppConfig, env_preset
from ..errors import ConfigError, DataError, RunError
from ..families.statetrack.command import settings_for
from ..families.statetrack.data.io import load_environment
from ..families.statetrack.data.model import Environment, UserEnv
from ..families.statetrack.generate.procedural import generate_procedural, tiny_environment_path
from ..llm.client import LLMClient
from .bridge import BridgedEnv, LoopThread, check_seed
from .episode import EpisodeOptions, PolicyEpisode
from .spaces import HAVE_GYMNASIUM, UnicodeText, env_base

_OPTION_KEYS = frozenset({"user", "upper_bound", "probes", "max_steps"})


def default_environment() -> Environment:
    """The bundled tiny procedural environment (regenerated from its seed if the file is not installed)."""
    path = tiny_environment_path()
    if path.exists():
        return load_environment(path)
    # The bundled file is by definition this generation, so the fallback is the same environment.
    return generate_procedural(env_preset("tiny"), seed=42)[0]


class MemoryEnv(BridgedEnv, env_base()):  # type: ignore[misc]
    """The assistant-as-policy environment.

    Args:
        environment: an :class:`~amemgym.families.statetrack.data.Environment`, a path to an environment
            file, or None for the bundled tiny environment.
        llm: client for the user simulator and the upper bound; default the embedded model from
            ``config.llm`` (created on first reset and closed by :meth:`close`).
        config: rounds fallback, budgets and the run seed, as for ``amemgym run``; default the settings
            ``amemgym run`` takes on this environment (the preset it was generated with).
        upper_bound: compute the upper bound (role ``agent`` of ``llm``) so period results carry the
            normalised memory score. Per episode: ``options={"upper_bound": False}``.
        probes: also ask the state probes after each period's questions.
        max_steps: step budget per episode (None: unlimited); exceeding it truncates. The Gymnasium way,
            ``gymnasium.make(id, max_episode_steps=N)`` (a ``TimeLimit`` wrapper), works the same.
        render_mode: None or ``"ansi"`` (:meth:`render` returns the current turn as text).

    Reset options: ``user`` (an id or an index; default drawn from the seeded RNG), ``upper_bound``,
    ``probes``, ``max_steps``.
    """

    metadata: dict[str, Any] = {"render_modes": ["ansi"]}
    render_mode: str | None = None

    def __init__(
        self,
        environment: Environment | str | Path | None = None,
        *,
        llm: LLMClient | None = None,
        config: AppConfig | None = None,
        upper_bound: bool = True,
        probes: bool = False,
        max_steps: int | None = None,
        render_mode: str | None = None,
    ) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ConfigError(f"MemoryEnv: render_mode must be None or 'ansi', got {render_mode!r}")
        self.render_mode = render_mode
        if environment is None:
            environment = default_environment()
        elif not isinstance(environment, Environment):
            environment = load_environment(environment)
        if not environment.users:
            raise DataError("MemoryEnv: the environment has no users")
        self.environment = environment
        # Without a config, the settings `amemgym run` takes on this environment: the preset it was generated with.
        self.config = config or settings_for(environment, None, None)[0]
        self.defaults = _checked({"upper_bound": upper_bound, "probes": probes, "max_steps": max_steps}, "MemoryEnv")
        self.observation_space = UnicodeText()
        self.action_space = UnicodeText()
        self._llm = llm
        self._owns_llm = llm is None
        self._loop = LoopThread()
        self._rng = random.Random(self.config.run.seed)
        self.user: UserEnv | None = None
        self._init_bridge()

    # ---- the two verbs -------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        """Start a new episode (one user's timeline) and return its first observation and info.

        Args:
            seed: reseeds the environment's RNG (which picks the user when ``options`` names none).
            options: ``user``, ``upper_bound``, ``probes``, ``max_steps`` (see the class docstring).
        """
        check_seed(seed, "MemoryEnv")
        if HAVE_GYMNASIUM:
            super().reset(seed=seed)
        if seed is not None:
            self._rng = random.Random(seed)
        opts = self._options(options)
        self._stop_episode()
        self.user = self._pick_user(opts.get("user"))
        self._max_steps = opts["max_steps"]
        user, llm = self.user, self._client()
        chosen = EpisodeOptions(upper_bound=bool(opts["upper_bound"]), probes=bool(opts["probes"]))
        pub = self._begin(lambda channel: PolicyEpisode(user, llm, self.config, channel, chosen).main())
        if pub.kind != "observation":
            raise RunError(f"MemoryEnv: user {self.user.id} has no sessions")
        info = {**pub.info, "seed": seed, "periods": len(self.user.periods), "questions": len(self.user.qas),
                "step": 0}
        self._shown = (pub.text, info, None)
        return pub.text, info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Give the assistant's reply to the current observation.

        Returns:
            ``(observation, reward, terminated, truncated, info)``. ``info`` describes the new observation
            (``kind`` chat/evaluation/probe/end, ``user``, ``period``, ``session``, ``round``, ``question``)
            and holds ``outcomes`` (the scored results of this action: ``gold``, ``choice``, ``status``,
            ``score``), ``period_result`` when a period's evaluation completed, and ``metrics`` at the end.
        """
        pub, terminated, truncated = self._exchange(action)
        info = {**pub.info, "step": self._steps, "outcomes": pub.outcomes}
        period = [o for o in pub.outcomes if o["kind"] == "period"]
        if period:
            info["period_result"] = period[-1]
        reward = float(sum(o["reward"] for o in pub.outcomes))
        self._shown = (pub.text, info, reward)
        return pub.text, reward, terminated, truncated, info

    def render(self) -> str | None:
        """The current turn as text (``render_mode="ansi"``): where the episode is, the last reward, the observation.

        Returns None when the environment was made without a render mode, as Gymnasium environments do.
        """
        if self.render_mode is None:
            return None
        if self._shown is None:
            return "(no episode: call reset())\n"
        text, info, reward = self._shown
        where = [f"user {info.get('user', self.user.id if self.user else '?')}"]
        if info.get("period") is not None:
            where.append(f"period {info['period']}")
        if info.get("session") is not None:
            where.append(f"session {info['session']}")
        where += [f"step {info.get('step', 0)}", str(info.get("kind", ""))]
        if reward is not None:
            where.append(f"last reward {reward:g}")
        return " | ".join(w for w in where if w) + "\n" + text + "\n"

    # ---- helpers -------------------------------------------------------------------------------
    def _options(self, options: dict[str, Any] | None) -> dict[str, Any]:
        if options is not None and not isinstance(options, Mapping):
            raise ConfigError(f"MemoryEnv.reset: options must be a dict, got {type(options).__name__}")
        options = dict(options or {})
        unknown = set(options) - _OPTION_KEYS
        if unknown:
            raise ConfigError(f"MemoryEnv.reset: unknown option {sorted(map(repr, unknown))[0]}; known: "
                              f"{', '.join(sorted(_OPTION_KEYS))}")
        return _checked({**self.defaults, **options}, "MemoryEnv.reset")

    def _pick_user(self, which: Any) -> UserEnv:
        users = self.environment.users
        if which is None:
            return users[self._rng.randrange(len(users))]
        if isinstance(which, int) and not isinstance(which, bool):
            if not 0 <= which < len(users):
                raise ConfigError(f"MemoryEnv.reset: user index {which} out of range (0..{len(users) - 1})")
            return users[which]
        for u in users:
            if u.id == which:
                return u
        raise ConfigError(f"MemoryEnv.reset: no user {which!r} in the environment")


def _checked(opts: dict[str, Any], where: str) -> dict[str, Any]:
    """``opts`` once ``upper_bound`` and ``probes`` are bools and ``max_steps`` is None or a positive int: the
    string ``"false"`` must not read as true, nor ``"5"`` fail deep inside the episode."""
    for name in ("upper_bound", "probes"):
        if not isinstance(opts[name], bool):
            raise ConfigError(f"{where}: {name} must be True or False, got {opts[name]!r}")
    steps = opts["max_steps"]
    if steps is not None and (not isinstance(steps, int) or isinstance(steps, bool) or steps < 1):
        raise ConfigError(f"{where}: max_steps must be a positive int, got {steps!r}")
    return opts
