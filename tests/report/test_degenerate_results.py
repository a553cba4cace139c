"""Degenerate results are flagged wherever they are shown, never ranked above real ones; echoing simulators are seen.

Two scripted runs on the fixture: a *degenerate* one whose upper bound always answers option 1 (so it is
near random and most memory-score cells are undefined, while the defined ones score exactly 1.0 because
the agent answers the same), and a healthy perfect one. A third run's simulator copies the assistant.
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest
from rich.console import Console
from test_report_runs import cli, flat, make_run, two_user_env
from typer.testing import CliRunner

from amemgym.families.statetrack.data import load_environment
from amemgym.families.statetrack.layout import RunDir
from amemgym.families.statetrack.metrics import QuestionOutcome, aggregate
from amemgym.families.statetrack.summary import print_summary
from amemgym.families.statetrack.validity.sim_audit import audit_run, degenerate_flags
from amemgym.llm.types import ChatRequest
from amemgym.report.aggregate import Stat, Summary, user_period_grid
from amemgym.report.leaderboard import leaderboard
from amemgym.report.load import RunRecord
from amemgym.testing.run_script import RunScript, last_user


class FirstOptionScript(RunScript):
    """Upper bound and agent both always answer option 1: UB near random, memory score 1.0 where defined."""

    def __call__(self, req: ChatRequest) -> str:
        if req.tag == "eval.upper_bound" or (req.tag == "agent.answer"
                                             and not last_user(req).startswith("Based only on what you know")):
            return json.dumps({"answer": 1})
        return super().__call__(req)


class EchoScript(RunScript):
    """The simulated user repeats the assistant's last reply word for word."""

    def __call__(self, req: ChatRequest) -> str:
        if req.role == "simulator":
            # The simulator's prompt ends with the assistant's reply followed by a reminder of its role.
            return last_user(req).split("\n\n(You are")[0]
        return super().__call__(req)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("degenerate")
    env_path = two_user_env(tmp / "env.json")
    user = load_environment(env_path).users[0]
    out = {"env": env_path, "degenerate": tmp / "degenerate", "good": tmp / "good", "echo": tmp / "echo"}
    make_run(env_path, out["degenerate"], FirstOptionScript(user), tmp)
    make_run(env_path, out["good"], RunScript(user), tmp)
    make_run(env_path, out["echo"], EchoScript(user), tmp)
    return out


def metrics_of(run: Path) -> dict:
    return json.loads((run / "metrics.json").read_text())


def test_metrics_json_flags_the_degenerate_run_and_counts_excluded_cells(runs) -> None:
    bad, good = metrics_of(runs["degenerate"])["overall"], metrics_of(runs["good"])["overall"]
    assert bad["memory_score"]["mean"] == pytest.approx(1.0)  # the trap: a perfect-looking score
    assert "upper bound near random" in bad["flags"] and bad["degenerate"] is True
    assert bad["memory_cells"]["undefined"] == bad["undefined_memory_cells"] > 0
    assert bad["memory_cells"]["total"] == bad["memory_cells"]["defined"] + bad["memory_cells"]["undefined"]
    assert good["flags"] == [] and good["degenerate"] is False


def test_leaderboard_never_ranks_the_degenerate_run_first(runs, tmp_path: Path) -> None:
    md, csv_path = tmp_path / "b.md", tmp_path / "b.csv"
    res = CliRunner().invoke(cli(), ["leaderboard", str(runs["degenerate"]), str(runs["good"]),
                                     "--out-md", str(md), "--out-csv", str(csv_path)])
    assert res.exit_code == 0, res.output
    rows = {r["run"]: r for r in csv.DictReader(io.StringIO(csv_path.read_text()))}
    assert rows["good"]["rank"] == "1"
    assert rows["degenerate"]["rank"] == "-"
    assert "DEGENERATE: upper bound near random" in rows["degenerate"]["flags"]
    assert re.fullmatch(r"[1-9]\d*/\d+", rows["degenerate"]["excluded cells"])
    assert "DEGENERATE" in md.read_text() and "DEGENERATE" in flat(res.output)
    assert "cells excluded" in flat(res.output)


def test_compare_and_console_summary_flag_it(runs) -> None:
    res = CliRunner().invoke(cli(), ["compare", str(runs["good"]), str(runs["degenerate"]), "--bootstrap", "200"])
    assert res.exit_code == 0, res.output
    text = flat(res.output)
    assert "DEGENERATE run B" in text and "upper bound near random" in text
    console = Console(record=True, width=200)
    print_summary(console, metrics_of(runs["degenerate"]), runs["degenerate"])
    shown = console.export_text()
    assert "DEGENERATE: upper bound near random" in shown and "cells excluded" in shown


def test_html_report_flags_it_and_draws_undefined_cells(runs, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    res = CliRunner().invoke(cli(), ["report", str(runs["degenerate"]), str(runs["good"]), "--out", str(out)])
    assert res.exit_code == 0, res.output
    html = out.read_text()
    assert 'class="degenerate"' in html and "DEGENERATE: upper bound near random" in html
    assert "cells excluded" in html
    metrics = metrics_of(runs["degenerate"])
    grid = user_period_grid(metrics, sorted(metrics["per_user"]), 3)
    assert any(any(row) for row in grid.undefined)
    # Undefined (evaluated, no score) and missing cells are told apart.
    for values, undefined in zip(grid.values, grid.undefined, strict=True):
        assert all(v is None for v, u in zip(values, undefined, strict=True) if u)
    pytest.importorskip("matplotlib")
    from amemgym.report.figures import heatmap_figure

    legends = heatmap_figure(grid, "memory score").legends
    assert any("undefined" in t.get_text() for leg in legends for t in leg.get_texts())


def summary(label: str, ms: float | None, ub: float = 0.9, rnd: float = 0.25, **kw) -> Summary:
    stats = {"overall": Stat(0.5), "upper_bound": Stat(ub), "random": Stat(rnd), "memory_score": Stat(ms)}
    return Summary(label, "a", stats, {}, 3, True, None, **kw)


def record(label: str, metrics: dict) -> RunRecord:
    proto = {"environment_sha256": "a" * 64, "rounds": {}, "run": {}, "off_policy": None}
    return RunRecord(Path(label), label, {"protocol": proto}, metrics)


def metrics(ms: float, ub: float = 0.9, rnd: float = 0.25, undefined: int = 0, total: int = 10) -> dict:
    per_user = {"u": {str(p): {"memory_score": None if p < undefined else ms} for p in range(total)}}
    return {"agent": "a", "complete": True, "per_user": per_user,
            "overall": {"memory_score": {"mean": ms}, "upper_bound": {"mean": ub}, "random": {"mean": rnd}}}


def test_mostly_undefined_cells_flag_a_run_even_from_an_old_metrics_file() -> None:
    entries = leaderboard([record("sparse", metrics(1.0, undefined=8)), record("real", metrics(0.4))])
    by = {e.summary.label: e for e in entries}
    assert by["real"].rank == 1 and by["sparse"].rank is None
    assert "DEGENERATE: memory score mostly undefined" in by["sparse"].flags
    assert by["sparse"].summary.excluded_cells == 8 and by["sparse"].summary.total_cells == 10


def test_equal_scores_share_a_rank() -> None:
    entries = leaderboard([record("b", metrics(0.4)), record("a", metrics(0.4)), record("c", metrics(0.3))])
    assert [(e.summary.label, e.rank, e.rank_text) for e in entries] == [("a", 1, "=1"), ("b", 1, "=1"),
                                                                         ("c", 3, "3")]


def test_aggregate_flags_an_upper_bound_at_random() -> None:
    outs = [QuestionOutcome("u", p, q, 1.0 if q == 0 else 0.0, 4, 1.0 if q == 0 else 0.0)
            for p in range(2) for q in range(4)]
    ov = aggregate(outs, 2)["overall"]
    assert ov["upper_bound"]["mean"] == pytest.approx(0.25) and ov["random"]["mean"] == pytest.approx(0.25)
    assert ov["flags"] == ["upper bound near random", "memory score mostly undefined"]
    assert ov["memory_cells"] == {"defined": 0, "undefined": 2, "total": 2}


# ---- simulator echoes --------------------------------------------------------------------------------


def test_audit_counts_every_echo_and_metrics_warn(runs) -> None:
    import asyncio

    env = load_environment(runs["env"])
    audit = asyncio.run(audit_run(RunDir(runs["echo"]), env))
    assert audit["turns"] > 0
    assert audit["counts"]["echoes_assistant"] == audit["turns"] == audit["degenerate"]
    assert audit["degenerate_rate"] == 1.0
    sim = metrics_of(runs["echo"])["simulator"]
    assert sim["turns"] == audit["turns"] and sim["counts"]["echoes_assistant"] == audit["turns"]
    assert sim["warn"] is True
    assert "simulator degenerate" in metrics_of(runs["echo"])["overall"]["flags"]
    good = metrics_of(runs["good"])["simulator"]
    assert good["degenerate"] == 0 and good["warn"] is False
    console = Console(record=True, width=200)
    print_summary(console, metrics_of(runs["echo"]), runs["echo"])
    assert "are degenerate" in console.export_text()


def test_audit_cli_warns_on_echoes(runs) -> None:
    from test_validity_cli import invoke

    res = invoke("audit-sim", str(runs["echo"]))
    assert res.exit_code == 0, res.output
    assert "are degenerate" in flat(res.output)


@pytest.mark.parametrize(("text", "previous", "earlier", "flag"), [
    ("Here is a plan.", "here is a  PLAN.", [], "echoes_assistant"),
    ("Here is a plan for your week with three runs and one rest day", "Sure! Here is a plan for your week with "
     "three runs and one rest day, as you asked.", [], "near_echo"),
    ("Could you say more?", "Try this.", ["Could you say more?"], "repeats_user_turn"),
    ("   ", "Try this.", [], "empty"),
])
def test_degenerate_turn_kinds(text: str, previous: str, earlier: list[str], flag: str) -> None:
    assert flag in degenerate_flags(text, "My opening message about running.", previous, earlier)


def test_an_ordinary_follow_up_is_not_degenerate() -> None:
    assert degenerate_flags("Thanks! Could you give me a sample week?", "I run three times a week.",
                            "Try a long run on Sundays and an easy one midweek.", ["Thanks, and on rest days?"]) == []


def _summary_text(run: Path) -> str:
    console = Console(record=True, width=200)
    print_summary(console, metrics_of(run), run)
    return console.export_text()


def test_the_console_headline_of_a_degenerate_run_reads_undefined(runs) -> None:
    shown = _summary_text(runs["degenerate"])
    row = next(line for line in shown.splitlines() if "memory_score" in line or "memory score" in line)
    assert "undefined" in row and "1.000" not in row, row
    # Nowhere on the console does the perfect-looking number stand as amemgym's memory score.
    assert not re.search(r"amemgym's: 1\.000", shown) and "1.000 [1.000, 1.000]" not in shown
    original = " ".join(shown.split()).split("original aggregation", 1)[1][:120]
    assert "noise: DEGENERATE run" in original, original


def test_the_console_says_what_each_number_means(runs) -> None:
    good, bad = _summary_text(runs["good"]), _summary_text(runs["degenerate"])
    for label in ("overall", "upper bound", "random", "memory score"):
        lines = [line for line in good.splitlines() if line.lstrip().startswith(f"{label}:")]
        assert len(lines) == 1, (label, good)
    meaning = next(line for line in good.splitlines() if line.lstrip().startswith("memory score:"))
    assert "random" in meaning and "upper bound" in meaning and "undefined" not in meaning
    bad_meaning = next(line for line in bad.splitlines() if line.lstrip().startswith("memory score:"))
    assert "undefined" in bad_meaning and "upper bound near random" in bad_meaning
