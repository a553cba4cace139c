"""One Ray loop and one trials loop: statetrack and the unit families both run through the engine's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import amemgym
from amemgym.cli import app
from amemgym.engine import trials as engine_trials
from amemgym.families.statetrack import command as statetrack_command
from amemgym.testing.fake_endpoint import FakeEndpoint

SRC = Path(amemgym.__file__).parent


def _modules_with(text: str) -> list[str]:
    return sorted(str(p.relative_to(SRC)) for p in SRC.rglob("*.py") if text in p.read_text(encoding="utf-8"))


def test_only_the_engine_starts_ray_tasks() -> None:
    assert _modules_with("ray.remote(") == ["engine/ray.py"]
    assert _modules_with("ray.init(address") == ["engine/ray.py"]


def test_only_the_engine_names_trial_folders() -> None:
    assert _modules_with('f"trial_{') == ["engine/trials.py"]


@pytest.fixture(scope="module")
def env_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("env")
    with FakeEndpoint() as ep, pytest.MonkeyPatch.context() as mp:
        mp.setenv("OPENAI_BASE_URL", ep.base_url)
        gen = CliRunner().invoke(app, ["generate", "--config", "tiny", "--users", "1", "--out", str(root)])
    assert gen.exit_code == 0, gen.output
    return root / "data.json"


def test_statetrack_trials_run_through_the_engine_loop(env_file: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[dict[str, Any]] = []
    real = engine_trials.run_trials

    def spy(out_dir: Path, trials: int, base_seed: int, play: Any, **kw: Any) -> list[int]:
        def watched(k: int, seed: int, d: Path) -> int:
            held = (Path(out_dir) / ".amemgym.lock").exists()
            code = play(k, seed, d)
            seen.append({"k": k, "seed": seed, "dir": d.name, "out_held": held})
            return code

        return real(out_dir, trials, base_seed, watched, **kw)

    monkeypatch.setattr(statetrack_command, "run_trials", spy)  # the engine loop the statetrack command calls
    monkeypatch.setenv("AMEMGYM_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "out"
    with FakeEndpoint() as ep:
        monkeypatch.setenv("OPENAI_BASE_URL", ep.base_url)
        res = CliRunner().invoke(app, ["run", "--env", str(env_file), "--config", "tiny", "--agent", "native",
                                       "--out", str(out), "--trials", "2"])
    assert res.exit_code == 0, res.output
    assert seen == [{"k": 1, "seed": 0, "dir": "trial_1", "out_held": True},
                    {"k": 2, "seed": 1, "dir": "trial_2", "out_held": True}]
    summary = json.loads((out / "trials.json").read_text())
    assert [t["trial"] for t in summary["trials"]] == ["trial_1", "trial_2"]
    assert engine_trials.is_trials_dir(out) and engine_trials.trial_run_dirs(out) == [out / "trial_1", out / "trial_2"]


def test_a_trials_run_refused_before_its_first_trial_leaves_no_folder(env_file: Path, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    out = tmp_path / "out"
    res = CliRunner().invoke(app, ["run", "--env", str(env_file), "--config", "tiny", "--agent", "native",
                                   "--out", str(out), "--trials", "2", "--set", "llm.default.max_retries=0"])
    assert res.exit_code == 2, res.output
    assert not out.exists()


#: The one module outside engine/ that may use each name, and why.
_ADOPTERS = {".write_manifest(": ["families/budget/legacy.py"]}  # a pre-engine budget folder, through UnitRunDir


@pytest.mark.parametrize("name", [
    "UsageBook(", "pin_models(", ".write_manifest(", ".write_metrics(", ".write_failures(", "run_in_workers(",
    "run_on_ray(", "flush_forever(", "run_lock(out_dir, \"amemgym run\")",
])
def test_only_the_engine_runs_a_run(name: str) -> None:
    # Usage, model pins, root files, executors and the run lock of a run exist once, in engine/, for every
    # family; a family brings its units and hooks (statetrack: families/statetrack/units.py).
    assert [m for m in _modules_with(name) if not m.startswith("engine/")] == _ADOPTERS.get(name, [])


def test_a_statetrack_run_and_a_runner_are_played_by_the_engine(env_file: Path, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio

    from amemgym.agents import resolve_agent
    from amemgym.config import EndpointConfig, LLMConfig, load_config
    from amemgym.engine import runner as engine_runner
    from amemgym.families.statetrack.data import load_environment
    from amemgym.families.statetrack.runner import Runner
    from amemgym.families.statetrack.units import STATETRACK_UNITS
    from amemgym.llm.client import LLMClient

    families: list[str] = []
    real = engine_runner.play_units

    async def spy(family: Any, *args: Any, **kw: Any) -> Any:
        families.append(family.name)
        return await real(family, *args, **kw)

    monkeypatch.setattr(engine_runner, "play_units", spy)
    monkeypatch.setattr("amemgym.families.statetrack.runner.play_units", spy)
    monkeypatch.setenv("AMEMGYM_CACHE_DIR", str(tmp_path / "cache"))
    with FakeEndpoint() as ep:
        monkeypatch.setenv("OPENAI_BASE_URL", ep.base_url)
        res = CliRunner().invoke(app, ["run", "--env", str(env_file), "--config", "tiny", "--agent", "native",
                                       "--out", str(tmp_path / "cli")])
        assert res.exit_code == 0, res.output
        cfg = load_config("tiny")
        cfg.llm = LLMConfig(default=EndpointConfig(base_url=ep.base_url, model="fake-model"), cache=False)

        async def from_code() -> Any:
            llm = LLMClient.from_config(cfg.llm)
            try:
                return await Runner(load_environment(env_file), resolve_agent("native"), tmp_path / "code", cfg,
                                    llm).run()
            finally:
                await llm.aclose()

        outcome = asyncio.run(from_code())
    assert families == [STATETRACK_UNITS.name] * 2
    assert not outcome.failures and outcome.metrics["complete"]
    cli = json.loads((tmp_path / "cli" / "metrics.json").read_text())
    for run in (cli, outcome.metrics):  # statetrack's own shape, written by the engine
        assert {"overall", "per_period", "per_user", "protocol_settings", "usage", "failures", "agent"} <= run.keys()
    manifest = json.loads((tmp_path / "cli" / "manifest.json").read_text())
    assert "family" not in manifest and manifest["users"] and manifest["models"]["simulator"]["served"]
