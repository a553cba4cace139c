"""A ``--trials`` budget report: the per-kind panel of an episode pools its trials (every trial's answers
counted, each trial's own counts beside them by run seed), and each trial's own panels are headed with the
run seed they belong to, so no trial's numbers stand for the episode unlabelled."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator
from pathlib import Path

from rich.console import Console
from typer.testing import CliRunner

from amemgym.cli import app
from amemgym.config import AppConfig, load_config
from amemgym.engine.runner import RunOptions
from amemgym.engine.trials import run_unit_trials
from amemgym.families.budget.units import UNITS
from amemgym.llm.client import LLMClient
from amemgym.testing.budget import BudgetScript, write_episodes
from amemgym.testing.scripted_model import ScriptedBackend


def test_the_per_kind_panel_pools_the_trials_and_each_trial_is_labelled(tmp_path: Path) -> None:
    (episode,) = write_episodes(tmp_path / "envs", [("lite", "films", 0)])
    # Trial 1 answers every question with its gold; trial 2 abstains on all of them.
    scripts: Iterator[BudgetScript] = iter([BudgetScript([episode]), BudgetScript([episode], wrong_domains=("films",))])

    def make(cfg: AppConfig) -> LLMClient:
        return LLMClient(backends={"agent": ScriptedBackend(next(scripts))})

    code = run_unit_trials(UNITS, load_config("tiny"), tmp_path / "envs", tmp_path / "out",
                           RunOptions(agent="native", serial=True), 2, console=Console(file=io.StringIO()),
                           make_client=make)
    assert code == 0
    kinds = [json.loads((tmp_path / f"out/trial_{k}/films/seed0/results.json").read_text())["per_kind"]
             for k in (1, 2)]
    assert kinds[0]["retrieval"]["correct"] == kinds[0]["retrieval"]["total"] > 0
    assert kinds[1]["retrieval"]["correct"] == 0
    res = CliRunner().invoke(app, ["report", str(tmp_path / "out"), "-o", str(tmp_path / "r.html")])
    assert res.exit_code == 0, res.output
    page = (tmp_path / "r.html").read_text()
    # One section for the episode, its pooled panel first.
    assert page.count("Accuracy per question kind over 2 trials") == 1
    n = kinds[0]["retrieval"]["total"]
    pooled = re.search(r"<tr><td>retrieval</td><td>([^<]*)</td><td>([^<]*)</td></tr>", page)
    assert pooled is not None and pooled.groups() == (f"{n}/{2 * n}", f"{n}/{n} (run seed 0), 0/{n} (run seed 1)")
    # Each trial's own panels sit under a heading naming its run seed.
    assert page.index("trial with run seed 0") < page.index("trial with run seed 1")
    assert page.index("Accuracy per question kind over 2 trials") < page.index("trial with run seed 0")
