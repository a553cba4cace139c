"""Gymnasium ids for :class:`~amemgym.train.MemoryEnv`, registered when ``amemgym.train`` is imported.

``gymnasium.make("amemgym/Tiny-v0")`` (after ``import amemgym.train``, or in one step as
``gymnasium.make("amemgym.train:amemgym/Tiny-v0")``) gives the bundled tiny environment; ``Small``,
``Base``, ``Extra`` and ``Large`` are the procedural environments of the presets of the same name
(``small``, ``v1.base``, ``v1.extra``, ``large``), generated deterministically from ``seed`` when made.
Episode length limits go through Gymnasium's own ``TimeLimit`` wrapper:
``gymnasium.make(id, max_episode_steps=N)``. Keyword arguments reach :class:`MemoryEnv` (``llm``,
``upper_bound``, ``probes``, ``render_mode="ansi"``, ...).

Other families offer ids through their optional ``env_ids`` (docs/design.md §15): the budget family's
``amemgym/Budget-lite-v0`` (likewise ``-standard``, ``-hard``, ``-multi``) is a generated episode of that
tier (``seed=``, ``domain=`` choose it; ``env="data.json"`` plays an episode file instead), made through
:func:`amemgym.families.make_env`.

Importing the top-level ``amemgym`` package registers nothing.
"""

from __future__ import annotations

from typing import Any

from ..config import load_config
from ..families import family_names, get_family, training_method
from ..families.statetrack.generate.procedural import generate_procedural
from .env import MemoryEnv

__all__ = ["ENV_IDS", "family_env_ids", "make_preset_env", "register_envs"]

#: Gymnasium id -> config preset.
ENV_IDS: dict[str, str] = {
    "amemgym/Tiny-v0": "tiny",
    "amemgym/Small-v0": "small",
    "amemgym/Base-v0": "v1.base",
    "amemgym/Extra-v0": "v1.extra",
    "amemgym/Large-v0": "large",
}


def make_preset_env(preset: str, seed: int = 42, **kwargs: Any) -> MemoryEnv:
    """A :class:`MemoryEnv` on the procedural environment of ``preset`` (the bundled file for ``tiny``).

    Args:
        preset: a config preset name.
        seed: the generator seed (42 is the bundled tiny environment's).
        **kwargs: passed to :class:`MemoryEnv`; ``config`` defaults to the preset's own settings, and an
            ``environment`` given here replaces the preset's.
    """
    config = kwargs.pop("config", None) or load_config(preset)
    if "environment" in kwargs:  # an explicit environment wins over the preset's
        return MemoryEnv(config=config, **kwargs)
    if preset == "tiny" and seed == 42:
        return MemoryEnv(None, config=config, **kwargs)
    environment = generate_procedural(config.env, seed=seed)[0]
    return MemoryEnv(environment, config=config, **kwargs)


def family_env_ids() -> dict[str, dict[str, Any]]:
    """Gymnasium id -> keyword arguments of :func:`amemgym.families.make_env`, for every family offering ids."""
    ids: dict[str, dict[str, Any]] = {}
    for name in family_names():
        family = get_family(name)
        if callable(getattr(family, "env_ids", None)):
            for env_id, kwargs in training_method(family, "env_ids")().items():
                ids[env_id] = {"family": name, **kwargs}
    return ids


def register_envs() -> list[str]:
    """Register :data:`ENV_IDS` and the families' ids with Gymnasium (a no-op without it, and on a second call).

    Returns:
        The ids registered by this call.
    """
    try:
        import gymnasium
    except ImportError:
        return []
    done = []
    for env_id, preset in ENV_IDS.items():
        if env_id in gymnasium.registry:
            continue
        gymnasium.register(id=env_id, entry_point=f"{__name__}:make_preset_env", kwargs={"preset": preset})
        done.append(env_id)
    for env_id, kwargs in family_env_ids().items():
        if env_id in gymnasium.registry or env_id in ENV_IDS:
            continue
        gymnasium.register(id=env_id, entry_point="amemgym.families:make_env", kwargs=kwargs)
        done.append(env_id)
    return done
