"""Leaderboard grouping, ranking and flagging on hand-made runs."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from amemgym.engine.read import unique_labels
from amemgym.report.leaderboard import leaderboard, to_csv, to_markdown
from amemgym.report.load import RunRecord

PROTO = {"environment_sha256": "a" * 64, "rounds": {"init": 1, "update": 2}, "run": {"seed": 0}, "off_policy": None}


def run(label: str, score: float | None, *, complete: bool = True, **proto: object) -> RunRecord:
    metrics = {"agent": label.split("-")[0], "complete": complete,
               "overall": {"memory_score": {"mean": score, "lo": None if score is None else score - 0.1,
                                            "hi": None if score is None else score + 0.1, "n": 3}}}
    return RunRecord(Path(label), label, {"protocol": PROTO | proto}, metrics)


def test_ranks_within_a_group_and_flags_incomplete() -> None:
    entries = leaderboard([run("rag-1", 0.2), run("awe-1", 0.3), run("native-1", 0.9, complete=False)])
    assert [(e.summary.label, e.group, e.rank) for e in entries] == [("awe-1", 1, 1), ("rag-1", 1, 2),
                                                                     ("native-1", 1, None)]
    assert entries[2].flags == ("incomplete",)


def test_different_environment_or_protocol_makes_separate_groups() -> None:
    entries = leaderboard([run("a-1", 0.5), run("b-1", 0.1, environment_sha256="b" * 64),
                           run("c-1", 0.3, rounds={"init": 2, "update": 5}), run("d-1", 0.2, off_policy="/x")])
    assert sorted((e.summary.label, e.group, e.rank) for e in entries) == [
        ("a-1", 1, 1), ("b-1", 2, 1), ("c-1", 3, 1), ("d-1", 4, 1)]
    assert next(e for e in entries if e.summary.label == "d-1").flags == ("off-policy",)


def test_agent_and_replay_source_do_not_split_groups() -> None:
    entries = leaderboard([run("a-1", 0.5, agent={"name": "a"}), run("b-1", 0.4, agent={"name": "b"})])
    assert {e.group for e in entries} == {1}


def test_markdown_and_csv_outputs() -> None:
    entries = leaderboard([run("x|y", 0.25), run("z", None)])
    md = to_markdown(entries)
    assert "| 1 | 1 | x\\|y |" in md and "not ranked" in md
    rows = list(csv.DictReader(io.StringIO(to_csv(entries))))
    assert rows[0]["memory score"] == "0.25" and rows[1]["rank"] == "-" and "no memory score" in rows[1]["flags"]


def test_unique_labels_disambiguate_same_names() -> None:
    labels = unique_labels([Path("/r/one/run"), Path("/r/two/run"), Path("/r/solo")])
    assert labels == ["one/run", "two/run", "r/solo"]


def test_the_same_run_given_twice_is_labelled_by_its_path_and_number() -> None:
    assert unique_labels([Path("/tmp/p/run"), Path("/tmp/p/run")]) == ["/tmp/p/run #1", "/tmp/p/run #2"]
    deep = [Path("/a/x/y/z/w/v/run"), Path("/b/x/y/z/w/v/run")]
    assert unique_labels(deep) == ["a/x/y/z/w/v/run", "b/x/y/z/w/v/run"]
