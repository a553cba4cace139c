"""A --trials output works in report, leaderboard and compare: pooled, with spread and pass^k."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest
from typer.testing import CliRunner

from amemgym.cli import app
from amemgym.report.leaderboard import leaderboard
from amemgym.report.load import load_run, load_runs
from amemgym.testing.fake_endpoint import FakeEndpoint


@pytest.fixture(scope="module")
def trials_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("trials")
    mp = pytest.MonkeyPatch()
    mp.setenv("AMEMGYM_CACHE_DIR", str(root / "cache"))
    try:
        with FakeEndpoint() as ep:
            mp.setenv("OPENAI_BASE_URL", ep.base_url)
            env_dir = root / "env"
            gen = CliRunner().invoke(app, ["generate", "--config", "tiny", "--users", "3", "--out", str(env_dir)])
            assert gen.exit_code == 0, gen.output
            env = env_dir / "data.json"
            for name, trials in (("three", "3"), ("single", "1")):
                res = CliRunner().invoke(app, ["run", "--env", str(env), "--config", "tiny", "--agent", "native",
                                               "--out", str(root / name), "--trials", trials])
                assert res.exit_code == 0, res.output
    finally:
        mp.undo()
    return root / "three", root / "single"


def _user_means(cells_by_trial: list[dict[str, dict[str, dict]]], name: str) -> list[float]:
    users = sorted(cells_by_trial[0])
    out = []
    for u in users:
        xs = [c[name] for per_user in cells_by_trial for c in per_user[u].values() if c[name] is not None]
        out.append(statistics.fmean(xs))
    return out


def test_pooled_numbers_match_the_trials(trials_run: tuple[Path, Path]) -> None:
    three, _ = trials_run
    rec = load_run(three)
    assert [p.name for p in rec.trials] == ["trial_1", "trial_2", "trial_3"]
    per_trial = [json.loads((three / f"trial_{k}" / "metrics.json").read_text()) for k in (1, 2, 3)]
    cells = [m["per_user"] for m in per_trial]
    # Every trial asks the same questions, so the pooled user mean is the mean of the trials' cells.
    assert rec.metrics["overall"]["overall"]["mean"] == pytest.approx(statistics.fmean(_user_means(cells, "overall")))
    assert rec.metrics["overall"]["users"] == 3 and rec.metrics["complete"]
    trials = rec.metrics["trials"]
    assert trials["k"] == 3 and trials["seeds"] == [0, 1, 2]
    scores = [m["overall"]["overall"]["mean"] for m in per_trial]
    assert trials["spread"]["overall"]["std"] == pytest.approx(statistics.stdev(scores))
    # pass^k recomputed from the evaluation files.
    right: dict[tuple[str, int, int], list[bool]] = {}
    for k in (1, 2, 3):
        for ev in (three / f"trial_{k}" / "users").glob("*/eval/*.json"):
            rec_ = json.loads(ev.read_text())
            for q in rec_["questions"]:
                right.setdefault((ev.parts[-3], rec_["period"], q["question"]), []).append(q["score"] >= 1.0)
    assert right and all(len(v) == 3 for v in right.values())
    assert trials["questions_in_all_trials"] == len(right)
    assert trials["consistency"] == pytest.approx(statistics.fmean(all(v) for v in right.values()))
    assert trials["pass_at_1"] == pytest.approx(statistics.fmean(x for v in right.values() for x in v))
    assert trials["consistency"] <= trials["pass_at_1"]


def test_report_leaderboard_and_compare_accept_a_trials_dir(trials_run: tuple[Path, Path], tmp_path: Path) -> None:
    three, single = trials_run
    rep = CliRunner().invoke(app, ["report", str(three), str(single), "--out", str(tmp_path / "r.html")])
    assert rep.exit_code == 0, rep.output
    assert "3 trials pooled" in rep.output and "pass^3" in (tmp_path / "r.html").read_text()
    board = CliRunner().invoke(app, ["leaderboard", str(three), str(single), "--out-csv", str(tmp_path / "b.csv")])
    assert board.exit_code == 0, board.output
    rows = (tmp_path / "b.csv").read_text().splitlines()[1:]
    assert len(rows) == 2 and {r.split(",")[0] for r in rows} == {"1"}  # one group: same env and protocol
    assert "3 trials pooled" in (tmp_path / "b.csv").read_text()
    cmp = CliRunner().invoke(app, ["compare", str(single), str(three)])
    assert cmp.exit_code == 0, cmp.output
    assert "shared users / cells" in cmp.output and "3 / " in cmp.output


def test_trial_folders_given_one_by_one_share_one_group(trials_run: tuple[Path, Path]) -> None:
    three, _ = trials_run
    entries = leaderboard(load_runs([three / "trial_1", three / "trial_2", three / "trial_3"]))
    assert {e.group for e in entries} == {1} and len(entries) == 3
    # The fake model is degenerate (upper bound near random), so none is ranked; each carries the reason.
    assert all(e.rank is not None or any("DEGENERATE" in f for f in e.flags) for e in entries)


def test_a_trials_dir_whose_environment_is_gone_says_so(trials_run: tuple[Path, Path], tmp_path: Path) -> None:
    three, _ = trials_run
    copy = tmp_path / "moved"
    for k in (1, 2):
        d = copy / f"trial_{k}"
        d.mkdir(parents=True)
        manifest = json.loads((three / f"trial_{k}" / "manifest.json").read_text())
        manifest["environment_file"] = str(tmp_path / "gone.json")
        (d / "manifest.json").write_text(json.dumps(manifest))
        (d / "metrics.json").write_text((three / f"trial_{k}" / "metrics.json").read_text())
    res = CliRunner().invoke(app, ["leaderboard", str(copy)])
    assert res.exit_code == 2 and "cannot pool the trials" in res.output and "Traceback" not in res.output


def test_a_degenerate_trial_keeps_the_pool_flagged(trials_run: tuple[Path, Path], tmp_path: Path) -> None:
    import shutil

    three, _ = trials_run
    copy = tmp_path / "three"
    shutil.copytree(three, copy)
    path = copy / "trial_2" / "metrics.json"
    metrics = json.loads(path.read_text())
    metrics["overall"]["flags"] = ["simulator_echo"]
    path.write_text(json.dumps(metrics))
    pooled = load_run(copy).metrics["overall"]
    assert "simulator_echo" in pooled["flags"] and pooled["degenerate"]


def test_trials_json_names_each_trials_flags(trials_run: tuple[Path, Path], tmp_path: Path) -> None:
    import shutil

    from amemgym.engine.trials import trial_run_dirs
    from amemgym.families.statetrack.trials import write_trial_summary

    three, _ = trials_run
    written = json.loads((three / "trials.json").read_text())
    assert all("flags" in t and "differences_from_original" in t for t in written["trials"])
    copy = tmp_path / "three"
    shutil.copytree(three, copy)
    path = copy / "trial_2" / "metrics.json"
    metrics = json.loads(path.read_text())
    before = [json.loads((copy / f"trial_{k}" / "metrics.json").read_text())["overall"].get("flags") or []
              for k in (1, 2, 3)]
    assert [t["flags"] for t in written["trials"]] == before
    metrics["overall"]["flags"] = ["simulator degenerate"]
    path.write_text(json.dumps(metrics))
    rows = write_trial_summary(copy, trial_run_dirs(copy))["trials"]
    assert [t["flags"] for t in rows] == [before[0], ["simulator degenerate"], before[2]]
    assert json.loads((copy / "trials.json").read_text())["trials"][1]["flags"] == ["simulator degenerate"]


def test_a_trials_output_is_only_ever_resumed_whole(trials_run: tuple[Path, Path], tmp_path: Path) -> None:
    """Found by probing: --trials 2 on a three-trial output wrote a summary of two while every reader pooled three,
    and a plain run into trial_3 ran under trial 1's seed, replaying it from the cache as a "third" sample."""
    import shutil

    three, _ = trials_run
    copy = tmp_path / "three"
    shutil.copytree(three, copy)
    manifest = json.loads((copy / "trial_1" / "manifest.json").read_text())
    env = manifest["environment_file"]
    for args, said in ((["--out", str(copy), "--trials", "2"], "re-run it with --trials 3"),
                       (["--out", str(copy / "trial_3")], "is a trial folder of the --trials output")):
        res = CliRunner().invoke(app, ["run", "--env", env, "--config", "tiny", *args])
        assert res.exit_code == 2 and said in res.output, res.output
    shutil.rmtree(copy / "trial_3")
    shutil.copytree(copy / "trial_1", copy / "trial_3")  # seed 0 twice
    board = CliRunner().invoke(app, ["leaderboard", str(copy)])
    assert board.exit_code == 2 and "ran with the same seed 0" in board.output, board.output


def test_plain_runs_named_like_trials_beside_each_other_are_not_a_trials_output(trials_run: tuple[Path, Path],
                                                                                tmp_path: Path) -> None:
    import shutil

    from amemgym.engine.trials import refuse_mixed_layout

    _, single = trials_run
    shutil.copytree(single, tmp_path / "exp" / "trial_1")  # a plain run someone named trial_1; no trials.json
    refuse_mixed_layout(tmp_path / "exp" / "trial_2", 1)  # not refused
