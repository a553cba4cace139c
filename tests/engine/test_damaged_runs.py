"""A run below a folder given to a reader that cannot be read whole is named and refused, never left out.

A manifest that cannot be read names no family, so without the check ``runs_under`` would not see its run:
one trial of a ``--trials`` output, or one run of a folder of runs, would silently leave the board, the report
and the comparison. A trial folder that ``trials.json`` lists and that is gone would likewise pool the trials
as fewer.
"""

from __future__ import annotations

import csv
import io
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from amemgym.cli import app
from amemgym.families.budget.generate import build_episode
from amemgym.families.budget.io import save_episode
from amemgym.testing.fake_endpoint import FakeEndpoint


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``runs/one`` (a budget run) and ``runs/two`` (a ``--trials 2`` output) of the native agent."""
    root = tmp_path_factory.mktemp("runs")
    env = root / "env" / "data.json"
    save_episode(build_episode("lite", "films", 0), env)
    with FakeEndpoint() as ep, pytest.MonkeyPatch.context() as mp:
        mp.setenv("OPENAI_BASE_URL", ep.base_url)
        mp.setenv("AMEMGYM_CACHE_DIR", str(root / "cache"))
        for name, extra in (("one", []), ("two", ["--trials", "2"])):
            res = CliRunner().invoke(app, ["run", "--env", str(env), "--agent", "native",
                                           "--out", str(root / "runs" / name), *extra])
            assert res.exit_code == 0, res.output
    return root / "runs"


def flat(text: str) -> str:
    return " ".join(text.split())


def board(*dirs: Path) -> tuple[int, str, list[dict[str, str]]]:
    out = dirs[0].parent / "board.csv"
    out.unlink(missing_ok=True)
    res = CliRunner().invoke(app, ["leaderboard", *map(str, dirs), "--out-csv", str(out)], env={"COLUMNS": "1000"})
    rows = list(csv.DictReader(io.StringIO(out.read_text()))) if out.exists() else []
    return res.exit_code, flat(res.output), rows


def test_the_healthy_runs_are_boarded_with_every_trial(runs: Path) -> None:
    code, _, rows = board(runs / "one", runs / "two")
    assert code == 0 and [(r["run"], r["trials"]) for r in rows] == [("one", "1"), ("two", "2")]
    code, _, rows = board(runs)
    assert code == 0 and [r["trials"] for r in rows] == ["2"]  # the folder's runs pooled as one label


@pytest.mark.parametrize("content", ['{"fam', "[]", '"a string"'])
@pytest.mark.parametrize("where", ["two/trial_2", "one"])
def test_a_damaged_manifest_below_a_given_folder_is_named(runs: Path, tmp_path: Path, content: str,
                                                          where: str) -> None:
    copy = tmp_path / "runs"
    shutil.copytree(runs, copy)
    (copy / where / "manifest.json").write_text(content)
    name = str(copy / where / "manifest.json")
    code, output, rows = board(copy)
    assert code == 2 and name in output and rows == [], output
    # Beside a readable run, the damaged one is not boarded (named with its file, also in the CSV); the other
    # is still ranked, as on the statetrack board.
    # (A folder given whose own manifest is damaged is refused up front, for either family: it names no family.)
    code, output, rows = board(copy / "one", copy / "two")
    if where == "one":
        assert code == 2 and name in output and rows == [], output
    else:
        assert code == 0 and f"not boarded: {copy / 'two'}: {name}" in output, output
        assert [(r["run"], r["rank"]) for r in rows] == [("one", "1"), ("two", "")]
        assert name in rows[1]["flags"]
    target = copy / where.split("/")[0]
    res = CliRunner().invoke(app, ["report", str(target), "--out", str(tmp_path / "r.html")])
    assert res.exit_code == 2 and name in flat(res.output)
    res = CliRunner().invoke(app, ["compare", str(copy / "one"), str(copy / "two")])
    assert res.exit_code == 2 and name in flat(res.output)


@pytest.mark.parametrize("damage", ["folder gone", "manifest gone", "summary not a list"])
def test_a_trials_output_missing_a_listed_trial_is_named(runs: Path, tmp_path: Path, damage: str) -> None:
    copy = tmp_path / "runs"
    shutil.copytree(runs, copy)
    summary = copy / "two" / "trials.json"
    if damage == "folder gone":
        shutil.rmtree(copy / "two" / "trial_2")
    elif damage == "manifest gone":
        (copy / "two" / "trial_2" / "manifest.json").unlink()
    else:
        summary.write_text('{"trials": {"trial": "trial_1"}}')
    why = "not a trials summary" if damage == "summary not a list" else "lists trial_2, which holds no run any more"
    code, output, rows = board(copy)
    assert code == 2 and f"{summary}" in output and why in output and rows == [], output
    code, output, rows = board(copy / "one", copy / "two")  # beside a readable run: listed, not boarded
    assert code == 0 and f"not boarded: {copy / 'two'}: {summary}" in output and why in output, output
    assert [(r["run"], r["rank"]) for r in rows] == [("one", "1"), ("two", "")]
    res = CliRunner().invoke(app, ["compare", str(copy / "one"), str(copy / "two")])
    assert res.exit_code == 2 and why in flat(res.output)


def test_a_statetrack_trials_output_missing_a_listed_trial_is_not_boarded(tmp_path: Path) -> None:
    with FakeEndpoint() as ep, pytest.MonkeyPatch.context() as mp:
        mp.setenv("OPENAI_BASE_URL", ep.base_url)
        mp.setenv("AMEMGYM_CACHE_DIR", str(tmp_path / "cache"))
        for name, extra in (("a", []), ("t", ["--trials", "2"])):
            res = CliRunner().invoke(app, ["run", "--config", "tiny", "--agent", "native",
                                           "--out", str(tmp_path / name), *extra])
            assert res.exit_code == 0, res.output
    code, output, rows = board(tmp_path / "a", tmp_path / "t")
    assert code == 0 and [r["run"] for r in rows] == ["a", "t"]
    shutil.rmtree(tmp_path / "t" / "trial_2")
    code, output, rows = board(tmp_path / "a", tmp_path / "t")
    assert code == 0 and [r["run"] for r in rows] == ["a", "t"] and rows[1]["rank"] == ""
    assert rows[1]["flags"].startswith("not boarded: ") and "lists trial_2" in rows[1]["flags"]
    assert f"not boarded: {tmp_path / 't'}: {tmp_path / 't' / 'trials.json'} lists trial_2" in output
    res = CliRunner().invoke(app, ["report", str(tmp_path / "t"), "--out", str(tmp_path / "r.html")])
    assert res.exit_code == 2 and "lists trial_2, which holds no run any more" in flat(res.output)
