"""A conformance checker for text environments in the shape of :class:`~amemgym.train.MemoryEnv`.

In the spirit of Gymnasium's ``utils/env_checker.py``: third parties run it on their own environments
(or wrappers) to check the contract the trainers rely on. It plays whole episodes, so run it with a
scripted fake client, not a paid endpoint.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from typing import Any

from ..errors import EnvCheckError

Policy = Callable[[str, dict[str, Any]], str]


def _require(ok: bool, message: str) -> None:
    if not ok:
        raise EnvCheckError(f"check_env: {message}")


def _default_policy(observation: str, info: dict[str, Any]) -> str:
    return '{"answer": 1}' if info.get("kind") == "evaluation" else "Thanks, noted."


def check_signatures(env: Any) -> None:
    """``reset(*, seed, options)`` and ``step(action)``, plus text spaces with ``contains``."""
    for name in ("reset", "step", "close"):
        _require(callable(getattr(env, name, None)), f"the environment has no {name}() method")
    params = inspect.signature(env.reset).parameters
    for name in ("seed", "options"):
        _require(name in params, f"reset() must accept a {name!r} argument")
        _require(params[name].default is None, f"reset()'s {name!r} must default to None")
    _require(len(inspect.signature(env.step).parameters) == 1, "step() must take exactly one argument (the action)")
    for space in ("observation_space", "action_space"):
        _require(callable(getattr(getattr(env, space, None), "contains", None)),
                 f"{space} is missing or has no contains()")


def check_reset(env: Any, seed: int) -> tuple[str, dict[str, Any]]:
    """Types of a reset's result, and that the same seed gives the same first observation and info."""
    result = env.reset(seed=seed)
    _require(isinstance(result, tuple) and len(result) == 2, "reset() must return (observation, info)")
    obs, info = result
    _require(isinstance(obs, str), f"reset() observation must be a str, got {type(obs).__name__}")
    _require(isinstance(info, dict), f"reset() info must be a dict, got {type(info).__name__}")
    _require(env.observation_space.contains(obs), "reset() observation is not in observation_space")
    again = env.reset(seed=seed)
    _require(again == (obs, info), f"reset(seed={seed}) is not deterministic: two calls gave different results")
    return obs, info


def check_step(result: Any, env: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
    """Types of one step's result."""
    _require(isinstance(result, tuple) and len(result) == 5,
             "step() must return (observation, reward, terminated, truncated, info)")
    obs, reward, terminated, truncated, info = result
    _require(isinstance(obs, str), f"step() observation must be a str, got {type(obs).__name__}")
    _require(env.observation_space.contains(obs), "step() observation is not in observation_space")
    _require(isinstance(reward, int | float) and not isinstance(reward, bool) and math.isfinite(reward),
             f"step() reward must be a finite float, got {reward!r}")
    _require(isinstance(terminated, bool), f"terminated must be a bool, got {type(terminated).__name__}")
    _require(isinstance(truncated, bool), f"truncated must be a bool, got {type(truncated).__name__}")
    _require(not (terminated and truncated), "an episode cannot be both terminated and truncated")
    _require(isinstance(info, dict), f"step() info must be a dict, got {type(info).__name__}")
    return obs, float(reward), terminated, truncated, info


def _play(env: Any, policy: Policy, obs: str, info: dict[str, Any], max_steps: int) -> tuple[int, bool, bool]:
    for n in range(1, max_steps + 1):
        action = policy(obs, info)
        _require(env.action_space.contains(action), "the policy's action is not in action_space")
        obs, _, terminated, truncated, info = check_step(env.step(action), env)
        if terminated or truncated:
            return n, terminated, truncated
    return max_steps, False, False


def _must_refuse_step(env: Any, after: str) -> None:
    try:
        env.step("anything")
    except Exception:  # any clear refusal passes; silently continuing does not
        return
    raise EnvCheckError(f"check_env: step() after {after} must raise until reset() is called")


def check_env(env: Any, *, policy: Policy | None = None, seed: int = 0, max_steps: int = 100_000,
              budget: int = 2) -> None:
    """Check the reset/step contract of ``env``; raise :class:`EnvCheckError` naming the first broken rule.

    Checks: signatures and spaces; reset types and determinism under a seed; step types on a whole
    episode; that it terminates (not truncates) without a budget and that ``step`` then refuses to go
    on; that ``options={"max_steps": budget}`` truncates (not terminates) after exactly ``budget``
    steps; that a reset during an episode starts over from the same first observation.

    Args:
        env: the environment (its client should be a scripted fake: whole episodes are played).
        policy: ``(observation, info) -> action``; default answers option 1 and acknowledges chat turns.
        seed: the reset seed.
        max_steps: a safety cap on the episode length.
        budget: the step budget used for the truncation check (shorter than an episode).
    """
    policy = policy or _default_policy
    check_signatures(env)
    obs, info = check_reset(env, seed)
    steps, terminated, truncated = _play(env, policy, obs, info, max_steps)
    _require(terminated and not truncated, f"no termination within {max_steps} steps without a budget")
    _must_refuse_step(env, "termination")
    _require(budget < steps, f"the episode is too short ({steps} steps) to check a budget of {budget}")
    obs, info = env.reset(seed=seed, options={"max_steps": budget})
    n, terminated, truncated = _play(env, policy, obs, info, budget)
    _require(truncated and not terminated and n == budget,
             f"options={{'max_steps': {budget}}} must truncate after exactly {budget} steps")
    _must_refuse_step(env, "truncation")
    first = env.reset(seed=seed)
    env.step(policy(*first))
    _require(env.reset(seed=seed) == first, "reset() during an episode must start the episode over")
