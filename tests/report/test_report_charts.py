"""The report's charts: inline data drawn in the browser, no matplotlib unless figures are asked for, navigation."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from test_report_aggregate import METRICS
from test_report_runs import build_two_runs

from amemgym.report.aggregate import Grid, Stat, user_period_grid
from amemgym.report.build import build_report
from amemgym.report.charts import COLLAPSE_CELLS, curves_chart, diagnosis_chart, heatmap_chart, is_large
from amemgym.report.html import SECTIONS, FigureImage, figure_block


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    return build_two_runs(tmp_path_factory.mktemp("charts"))


def page_data(html: str) -> dict:
    block = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', html, re.S)
    assert block, "report data block missing"
    return json.loads(block.group(1))


def test_report_charts_come_from_inline_data(two_runs) -> None:
    _, run_a, run_b = two_runs
    html = build_report([run_a, run_b]).html
    charts = page_data(html)["charts"]
    placed = re.findall(r'data-chart="([^"]+)"', html)
    assert sorted(placed) == sorted(charts) == sorted(
        ["curves", "diagnosis", "heat_memory_0", "heat_questions_0", "heat_memory_1", "heat_questions_1"])
    assert "<img" not in html and "data:image/svg" not in html  # nothing pre-rendered
    assert "function drawHeatmap" in html and "createElementNS" in html  # the drawing script is inline
    # The curves carry the runs' numbers, not placeholders.
    labels = [s["label"] for s in charts["curves"]["series"]]
    assert labels == ["run_a", "run_b"]
    means = [c["mean"] for c in charts["curves"]["series"][1]["curves"]["overall"] if c]
    assert means and all(m == 1.0 for m in means)  # run B answers every question right


def test_building_the_page_does_not_import_matplotlib(two_runs) -> None:
    _, run_a, _ = two_runs
    code = ("import sys; from pathlib import Path; from rich.console import Console; "
            "from amemgym.families.statetrack.driver import write_run_report; "
            f"write_run_report(Path({str(run_a)!r}), Console(quiet=True)); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'matplotlib'))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert res.stdout.strip() == "[]"
    assert "data-chart=" in (run_a / "report.html").read_text()


def test_figures_are_still_made_on_request(two_runs) -> None:
    pytest.importorskip("matplotlib")
    _, run_a, _ = two_runs
    rep = build_report([run_a])
    assert {"curves", "diagnosis", "heat_memory_run_a", "heat_questions_run_a"} <= set(rep.figures)


def test_undefined_cells_stay_null_never_zero() -> None:
    grid = user_period_grid(METRICS, ["u1", "u2"], 2)
    chart = heatmap_chart(grid, "memory", vmin=-1, vmax=1, diverging=True, undefined="why")
    assert chart["values"] == [[0.5, None], [None, -0.1]] and chart["undefined"] == "why"
    curves = curves_chart({"r": {"memory_score": [Stat(None), Stat(0.25, 0.1, 0.4)]}})
    assert curves["series"][0]["curves"]["memory_score"] == [None, {"mean": 0.25, "lo": 0.1, "hi": 0.4}]
    bars = diagnosis_chart({"r": {"write": [None, 0.5], "read": [0.0, None], "utilization": []}})
    assert bars["series"][0]["values"] == {"write": [None, 0.5], "read": [0.0, None], "utilization": []}


def test_page_has_contents_and_heat_map_legend(two_runs) -> None:
    _, run_a, _ = two_runs
    html = build_report([run_a]).html
    toc = re.search(r'<nav id="toc".*?</nav>', html, re.S)
    assert toc is not None
    for sid, _ in SECTIONS:
        assert f'href="#{sid}"' in toc.group(0) and f'id="{sid}"' in html
    charts = page_data(html)["charts"]
    assert "upper bound <= random" in charts["heat_memory_0"]["undefined"]
    assert "not evaluated" in charts["heat_questions_0"]["undefined"]
    assert "Hatched cells are undefined" in html
    assert "<details" not in html  # small heat maps are open


def test_large_heat_maps_start_collapsed() -> None:
    rows = COLLAPSE_CELLS // 3 + 1
    big = heatmap_chart(Grid(tuple(f"u{i}" for i in range(rows)), ("P0", "P1", "P2"),
                             tuple((0.1, None, 0.3) for _ in range(rows))), "memory")
    small = heatmap_chart(Grid(("u",), ("P0",), ((0.5,),)), "memory")
    assert is_large(big) and not is_large(small)
    block = figure_block(FigureImage("memory heat map", chart="heat_memory_0", collapsed=True))
    assert block.startswith("<details") and 'data-chart="heat_memory_0"' in block and "<details open" not in block
    assert not figure_block(FigureImage("x", chart="c")).startswith("<details")


def test_chart_script_never_parses_strings_as_html(two_runs) -> None:
    from importlib import resources

    script = resources.files("amemgym.report").joinpath("charts.js").read_text(encoding="utf-8")
    _, run_a, _ = two_runs
    assert script in build_report([run_a]).html  # the page runs exactly this file, inline
    # Labels come from run directories and environments: they reach the SVG through textContent only.
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "Function("):
        assert sink not in script


def test_run_passes_its_environment_without_changing_the_page(two_runs) -> None:
    from amemgym.families.statetrack.data.io import load_environment
    from amemgym.families.statetrack.protocol import environment_hash

    env_path, run_a, _ = two_runs
    env = load_environment(env_path)
    plain = build_report([run_a]).html
    assert build_report([run_a], environment=(env, environment_hash(env))).html == plain
    # A hash that is not the run's is ignored: the manifest's file is loaded and checked as usual.
    empty = env.model_copy(update={"users": []})
    assert build_report([run_a], environment=(empty, "0" * 64)).html == plain
