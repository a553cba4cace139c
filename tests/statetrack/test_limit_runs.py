"""A ``--limit`` run (and a ``--limit --trials`` output) is reported, ranked and compared like any other run."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from amemgym.cli import app
from amemgym.report.load import load_run, load_run_environment
from amemgym.testing.fake_endpoint import FakeEndpoint


@pytest.fixture(scope="module")
def limited(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A 3-user environment; a --limit 2 --trials 2 output, a plain --limit 2 run and a full run."""
    root = tmp_path_factory.mktemp("limit")
    mp = pytest.MonkeyPatch()
    mp.setenv("AMEMGYM_CACHE_DIR", str(root / "cache"))
    try:
        with FakeEndpoint() as ep:
            mp.setenv("OPENAI_BASE_URL", ep.base_url)
            gen = CliRunner().invoke(app, ["generate", "--config", "tiny", "--users", "3", "--out", str(root / "env")])
            assert gen.exit_code == 0, gen.output
            env = root / "env" / "data.json"
            for name, extra in (("trials", ["--limit", "2", "--trials", "2"]), ("single", ["--limit", "2"]),
                                ("full", [])):
                res = CliRunner().invoke(app, ["run", "--env", str(env), "--config", "tiny", "--agent", "native",
                                               "--out", str(root / name), *extra])
                assert res.exit_code == 0, res.output
    finally:
        mp.undo()
    return {"root": root, "env": root / "env" / "data.json", "trials": root / "trials", "single": root / "single",
            "full": root / "full"}


def test_the_manifest_records_the_file_and_the_cut(limited: dict[str, Path]) -> None:
    import hashlib

    manifest = json.loads((limited["single"] / "manifest.json").read_text())
    cut = manifest["environment_cut"]
    assert cut["limit"] == 2 and cut["file_sha256"] == hashlib.sha256(limited["env"].read_bytes()).hexdigest()
    assert cut["file_sha256"] != manifest["protocol"]["environment_sha256"]
    assert json.loads((limited["full"] / "manifest.json").read_text()).get("environment_cut") is None


def test_a_limited_run_keeps_its_true_states(limited: dict[str, Path]) -> None:
    env, why = load_run_environment(load_run(limited["single"]))
    assert why is None and env is not None and len(env.users) == 2


def test_a_limit_trials_output_reports_ranks_and_compares(limited: dict[str, Path], tmp_path: Path) -> None:
    trials, single = limited["trials"], limited["single"]
    rep = CliRunner().invoke(app, ["report", str(trials), str(single), "--out", str(tmp_path / "r.html")])
    assert rep.exit_code == 0, rep.output
    assert "true states not shown" not in rep.output and "2 trials pooled" in rep.output
    board = CliRunner().invoke(app, ["leaderboard", str(trials), str(single), "--out-csv", str(tmp_path / "b.csv")])
    assert board.exit_code == 0, board.output
    rows = (tmp_path / "b.csv").read_text().splitlines()[1:]
    assert len(rows) == 2 and {r.split(",")[0] for r in rows} == {"1"}  # same users, same protocol: one group
    cmp = CliRunner().invoke(app, ["compare", str(single), str(trials)])
    assert cmp.exit_code == 0, cmp.output
    assert "2 / " in cmp.output


def test_an_edited_file_outside_the_cut_still_matches(limited: dict[str, Path], tmp_path: Path) -> None:
    users = json.loads(limited["env"].read_text())
    users[2]["id"] = "renamed-user"  # the third user, outside the cut, is changed
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(users))
    env, why = load_run_environment(load_run(limited["single"]), edited)
    assert why is None and env is not None and [u.id for u in env.users] == [u["id"] for u in users[:2]]


def test_a_changed_user_inside_the_cut_does_not_match(limited: dict[str, Path], tmp_path: Path) -> None:
    users = json.loads(limited["env"].read_text())
    users[0], users[2] = users[2], users[0]
    swapped = tmp_path / "swapped.json"
    swapped.write_text(json.dumps(users))
    env, why = load_run_environment(load_run(limited["single"]), swapped)
    assert env is None and why and "does not match" in why and "first 2 users" in why


def test_one_bad_folder_does_not_sink_the_board(limited: dict[str, Path], tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    shutil.copytree(limited["single"], broken)
    (broken / "metrics.json").write_text("{not json")
    empty = tmp_path / "empty"
    empty.mkdir()
    res = CliRunner().invoke(app, ["leaderboard", str(limited["single"]), str(broken), str(empty),
                                   str(limited["full"]), "--out-csv", str(tmp_path / "b.csv")], env={"COLUMNS": "300"})
    assert res.exit_code == 0, res.output
    rows = list(csv.DictReader((tmp_path / "b.csv").open()))
    boarded = [r for r in rows if not r["flags"].startswith("not boarded")]
    assert len(boarded) == 2  # the two good runs are boarded; the CSV lists the other two as not boarded
    assert sorted(r["run"] for r in rows if r not in boarded) == ["broken", "empty"]
    assert "not boarded" in res.output and "broken" in res.output and "empty" in res.output
    assert "metrics.json" in res.output  # the reason names the bad file


def test_nothing_boardable_still_exits_2(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    res = CliRunner().invoke(app, ["leaderboard", str(empty)])
    assert res.exit_code == 2 and "Traceback" not in res.output
