"""Budget runs resumed with another --env or --trials, export from another folder, and generate's unused flags.

Each case is a refusal in one line (exit 2, nothing written) or a run that keeps working: a resume whose
--env no longer holds an episode the run planned, a single run and a --trials output mixed in one folder,
an episode file recorded relative to where the run started, and generate flags the budget family ignores.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

from amemgym.cli import app
from amemgym.config import AppConfig, load_config
from amemgym.engine.contract import hook
from amemgym.engine.runner import RunOptions, run_units
from amemgym.engine.trials import run_unit_trials
from amemgym.families.budget.generate import build_episode
from amemgym.families.budget.io import save_episode
from amemgym.families.budget.model import Episode
from amemgym.families.budget.units import BudgetUnits
from amemgym.runfiles import LOCK
from amemgym.testing.budget import BudgetScript, client_factory

SEEDS = (0, 1)


@pytest.fixture(scope="module")
def envs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Episode]]:
    """``envs/films/seed0`` and ``envs/films/seed1``, as the bug report generated them."""
    root = tmp_path_factory.mktemp("envs") / "envs"
    episodes = [build_episode("lite", "films", s) for s in SEEDS]
    for ep in episodes:
        save_episode(ep, root / "films" / f"seed{ep.seed}" / "data.json")
    return root, episodes


def run(env: Path, out: Path, episodes: list[Episode], *, limit: int | None = None,
        family: BudgetUnits | None = None) -> tuple[int, str]:
    """One scripted run (no endpoint); its exit code and console text."""
    log = io.StringIO()
    code = run_units(family or BudgetUnits(), load_config("tiny"), env, out,
                     RunOptions(agent="native", serial=True, limit=limit),
                     console=Console(file=log, width=250), make_client=client_factory(BudgetScript(episodes)))
    return code, log.getvalue()


def one_error_line(args: list[str]) -> str:
    """The command's only output line, an error with exit 2; the line with its spaces folded."""
    res = CliRunner().invoke(app, args)
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert res.exit_code == 2 and len(lines) == 1 and lines[0].startswith("error: "), res.output
    return " ".join(lines[0].split())


def tree(root: Path) -> dict[str, bytes]:
    """Every file below ``root`` with its bytes (to show a refusal wrote nothing), but the lock file: a refusal
    looks under the lock for a writer that would explain it better, and the lock file records when."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and p.name != LOCK}


# ---- bug 1: a resume whose --env lacks a planned episode ---------------------------------------------------
def test_a_resume_on_a_subfolder_is_refused_before_anything_is_written(envs: tuple[Path, list[Episode]],
                                                                       tmp_path: Path) -> None:
    env, episodes = envs
    out = tmp_path / "good"
    assert run(env, out, episodes)[0] == 0
    before = tree(out)
    # Before: both episodes played again into out/seed0 and out/seed1, exit 1 and no line saying why.
    line = one_error_line(["run", "--env", str(env / "films"), "--agent", "native", "--out", str(out),
                           "--no-cache"])
    assert "films/seed0" in line and "use a new --out directory" in line and str(env / "films") in line
    assert tree(out) == before
    assert not (out / "seed0").exists()
    # The original command still has nothing to do.
    assert run(env, out, episodes)[0] == 0


def test_a_resume_on_fewer_episodes_is_refused_and_a_growing_plan_still_runs(envs: tuple[Path, list[Episode]],
                                                                            tmp_path: Path) -> None:
    env, episodes = envs
    out = tmp_path / "out"
    assert run(env, out, episodes, limit=1)[0] == 0
    code, log = run(env, out, episodes)  # the plan grows: the second episode is added
    assert code == 0, log
    manifest = json.loads((out / "manifest.json").read_text())
    assert [u["id"] for u in manifest["units"]] == ["films/seed0", "films/seed1"]
    assert "done earlier (skipped)" in log
    line = one_error_line(["run", "--env", str(env), "--agent", "native", "--out", str(out), "--limit", "1"])
    assert "films/seed1" in line and "--limit" in line


def test_a_resume_on_a_single_episode_file_is_refused(envs: tuple[Path, list[Episode]], tmp_path: Path) -> None:
    env, episodes = envs
    out = tmp_path / "out"
    assert run(env, out, episodes)[0] == 0
    line = one_error_line(["run", "--env", str(env / "films" / "seed0" / "data.json"), "--agent", "native",
                           "--out", str(out)])
    assert "films/seed0" in line and "holds a run with a different environment" in line


class Unfinished(BudgetUnits):
    """Budget units whose metrics call the run incomplete although no episode failed."""

    def run_metrics(self, units: Sequence[Any], root: Path, found: Sequence[Any], cfg: AppConfig) -> dict[str, Any]:
        metrics = dict(hook(BudgetUnits(), "run_metrics")(units, root, found, cfg))
        return {**metrics, "complete": False, "missing": ["films/seed9"]}


def test_an_incomplete_run_without_failures_says_why_it_exits_1(envs: tuple[Path, list[Episode]],
                                                                tmp_path: Path) -> None:
    env, episodes = envs
    code, log = run(env, tmp_path / "out", episodes, family=Unfinished())
    assert code == 1
    flat = " ".join(log.split())
    assert "not complete" in flat and "films/seed9" in flat


# ---- bug 2: a single run and --trials output in one folder --------------------------------------------------
def test_trials_into_a_single_run_and_back_are_refused(envs: tuple[Path, list[Episode]], tmp_path: Path) -> None:
    env, episodes = envs
    single = tmp_path / "single"
    assert run(env, single, episodes)[0] == 0
    before = tree(single)
    line = one_error_line(["run", "--env", str(env), "--agent", "native", "--out", str(single), "--trials", "2"])
    assert "holds a single run (manifest.json); --trials 2 would add trial folders" in line
    assert tree(single) == before

    trials = tmp_path / "trials"
    code = run_unit_trials(BudgetUnits(), load_config("tiny"), env, trials, RunOptions(agent="native", serial=True),
                           2, console=Console(file=io.StringIO()),
                           make_client=client_factory(BudgetScript(episodes)))
    assert code == 0
    before = tree(trials)
    for extra in ([], ["--trials", "1"]):
        line = one_error_line(["run", "--env", str(env), "--agent", "native", "--out", str(trials), *extra])
        assert "holds a --trials output (2 trials); re-run it with --trials 2" in line
    assert tree(trials) == before


# ---- bug 4: export from another working directory -------------------------------------------------------------
@pytest.fixture
def elsewhere(tmp_path: Path) -> Iterator[Path]:
    """A working directory of its own, restored afterwards."""
    here = Path.cwd()
    (tmp_path / "start").mkdir()
    os.chdir(tmp_path / "start")
    try:
        yield tmp_path / "start"
    finally:
        os.chdir(here)


def test_export_finds_the_episode_from_any_folder(elsewhere: Path, tmp_path: Path) -> None:
    episodes = [build_episode("lite", "films", s) for s in SEEDS]
    for ep in episodes:
        save_episode(ep, elsewhere / "envs" / "films" / f"seed{ep.seed}" / "data.json")
    assert run(Path("envs"), Path("good"), episodes)[0] == 0  # paths relative to the folder the run started in
    os.chdir(tmp_path)
    res = CliRunner().invoke(app, ["export", str(elsewhere / "good"), "-o", str(tmp_path / "x.jsonl")])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "x.jsonl").read_text().count("\n") > 0


def test_an_old_run_with_a_relative_episode_path_exports_from_its_folder(elsewhere: Path, tmp_path: Path) -> None:
    episodes = [build_episode("lite", "films", 0)]
    save_episode(episodes[0], elsewhere / "envs" / "films" / "seed0" / "data.json")
    assert run(Path("envs"), Path("good"), episodes)[0] == 0
    results = elsewhere / "good" / "films" / "seed0" / "results.json"
    record = json.loads(results.read_text())
    results.write_text(json.dumps({**record, "environment_file": "envs/films/seed0/data.json"}))  # as before
    res = CliRunner().invoke(app, ["export", "good", "-o", str(tmp_path / "x.jsonl")])
    assert res.exit_code == 0, res.output
    os.chdir(tmp_path)
    line = one_error_line(["export", str(elsewhere / "good"), "-o", str(tmp_path / "y.jsonl")])
    assert "envs/films/seed0/data.json" in line and "relative" in line


# ---- bug 5: generate flags the budget family does not use ----------------------------------------------------
GENERATE = ["generate", "--family", "budget"]
UNUSED: Mapping[str, tuple[list[str], str]] = {
    "missing config": (["--domain", "films", "--config", "nonexist.yaml"], "nonexist.yaml"),
    "unknown setting": (["--domain", "films", "--set", "foo.bar=1"], "foo"),
    "official with domain": (["--official", "--domain", "films"], "--domain"),
    "official with seed": (["--official", "--seed", "7"], "--seed"),
}


@pytest.mark.parametrize("case", sorted(UNUSED))
def test_generate_refuses_flags_it_would_ignore(case: str, tmp_path: Path) -> None:
    args, named = UNUSED[case]
    line = one_error_line([*GENERATE, *args, "--out", str(tmp_path / "o")])
    assert named in line
    assert not (tmp_path / "o").exists()


def test_generate_still_takes_a_valid_config_and_setting(tmp_path: Path) -> None:
    res = CliRunner().invoke(app, [*GENERATE, "--domain", "films", "--config", "tiny", "--set", "run.seed=3",
                                   "--out", str(tmp_path / "o")])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "o" / "data.json").is_file()
