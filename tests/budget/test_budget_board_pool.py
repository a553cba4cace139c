"""The budget board pools episodes per agent: the means, intervals and ranks it must never get wrong."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from amemgym.cli import app
from amemgym.families import get_family
from amemgym.scoring.intervals import mean_ci


def result(root: Path, *, agent: str, composite: float | None, tier: str = "lite", seed: int = 0,
           run_seed: int | None = 0, model: str = "m", domain: str = "films", salt: int = 0) -> Path:
    """A budget results.json as the harness writes it (only the fields the board reads)."""
    root.mkdir(parents=True, exist_ok=True)
    axes = {k: composite for k in ("breadth", "maintenance", "reasoning", "efficiency")}
    data = {"family": "budget", "format_version": 1, "agent": agent, "policy": "budget", "store": "notes",
            "agent_model": model, "tier": tier, "domain": domain, "seed": seed, "salt": salt, "run_seed": run_seed,
            "environment_sha256": f"sha-{tier}-{domain}-{seed}-{salt}", "search_embedder_problem": None,
            "answers": {"q1": {"correct": bool(composite and composite > 0.5)}},
            "score": {**axes, "composite": composite, "abstention": 1.0, "accuracy": composite,
                      "writes_used": 10, "reference_writes": 12}}
    (root / "results.json").write_text(json.dumps(data))
    return root


def board_rows(*roots: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(get_family("budget").leaderboard(list(roots)).csv)))


def test_one_row_per_agent_is_the_mean_over_its_episodes_with_a_t_interval(tmp_path: Path) -> None:
    for seed, c in enumerate((0.5, 0.6, 0.75)):
        result(tmp_path / "a" / "films" / f"seed{seed}", agent="a", composite=c, seed=seed)
    (row,) = board_rows(tmp_path / "a")
    ci = mean_ci([0.5, 0.6, 0.75])
    assert 0 < ci["lo"] and ci["hi"] < 1  # type: ignore[operator]
    assert float(row["composite"]) == ci["mean"] and row["episodes"] == "3" and row["trials"] == "1"
    assert row["composite 95% CI"] == f"[{ci['lo']:.3f}, {ci['hi']:.3f}]"


def test_tiers_are_never_averaged_together(tmp_path: Path) -> None:
    result(tmp_path / "a" / "lite", agent="a", composite=0.2, tier="lite")
    result(tmp_path / "a" / "std", agent="a", composite=0.8, tier="standard")
    rows = board_rows(tmp_path / "a")
    assert sorted((r["tier"], float(r["composite"])) for r in rows) == [("lite", 0.2), ("standard", 0.8)]
    assert rows[0]["group"] != rows[1]["group"]


def test_rows_over_different_episode_sets_are_never_ranked_against_each_other(tmp_path: Path) -> None:
    # B scores higher on the easy episodes it ran, but A also ran a hard one: ranking them together is unfair.
    result(tmp_path / "a" / "e0", agent="a", composite=0.6, seed=0)
    result(tmp_path / "a" / "e1", agent="a", composite=0.6, seed=1)
    result(tmp_path / "a" / "e2", agent="a", composite=0.0, seed=2)
    result(tmp_path / "b" / "e0", agent="b", composite=0.5, seed=0)
    result(tmp_path / "b" / "e1", agent="b", composite=0.5, seed=1)
    board = get_family("budget").leaderboard([tmp_path / "a", tmp_path / "b"])
    rows = list(csv.DictReader(io.StringIO(board.csv)))
    assert rows[0]["group"] != rows[1]["group"]
    assert any("ran different sets of episodes" in n and "not comparable" in n for n in board.notes)
    # On the same episodes they are ranked together, A first.
    result(tmp_path / "b" / "e2", agent="b", composite=0.0, seed=2)
    rows = board_rows(tmp_path / "a", tmp_path / "b")
    assert [(r["group"], r["rank"], r["agent"]) for r in rows] == [("1", "1", "a"), ("1", "2", "b")]


def test_trials_are_averaged_within_an_episode_and_the_interval_is_over_episodes(tmp_path: Path) -> None:
    for k, (c0, c1) in enumerate(((0.2, 0.6), (0.4, 0.8)), start=1):
        result(tmp_path / "t" / f"trial_{k}" / "films" / "seed0", agent="a", composite=c0, seed=0, run_seed=k - 1)
        result(tmp_path / "t" / f"trial_{k}" / "films" / "seed1", agent="a", composite=c1, seed=1, run_seed=k - 1)
    board = get_family("budget").leaderboard([tmp_path / "t"])
    (row,) = list(csv.DictReader(io.StringIO(board.csv)))
    ci = mean_ci([0.3, 0.7])  # two episodes, each the mean of its two trials; never four samples
    assert float(row["composite"]) == ci["mean"] and row["episodes"] == "2" and row["trials"] == "2"
    lo, hi = max(0.0, ci["lo"]), min(1.0, ci["hi"])  # type: ignore[type-var]
    assert row["composite 95% CI"] == f"[{lo:.3f}, {hi:.3f}]"
    four = mean_ci([0.2, 0.4, 0.6, 0.8])  # what treating trials as episodes would give
    assert row["composite 95% CI"] != f"[{max(0.0, four['lo']):.3f}, {min(1.0, four['hi']):.3f}]"  # type: ignore
    # q1 is right in both trials of episode 1 only (0.6, 0.8) and in neither of episode 0: pass^2 = 0.5.
    assert any("2 trials averaged per episode" in n and "pass^2 over questions 0.500" in n for n in board.notes)


def test_different_models_behind_one_agent_name_are_separate_rows(tmp_path: Path) -> None:
    result(tmp_path / "x", agent="native", composite=0.9, model="big")
    result(tmp_path / "y", agent="native", composite=0.1, model="small")
    rows = board_rows(tmp_path / "x", tmp_path / "y")
    assert [(r["model"], r["rank"]) for r in rows] == [("big", "1"), ("small", "2")]


def planned_run(out: Path, *, agent: str, done: dict[int, float], planned: int, complete: bool | None = True,
                missing: tuple[int, ...] = ()) -> Path:
    """A run directory as the engine leaves it: a manifest planning ``planned`` films episodes (listing every
    configured role, the agent's with its served model, as a real run does), the results of ``done`` (seed ->
    composite), and a ``metrics.json`` saying ``complete`` (None: none written, as when the run was killed)."""
    for seed, composite in done.items():
        result(out / "films" / f"seed{seed}", agent=agent, composite=composite, seed=seed)
    roles = {"generator": {"backend": "openai", "model": "m"}, "agent": {"backend": "openai", "model": "m",
                                                                          "served": "m"}}
    (out / "manifest.json").write_text(json.dumps({
        "format_version": 2, "family": "budget", "amemgym_version": "test", "protocol": {"agent": agent},
        "models": roles,
        "units": [{"id": f"films/seed{s}", "sha256": f"sha-lite-films-{s}", "group": "lite",
                   "label": f"lite/films/seed{s}"} for s in range(planned)]}))
    if complete is not None:
        (out / "metrics.json").write_text(json.dumps({
            "format_version": 2, "family": "budget", "complete": complete,
            "missing": [f"films/seed{s}" for s in missing]}))
    return out


def test_an_unfinished_multi_episode_run_is_listed_but_not_ranked(tmp_path: Path) -> None:
    out = planned_run(tmp_path / "run", agent="a", done={0: 0.9}, planned=2, complete=False, missing=(1,))
    result(tmp_path / "other", agent="b", composite=0.1, seed=0)
    rows = board_rows(out, tmp_path / "other")
    assert [(r["agent"], r["rank"]) for r in rows] == [("b", "1"), ("a", "-")]
    assert "unfinished: 1 planned episode" in rows[1]["flags"]


def test_a_run_killed_after_its_first_episode_is_listed_but_not_ranked(tmp_path: Path) -> None:
    # A --limit 3 run killed after one episode: no metrics.json, two planned episodes without results.
    killed = planned_run(tmp_path / "killed", agent="a", done={0: 0.9}, planned=3, complete=None)
    rows = board_rows(killed)
    assert [(r["rank"], r["episodes"]) for r in rows] == [("-", "1")]
    assert "unfinished: 2 planned episode(s) have no results" in rows[0]["flags"]
    res = CliRunner().invoke(app, ["leaderboard", str(killed), "--out-md", str(tmp_path / "b.md")])
    assert res.exit_code == 0, res.output
    assert "| - | killed |" in (tmp_path / "b.md").read_text()


def test_a_run_whose_metrics_say_it_is_not_complete_is_never_ranked(tmp_path: Path) -> None:
    # Every results.json is there, but metrics.json lists an episode as missing.
    listed = planned_run(tmp_path / "listed", agent="a", done={0: 0.9, 1: 0.9}, planned=2, complete=False,
                         missing=(1,))
    # Every results.json is there, but the run never wrote metrics.json, or wrote it saying it is not complete.
    unwritten = planned_run(tmp_path / "unwritten", agent="b", done={0: 0.9, 1: 0.9}, planned=2, complete=None)
    unsaid = planned_run(tmp_path / "unsaid", agent="c", done={0: 0.9, 1: 0.9}, planned=2, complete=False)
    # metrics.json says complete, but one episode's results.json is gone.
    lost = planned_run(tmp_path / "lost", agent="d", done={0: 0.9}, planned=2)
    finished = planned_run(tmp_path / "finished", agent="e", done={0: 0.2, 1: 0.2}, planned=2)
    rows = {r["agent"]: r for r in board_rows(listed, unwritten, unsaid, lost, finished)}
    assert {a: r["rank"] for a, r in rows.items()} == {"a": "-", "b": "-", "c": "-", "d": "-", "e": "1"}
    assert "unfinished: 1 planned episode" in rows["a"]["flags"]
    assert "incomplete:" in rows["b"]["flags"] and "metrics.json is missing" in rows["b"]["flags"]
    assert "incomplete:" in rows["c"]["flags"] and "not complete" in rows["c"]["flags"]
    assert "unfinished: 1 planned episode" in rows["d"]["flags"]
    assert rows["e"]["flags"] == ""


def refused(args: list[str], *needles: str) -> None:
    """The command exits 2 with one error line holding every needle."""
    res = CliRunner().invoke(app, args)
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert res.exit_code == 2 and len(lines) == 1 and lines[0].startswith("error: "), res.output
    assert all(n in lines[0] for n in needles), lines[0]


@pytest.mark.parametrize(("field", "value", "problem"), [
    ("composite", 7, "less than or equal to 1"), ("breadth", -0.5, "greater than or equal to 0"),
    ("composite", float("nan"), "finite number"), ("efficiency", "0.9", "valid number"),
    ("writes_used", -3, "greater than or equal to 0")])
def test_a_hand_edited_score_is_refused_naming_file_and_field(tmp_path: Path, field: str, value: object,
                                                              problem: str) -> None:
    edited = result(tmp_path / "a" / "e0", agent="a", composite=0.5) / "results.json"
    result(tmp_path / "b" / "e0", agent="b", composite=0.4)
    data = json.loads(edited.read_text())
    data["score"][field] = value
    edited.write_text(json.dumps(data))
    refused(["compare", str(tmp_path / "a"), str(tmp_path / "b")], str(edited), f"score.{field}", problem)
    refused(["leaderboard", str(tmp_path / "a")], str(edited), f"score.{field}", problem)
    # Beside a readable run it is not boarded, named with its file and field, and the other run is still ranked.
    res = CliRunner().invoke(app, ["leaderboard", str(tmp_path / "a"), str(tmp_path / "b"),
                                   "--out-csv", str(tmp_path / "b.csv")], env={"COLUMNS": "400"})
    text = " ".join(res.output.split())
    assert res.exit_code == 0 and f"not boarded: {tmp_path / 'a'}: {edited}: score.{field}: " in text, text
    assert problem in text
    rows = list(csv.DictReader(io.StringIO((tmp_path / "b.csv").read_text())))
    assert [(r["run"], r["rank"]) for r in rows] == [("b", "1"), ("a", "")]


def test_a_metrics_file_whose_complete_is_not_a_boolean_is_refused(tmp_path: Path) -> None:
    run = planned_run(tmp_path / "run", agent="a", done={0: 0.9}, planned=1)
    metrics = json.loads((run / "metrics.json").read_text())
    (run / "metrics.json").write_text(json.dumps({**metrics, "complete": "yes"}))
    refused(["leaderboard", str(run)], str(run / "metrics.json"), "complete", "valid boolean")


def test_compare_averages_the_trials_of_each_episode(tmp_path: Path) -> None:
    for k in (1, 2):
        result(tmp_path / "a" / f"trial_{k}" / "e0", agent="a", composite=0.2 * k, seed=0, run_seed=k - 1)
        result(tmp_path / "a" / f"trial_{k}" / "e1", agent="a", composite=0.4 * k, seed=1, run_seed=k - 1)
    result(tmp_path / "b" / "e0", agent="b", composite=0.5, seed=0)
    result(tmp_path / "b" / "e1", agent="b", composite=0.5, seed=1)
    res = CliRunner().invoke(app, ["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--bootstrap", "200"])
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    # A per episode: 0.3 and 0.6 (mean 0.45); B 0.5: +0.05.
    assert "mean difference │ +0.0500" in text and "2 / 1" in text


def test_compare_pairs_episodes_that_share_a_label_by_their_file(tmp_path: Path) -> None:
    # Salts 0 and 1 of lite/films/seed0 are two episodes under one label; pairing by label kept one of them
    # ("shared episodes 1", difference +0.0000) instead of both.
    for salt, (a, b) in enumerate(((1.0, 1.0), (1.0, 0.0))):
        result(tmp_path / "a" / f"salt{salt}", agent="a", composite=a, salt=salt)
        result(tmp_path / "b" / f"salt{salt}", agent="b", composite=b, salt=salt)
    res = CliRunner().invoke(app, ["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--bootstrap", "200"],
                             env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert "shared episodes │ 2" in text and "1.0000 / 0.5000" in text and "mean difference │ -0.5000" in text, text


def test_compare_refuses_a_side_mixing_tiers(tmp_path: Path) -> None:
    result(tmp_path / "a" / "l", agent="a", composite=0.2, tier="lite")
    result(tmp_path / "a" / "s", agent="a", composite=0.8, tier="standard")
    result(tmp_path / "b" / "l", agent="b", composite=0.5, tier="lite")
    res = CliRunner().invoke(app, ["compare", str(tmp_path / "a"), str(tmp_path / "b")])
    assert res.exit_code == 2 and "more than one agent, tier or protocol" in " ".join(res.output.split())


def test_two_run_folders_of_one_agent_are_two_rows_not_a_pool(tmp_path: Path) -> None:
    # A trials output (seeds 0, 1) and a separate run (seed 0) of the same agent: merging them would count
    # the separate run as a third sample of trial 0 and mix episode sets.
    for k in (1, 2):
        result(tmp_path / "t" / f"trial_{k}" / "e0", agent="a", composite=0.5, seed=0, run_seed=k - 1)
    result(tmp_path / "s" / "e0", agent="a", composite=0.9, seed=0)
    result(tmp_path / "s" / "e1", agent="a", composite=0.1, seed=1)
    rows = board_rows(tmp_path / "t", tmp_path / "s")
    assert [(r["run"], r["episodes"], r["trials"], float(r["composite"])) for r in rows] == [
        ("t", "1", "2", 0.5), ("s", "2", "1", 0.5)]
    assert rows[0]["group"] != rows[1]["group"]  # different episode sets: not ranked together


def test_score_intervals_stay_within_zero_and_one(tmp_path: Path) -> None:
    for seed, c in enumerate((0.0, 0.0, 1.0)):
        result(tmp_path / "a" / f"e{seed}", agent="a", composite=c, seed=seed)
    (row,) = board_rows(tmp_path / "a")
    lo, hi = (float(x) for x in row["composite 95% CI"].strip("[]").split(","))
    assert lo == 0.0 and hi == 1.0


def test_the_judged_composite_is_shown_beside_the_ranked_rule_composite(tmp_path: Path) -> None:
    # A judge only ever adds a second score; the board must show it without ranking by it.
    for seed, (rule, judged) in enumerate(((0.4, 0.5), (0.6, None))):
        root = result(tmp_path / "a" / f"e{seed}", agent="a", composite=rule, seed=seed)
        data = json.loads((root / "results.json").read_text())
        data["judge"] = {"model": "judge-m", "sent": 2, "overturned": 1, "errors": 0 if judged else 1}
        # A judged block as the scorer writes it: its composite is what its axes give.
        data["score_judged"] = None if judged is None else {
            **data["score"], **dict.fromkeys(("breadth", "maintenance", "reasoning", "efficiency"), judged),
            "composite": judged}
        (root / "results.json").write_text(json.dumps(data))
    board = get_family("budget").leaderboard([tmp_path / "a"])
    (row,) = list(csv.DictReader(io.StringIO(board.csv)))
    assert float(row["composite"]) == 0.5
    (note,) = [n for n in board.notes if "optional judge" in n]
    assert "0.500 over 1 of 2 episode(s)" in note and "ranks the rule composite" in note
    result(tmp_path / "b" / "e0", agent="b", composite=0.3)
    assert not [n for n in get_family("budget").leaderboard([tmp_path / "b"]).notes if "optional judge" in n]
