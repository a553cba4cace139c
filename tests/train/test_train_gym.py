"""Gymnasium conventions: registered ids, ansi rendering, TimeLimit truncation; no side effect on import."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

gymnasium = pytest.importorskip("gymnasium")

from test_train_env import TrainScript, policy  # noqa: E402

from amemgym.errors import ConfigError  # noqa: E402
from amemgym.families.statetrack.data import load_environment  # noqa: E402
from amemgym.testing.scripted_model import scripted_client  # noqa: E402
from amemgym.train import ENV_IDS, MemoryEnv, register_envs  # noqa: E402
from amemgym.train.registration import family_env_ids  # noqa: E402

SRC = str(Path(__file__).resolve().parents[2] / "src")


def test_importing_amemgym_registers_nothing_and_train_registers_the_ids() -> None:
    code = ("import gymnasium, amemgym; before = [i for i in gymnasium.registry if i.startswith('amemgym/')]; "
            "import amemgym.train; after = sorted(i for i in gymnasium.registry if i.startswith('amemgym/')); "
            "print(before, after)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": SRC})
    budget = [f"amemgym/Budget-{t}-v0" for t in ("lite", "standard", "hard", "multi")]
    assert out.stdout.strip() == f"[] {sorted([*ENV_IDS, *budget])}"
    assert sorted(family_env_ids()) == sorted(budget)


def test_make_by_module_prefix_without_importing_first() -> None:
    code = ("import gymnasium; env = gymnasium.make('amemgym.train:amemgym/Tiny-v0', upper_bound=False); "
            "print(type(env.unwrapped).__name__, len(env.unwrapped.environment.users)); env.close()")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": SRC})
    assert out.stdout.strip() == "MemoryEnv 2"


def test_registered_ids_make_the_preset_environments() -> None:
    assert register_envs() == []  # already registered on import; a second call changes nothing
    env = gymnasium.make("amemgym/Small-v0", upper_bound=False)
    try:
        assert isinstance(env.unwrapped, MemoryEnv)
        assert len(env.unwrapped.environment.users) == 5
        assert env.unwrapped.config.env.name == "small"
    finally:
        env.close()


def test_time_limit_wrapper_truncates(original_env_path: Path) -> None:
    user_env = load_environment(original_env_path)
    env = gymnasium.make("amemgym/Tiny-v0", max_episode_steps=3, environment=user_env,
                         llm=scripted_client(TrainScript(user_env.users[0])), upper_bound=False)
    try:
        assert env.spec.max_episode_steps == 3
        obs, _ = env.reset(seed=0)
        flags = []
        for _ in range(3):
            obs, _, terminated, truncated, _ = env.step(policy(obs))
            flags.append((terminated, truncated))
        assert flags == [(False, False), (False, False), (False, True)]
        obs, info = env.reset(seed=0)  # a truncated episode can be restarted
        assert info["step"] == 0
    finally:
        env.close()


def test_make_preset_env_passes_the_environment_through(original_env_path: Path) -> None:
    from amemgym.train import make_preset_env

    user_env = load_environment(original_env_path)
    env = make_preset_env("tiny", environment=user_env, upper_bound=False)
    try:
        assert env.environment is user_env
    finally:
        env.close()


def test_ansi_render(original_env_path: Path) -> None:
    user_env = load_environment(original_env_path)
    env = MemoryEnv(user_env, llm=scripted_client(TrainScript(user_env.users[0])), upper_bound=False,
                    render_mode="ansi")
    try:
        assert "reset" in env.render()
        obs, _ = env.reset(seed=1)
        shown = env.render()
        assert shown.startswith(f"user {user_env.users[0].id}") and obs in shown and "step 0" in shown
        obs, reward, *_ = env.step(policy(obs))
        shown = env.render()
        assert "step 1" in shown and f"last reward {reward:g}" in shown and obs in shown
    finally:
        env.close()
    assert MemoryEnv(user_env, llm=scripted_client(TrainScript(user_env.users[0]))).render() is None
    with pytest.raises(ConfigError, match="render_mode"):
        MemoryEnv(user_env, render_mode="human")
