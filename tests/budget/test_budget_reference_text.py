"""What the budget metrics, results and report say ``reference_writes`` is must be what the generator puts
there: the writes storing every documented fact would take (one fact a line, packed into notes of the cap),
capped by the write budget; no strategy that knows the questions is involved."""

from __future__ import annotations

import io
import json
from html import escape
from pathlib import Path

from rich.console import Console
from typer.testing import CliRunner

from amemgym.cli import app
from amemgym.config import load_config
from amemgym.engine.runner import RunOptions, run_units
from amemgym.families.budget.model import FAMILY
from amemgym.families.budget.strategies import coverage_writes
from amemgym.families.budget.units import BudgetUnits
from amemgym.scoring.registry import unit_metrics
from amemgym.testing.budget import BudgetScript, client_factory, write_episodes

#: The words a true description of the number must use (what is counted, and what caps it).
SAYS = ("every fact the documents state", "capped by the", "write budget")


def described() -> str:
    return next(m.description for m in unit_metrics(FAMILY) if m.name == "reference_writes")


def test_the_description_says_what_the_generator_computes() -> None:
    text = described()
    assert all(s in text for s in SAYS) and "perfect" not in text, text


def test_a_run_records_the_number_and_the_same_words_in_its_results_metrics_and_report(tmp_path: Path) -> None:
    (episode,) = write_episodes(tmp_path / "envs", [("standard", "films", 0)])
    # On this episode storing everything takes more than the budget, so the cap is what the number shows.
    assert coverage_writes(episode) > episode.tier.writes == episode.reference_writes == 30
    code = run_units(BudgetUnits(), load_config("tiny"), tmp_path / "envs", tmp_path / "out",
                     RunOptions(agent="native", serial=True), console=Console(file=io.StringIO()),
                     make_client=client_factory(BudgetScript([episode])))
    assert code == 0
    record = json.loads((tmp_path / "out/films/seed0/results.json").read_text())
    assert record["score"]["reference_writes"] == 30
    assert all(s in record["definitions"]["reference_writes"] for s in SAYS), record["definitions"]
    metrics = json.loads((tmp_path / "out/metrics.json").read_text())
    assert metrics["definitions"]["reference_writes"] == described()
    res = CliRunner().invoke(app, ["report", str(tmp_path / "out"), "-o", str(tmp_path / "r.html")])
    assert res.exit_code == 0, res.output
    assert escape(described()) in (tmp_path / "r.html").read_text()
