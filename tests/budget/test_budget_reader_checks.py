"""What the budget readers (board, report, compare) must refuse or flag: a record whose numbers disagree with
themselves, an unfinished run on either side of a comparison, a folder inside a run read without the run's
manifest, and a run that could not be boarded left out of the CSV or aborting the whole board."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from test_budget_board_pool import planned_run, refused, result
from typer.testing import CliRunner

from amemgym.cli import app


def flat(text: str) -> str:
    return " ".join(text.split())


def invoke(*args: str | Path) -> tuple[int, str]:
    res = CliRunner().invoke(app, [str(a) for a in args], env={"COLUMNS": "400"})
    return res.exit_code, flat(res.output)


def full_record(root: Path, *, agent: str) -> Path:
    """A results.json holding per-question outcomes, its score exactly as the scorer derives it from them."""
    root.mkdir(parents=True, exist_ok=True)
    answers = {"q1": ("retrieval", True), "q2": ("update", False), "q3": ("synthesis_max", True),
               "q4": ("abstention", True)}
    efficiency = 2 / 3  # two of the three non-abstention questions right, within the reference writes
    composite = (0.30 * 1.0 + 0.25 * 0.0 + 0.25 * 1.0 + 0.20 * efficiency) / 1.0
    data = {"family": "budget", "format_version": 1, "agent": agent, "policy": "budget", "store": "notes",
            "agent_model": "m", "tier": "lite", "domain": "films", "seed": 0, "salt": 0, "run_seed": 0,
            "environment_sha256": "sha-lite-films-0", "search_embedder_problem": None,
            "per_kind": {"abstention": {"correct": 1, "total": 1}, "retrieval": {"correct": 1, "total": 1},
                         "synthesis_max": {"correct": 1, "total": 1}, "update": {"correct": 0, "total": 1}},
            "answers": {q: {"kind": k, "reply": "x", "gold": "x", "correct": ok, "reason": "match" if ok else "wrong",
                            "judge": None} for q, (k, ok) in answers.items()},
            "score": {"breadth": 1.0, "maintenance": 0.0, "reasoning": 1.0, "efficiency": efficiency,
                      "composite": composite, "abstention": 1.0, "accuracy": 0.75, "storage_gate": 0.0,
                      "writes_used": 10, "reference_writes": 12, "questions": 4, "skipped": 0}}
    (root / "results.json").write_text(json.dumps(data))
    return root / "results.json"


def edit(path: Path, change: Any) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def csv_rows(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(path.read_text())))


# ---- 1: a record's stored numbers must agree with what the record itself derives them from -------------------
def test_a_consistent_record_with_its_answers_is_read(tmp_path: Path) -> None:
    full_record(tmp_path / "a" / "e0", agent="a")
    code, out = invoke("leaderboard", tmp_path / "a")
    assert code == 0 and "not boarded" not in out, out


def test_a_composite_that_disagrees_with_its_axes_is_refused(tmp_path: Path) -> None:
    edited = result(tmp_path / "a" / "e0", agent="a", composite=0.5) / "results.json"
    result(tmp_path / "b" / "e0", agent="b", composite=0.4)
    edit(edited, lambda d: d["score"].update(composite=0.99))
    refused(["compare", str(tmp_path / "a"), str(tmp_path / "b")], str(edited), "score.composite", "0.99")
    refused(["leaderboard", str(tmp_path / "a")], str(edited), "score.composite")


def test_a_judged_composite_that_disagrees_with_its_axes_is_refused(tmp_path: Path) -> None:
    edited = result(tmp_path / "a" / "e0", agent="a", composite=0.5) / "results.json"
    edit(edited, lambda d: d.update(score_judged={**d["score"], "composite": 0.9}))
    refused(["leaderboard", str(tmp_path / "a")], str(edited), "score_judged.composite")


def test_a_flipped_answer_no_longer_matching_the_score_is_refused(tmp_path: Path) -> None:
    edited = full_record(tmp_path / "a" / "e0", agent="a")
    edit(edited, lambda d: d["answers"]["q2"].update(correct=True))
    refused(["leaderboard", str(tmp_path / "a")], str(edited), "score.", "answers")


def test_an_axis_edited_with_the_composite_to_match_is_still_refused(tmp_path: Path) -> None:
    edited = full_record(tmp_path / "a" / "e0", agent="a")

    def lift(d: dict[str, Any]) -> None:
        s = d["score"]
        s["reasoning"], s["breadth"], s["efficiency"] = 1.0, 1.0, 1.0
        s["composite"] = 0.30 + 0.25 * s["maintenance"] + 0.25 + 0.20
    edit(edited, lift)
    refused(["leaderboard", str(tmp_path / "a")], str(edited), "score.efficiency")


def test_a_maintenance_score_above_its_questions_accuracy_is_refused(tmp_path: Path) -> None:
    edited = full_record(tmp_path / "a" / "e0", agent="a")

    def lift(d: dict[str, Any]) -> None:
        s = d["score"]
        s["maintenance"] = 1.0
        s["composite"] = 0.30 + 0.25 + 0.25 + 0.20 * s["efficiency"]
    edit(edited, lift)
    refused(["leaderboard", str(tmp_path / "a")], str(edited), "score.maintenance")


# ---- 2: compare names an unfinished side -----------------------------------------------------------------------
def test_compare_refuses_a_killed_run_naming_its_metrics_file(tmp_path: Path) -> None:
    good = planned_run(tmp_path / "good", agent="a", done={0: 0.5, 1: 0.5}, planned=2)
    killed = planned_run(tmp_path / "killed", agent="a", done={0: 0.6}, planned=2, complete=None)
    refused(["compare", str(good), str(killed)], str(killed / "metrics.json"), "not finished")


def test_compare_flags_an_unfinished_run_prominently(tmp_path: Path) -> None:
    good = planned_run(tmp_path / "good", agent="a", done={0: 0.5, 1: 0.5}, planned=2)
    part = planned_run(tmp_path / "part", agent="a", done={0: 0.6}, planned=2, complete=False, missing=(1,))
    code, out = invoke("compare", good, part, "--bootstrap", "100")
    assert code == 0, out
    assert f"UNFINISHED run B ({part})" in out and "lite/films/seed1" in out, out


def test_compare_flags_a_trials_output_whose_second_trial_did_not_finish(tmp_path: Path) -> None:
    good = planned_run(tmp_path / "good", agent="a", done={0: 0.5, 1: 0.5}, planned=2)
    t = tmp_path / "t"
    planned_run(t / "trial_1", agent="a", done={0: 0.5, 1: 0.5}, planned=2)
    second = planned_run(t / "trial_2", agent="a", done={0: 0.5}, planned=2, complete=False, missing=(1,))
    edit(second / "films" / "seed0" / "results.json", lambda d: d.update(run_seed=1))
    code, out = invoke("compare", good, t, "--bootstrap", "100")
    assert code == 0, out
    assert f"UNFINISHED run B ({t})" in out and "lite/films/seed1" in out, out


# ---- 3: a folder inside a run is read as (part of) that run --------------------------------------------------
def test_a_folder_inside_an_unfinished_run_is_flagged_as_unfinished(tmp_path: Path) -> None:
    part = planned_run(tmp_path / "part", agent="a", done={0: 0.6}, planned=2, complete=False, missing=(1,))
    code, out = invoke("leaderboard", part / "films", "--out-csv", tmp_path / "b.csv")
    assert code == 0, out
    (row,) = csv_rows(tmp_path / "b.csv")
    assert row["rank"] == "-" and "unfinished: 1 planned episode" in row["flags"], row
    code, out = invoke("report", part / "films", "--out", tmp_path / "r.html")
    assert code == 0, out
    assert "unfinished" in (tmp_path / "r.html").read_text()


def test_a_folder_inside_a_finished_run_reads_its_own_records(tmp_path: Path) -> None:
    good = planned_run(tmp_path / "good", agent="a", done={0: 0.6, 1: 0.4}, planned=2)
    code, out = invoke("leaderboard", good / "films" / "seed0", "--out-csv", tmp_path / "b.csv")
    assert code == 0, out
    (row,) = csv_rows(tmp_path / "b.csv")
    assert row["rank"] == "1" and row["episodes"] == "1" and row["flags"] == "", row


# ---- 4 and 5: a run that cannot be boarded is listed (also in the CSV) and the others are ranked ---------------
def test_an_unreadable_budget_run_is_not_boarded_and_the_rest_are_ranked(tmp_path: Path) -> None:
    good = planned_run(tmp_path / "good", agent="a", done={0: 0.6, 1: 0.4}, planned=2)
    dmg = planned_run(tmp_path / "dmg", agent="b", done={0: 0.6, 1: 0.4}, planned=2)
    (dmg / "metrics.json").write_text('{"x":')
    code, out = invoke("leaderboard", good, dmg, "--out-csv", tmp_path / "b.csv", "--out-md", tmp_path / "b.md")
    assert code == 0, out
    assert f"not boarded: {dmg}: {dmg / 'metrics.json'}" in out, out
    rows = csv_rows(tmp_path / "b.csv")
    assert [(r["run"], r["rank"]) for r in rows] == [("good", "1"), ("dmg", "")]
    assert rows[1]["flags"].startswith("not boarded: ") and str(dmg / "metrics.json") in rows[1]["flags"]
    assert f"not boarded: {dmg}" in (tmp_path / "b.md").read_text()


def test_a_hand_edited_record_is_not_boarded_naming_file_and_field(tmp_path: Path) -> None:
    edited = result(tmp_path / "a" / "e0", agent="a", composite=0.5) / "results.json"
    result(tmp_path / "b" / "e0", agent="b", composite=0.4)
    edit(edited, lambda d: d["score"].update(composite=0.99))
    code, out = invoke("leaderboard", tmp_path / "a", tmp_path / "b", "--out-csv", tmp_path / "b.csv")
    assert code == 0 and f"not boarded: {tmp_path / 'a'}: {edited}: score.composite" in out, out
    assert [(r["run"], r["rank"]) for r in csv_rows(tmp_path / "b.csv")] == [("b", "1"), ("a", "")]
