"""The readers work the storage gate, and the maintenance it gates, out again from a run's own ledger and
episode file: a record whose maintenance and gate were both raised by hand (the composite edited to match,
so the record agrees with itself) is refused in one line naming the file, the field and the recomputed value.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from amemgym.cli import app
from amemgym.config import load_config
from amemgym.engine.runner import RunOptions, run_units
from amemgym.families.budget.scoring import composite_of
from amemgym.families.budget.units import BudgetUnits
from amemgym.testing.budget import BudgetScript, client_factory, write_episodes


@pytest.fixture()
def played(tmp_path: Path) -> Path:
    """A scripted lite run (its notes are the tail of each event's text, so few original values are stored):
    the run folder."""
    episodes = write_episodes(tmp_path / "envs", [("lite", "films", 0)])
    code = run_units(BudgetUnits(), load_config("tiny"), tmp_path / "envs", tmp_path / "out",
                     RunOptions(agent="native", serial=True), console=Console(file=io.StringIO()),
                     make_client=client_factory(BudgetScript(episodes)))
    assert code == 0
    return tmp_path / "out"


def board(*args: str | Path) -> tuple[int, list[str]]:
    res = CliRunner().invoke(app, ["leaderboard", *map(str, args)], env={"COLUMNS": "400"})
    return res.exit_code, [" ".join(line.split()) for line in res.output.splitlines() if line.strip()]


def test_an_untouched_run_is_boarded_and_its_gate_is_what_its_ledger_gives(played: Path) -> None:
    score = json.loads((played / "films/seed0/results.json").read_text())["score"]
    assert (score["storage_gate"], score["maintenance"]) == (0.0, 0.0)
    code, lines = board(played)
    assert code == 0 and not any("not boarded" in line for line in lines), lines


def test_maintenance_and_gate_raised_together_by_hand_are_refused(played: Path) -> None:
    path = played / "films/seed0/results.json"
    data = json.loads(path.read_text())
    score = data["score"]
    # Every maintenance question was answered right (the script submits the gold), so only the gate held
    # maintenance at 0; raising both, with the composite to match, leaves a record that agrees with itself.
    score.update(storage_gate=1.0, maintenance=1.0)
    score["composite"] = composite_of(score)
    assert score["composite"] == pytest.approx(1.0)
    path.write_text(json.dumps(data))
    code, lines = board(played)
    assert code == 2 and len(lines) == 1, lines
    assert str(path) in lines[0] and "score.storage_gate" in lines[0], lines[0]
    assert "1.0000" in lines[0] and "0.0000" in lines[0] and "ledger" in lines[0], lines[0]


def test_writes_used_that_its_ledger_does_not_give_are_refused(played: Path) -> None:
    path = played / "films/seed0/results.json"
    data = json.loads(path.read_text())
    data["ledger"] = []  # a ledger emptied by hand no longer adds up to the 5 writes the score states
    path.write_text(json.dumps(data))
    code, lines = board(played)
    assert code == 2 and len(lines) == 1 and "score.writes_used" in lines[0], lines
    assert "5 is not what the record's ledger charges (0)" in lines[0], lines[0]


def test_a_ledger_with_a_masked_note_is_boarded_and_its_gate_held_to_a_floor(played: Path) -> None:
    # A note that held text shaped like a key is masked on disk: what it stored can no longer be seen, so the
    # recomputed gate is a floor; a stored gate below it is still refused.
    path = played / "films/seed0/results.json"
    data = json.loads(path.read_text())
    entry = next(e for e in data["ledger"] if e.get("text"))
    entry["text"] = "[REDACTED] " + entry["text"]
    path.write_text(json.dumps(data))
    code, lines = board(played)
    assert code == 0 and not any("not boarded" in line for line in lines), lines
    data["score"]["writes_used"] += 1
    path.write_text(json.dumps(data))
    code, lines = board(played)
    assert code == 2 and "score.writes_used" in lines[0], lines


def test_a_ledger_deleted_beside_a_raised_gate_is_refused(played: Path) -> None:
    path = played / "films/seed0/results.json"
    data = json.loads(path.read_text())
    del data["ledger"]  # nothing left to recompute from: every run writes its ledger, so this is a hand edit
    data["score"].update(storage_gate=1.0, maintenance=1.0)
    data["score"]["composite"] = composite_of(data["score"])
    path.write_text(json.dumps(data))
    code, lines = board(played)
    assert code == 2 and len(lines) == 1 and "ledger" in lines[0] and "missing" in lines[0], lines


def test_a_raised_gate_beside_a_readable_run_is_not_boarded_and_the_other_is_ranked(played: Path,
                                                                                    tmp_path: Path) -> None:
    honest = tmp_path / "honest"
    episodes = write_episodes(tmp_path / "envs2", [("lite", "films", 0)])
    run_units(BudgetUnits(), load_config("tiny"), tmp_path / "envs2", honest, RunOptions(agent="native", serial=True),
              console=Console(file=io.StringIO()), make_client=client_factory(BudgetScript(episodes)))
    path = played / "films/seed0/results.json"
    data = json.loads(path.read_text())
    data["score"].update(storage_gate=1.0, maintenance=1.0)
    data["score"]["composite"] = composite_of(data["score"])
    path.write_text(json.dumps(data))
    code, lines = board(played, honest)
    text = " ".join(lines)
    assert code == 0 and f"not boarded: {played}: {path}: score.storage_gate" in text, text
