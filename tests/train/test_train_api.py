"""MemoryEnv's surface: Gymnasium conformance, the standalone fallback, defaults, and run_async."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from amemgym.families.statetrack.data import load_environment
from amemgym.llm import LLMClient
from amemgym.testing.run_script import RunScript
from amemgym.testing.scripted_model import ScriptedBackend
from amemgym.train import MemoryEnv

SRC = Path(__file__).resolve().parents[2] / "src"


def fake_env(path: Path, **kw) -> MemoryEnv:
    env = load_environment(path)
    backend = ScriptedBackend(RunScript(env.users[0]))
    return MemoryEnv(env, llm=LLMClient(backends={r: backend for r in ("agent", "simulator")}, backoff_base=0.001),
                     **kw)


def test_passes_gymnasiums_own_checker(original_env_path: Path) -> None:
    gym = pytest.importorskip("gymnasium")
    from gymnasium.utils.env_checker import check_env as gym_check_env

    env = fake_env(original_env_path)
    try:
        assert isinstance(env, gym.Env)
        gym_check_env(env, skip_render_check=True)
    finally:
        env.close()


def test_works_without_gymnasium(original_env_path: Path) -> None:
    # A fresh interpreter where importing gymnasium fails: same API, no gymnasium base class.
    script = textwrap.dedent(f"""
        import sys
        sys.modules["gymnasium"] = None
        sys.path[:0] = [{str(SRC)!r}, {str(Path(__file__).parents[1])!r}]
        from amemgym.testing.run_script import RunScript
        from amemgym.families.statetrack.data import load_environment
        from amemgym.llm import LLMClient
        from amemgym.testing.scripted_model import ScriptedBackend
        from amemgym.train import MemoryEnv, check_env
        from amemgym.train.bridge import BridgedEnv
        env_ = load_environment({str(original_env_path)!r})
        backend = ScriptedBackend(RunScript(env_.users[0]))
        env = MemoryEnv(env_, llm=LLMClient(backends={{"agent": backend, "simulator": backend}}))
        assert MemoryEnv.__mro__[1:] == (BridgedEnv, object)
        check_env(env)
        env.close()
        print("standalone ok")
    """)
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "standalone ok" in res.stdout


def test_policy_can_share_the_client_through_run_async(original_env_path: Path) -> None:
    env = fake_env(original_env_path, upper_bound=False)
    try:
        obs, info = env.reset()
        res = env.run_async(env.llm.chat("agent", [{"role": "user", "content": obs}], max_tokens=16, tag="policy"))
        _, _, _, _, info = env.step(res.text)
        assert info["kind"] == "chat" and env.llm.ledger.roles["agent"].calls == 1
    finally:
        env.close()


def test_default_environment_and_client_need_no_call_to_start() -> None:
    # Period 0 has one round per session, so the first steps need no model: the embedded one never starts.
    env = MemoryEnv(upper_bound=False)
    try:
        obs, info = env.reset(seed=1)
        assert obs.startswith("[Current Time: ") and info["period"] == 0 and info["session"] == 0
        obs2, reward, terminated, truncated, info2 = env.step("Noted.")
        assert obs2.startswith("[Current Time: ") and info2["session"] == 1
        assert (reward, terminated, truncated) == (0.0, False, False)
    finally:
        env.close()


def test_reset_picks_users_with_the_seeded_rng() -> None:
    env = MemoryEnv(upper_bound=False)
    try:
        ids = [env.reset(seed=s)[1]["user"] for s in range(6)]
        assert ids == [env.reset(seed=s)[1]["user"] for s in range(6)]
        assert len(set(ids)) == len(env.environment.users)
    finally:
        env.close()
