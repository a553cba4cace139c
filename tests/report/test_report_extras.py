"""The report's optional parts: simulator audit rates, leak-guard counts, memory recall and evolution policies."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from test_evolve_loop import ENV, evolve_once, script

from amemgym.families.statetrack.data import load_environment
from amemgym.families.statetrack.layout import RunDir
from amemgym.families.statetrack.validity.sim_audit import audit_run
from amemgym.report.aggregate import RECALL_CURVE, Stat, curve_panels, period_series, summarize
from amemgym.report.build import build_report
from amemgym.report.extras import (
    AuditSummary,
    LeakGuard,
    audit_summary,
    evolution_view,
    has_recall,
    leak_guard,
    recall_stat,
)
from amemgym.report.html import simulator_table, summary_table

AUDIT = {"turns": 8, "judged": None, "judge_failures": 0,
         "rates": {"ends_conversation": 0.25, "reveals_value": 0.125, "empty": 0.0, "copies_opening": None}}
METRICS = {
    "overall": {"memory_score": {"mean": 0.4, "lo": 0.3, "hi": 0.5, "n": 2},
                "memory_recall": {"mean": 0.6, "lo": 0.5, "hi": 0.7, "n": 2}},
    "per_period": [{"period": 1, "memory_recall": {"mean": 0.7, "n": 2}},
                   {"period": 0, "memory_recall": {"mean": 0.5, "n": 2}}],
}


def test_audit_summary_orders_checks_and_keeps_undefined_rates() -> None:
    s = audit_summary(AUDIT)
    assert s == AuditSummary(8, None, 0, (("reveals_value", 0.125), ("ends_conversation", 0.25), ("empty", 0.0),
                                          ("copies_opening", None)))
    assert audit_summary({"turns": 3}) is None and audit_summary([1, 2]) is None


def test_leak_guard_sums_session_records() -> None:
    records = [{"period": 0}, {"resimulated": 2}, {"resimulated": 1, "unresolved_leaks": 1}, {"resimulated": "x"}]
    assert leak_guard(records) == LeakGuard(sessions=4, resimulated=3, unresolved=1)


def test_recall_is_read_from_metrics_only_when_present() -> None:
    assert recall_stat(METRICS) == Stat(0.6, 0.5, 0.7, 2) and has_recall(METRICS)
    assert [s.mean for s in period_series(METRICS, "memory_recall")] == [0.5, 0.7]
    assert not has_recall({"overall": {"memory_score": {"mean": 0.1}}, "per_period": [{"period": 0}]})


def test_evolution_view_passes_text_through() -> None:
    record = {"policy": "<b>keep</b>", "policy_version": 1, "status": "accepted", "changes": ["more", 3],
              "next_policy": "next", "next_policy_version": 2, "recall": {"recall": 0.5, "supported": 1,
                                                                           "revealed": 2}}
    view = evolution_view(record)
    assert view is not None
    assert view["policy"] == "<b>keep</b>" and view["changes"] == ["more", "3"] and view["recall"] == 0.5
    assert evolution_view({"status": "accepted"}) is None and evolution_view(None) is None


def test_summary_table_gains_a_recall_column_only_for_recall_runs() -> None:
    plain = summarize("plain", "native", {"overall": {}})
    evolved = summarize("evo", "awi+evolve(complete)", METRICS)
    assert "memory recall" not in summary_table([plain])
    html = summary_table([plain, evolved])
    assert "memory recall" in html and "0.600 [0.500, 0.700]" in html


def test_simulator_table_shows_audit_rates_and_guard_counts() -> None:
    s = summarize("run", "native", METRICS)
    assert simulator_table([(s, None, LeakGuard(3, 0, 0))]) == ""
    html = simulator_table([(s, audit_summary(AUDIT), LeakGuard(3, 2, 1))])
    assert "reveals value" in html and "12.5 %" in html and "25.0 %" in html
    row = re.findall(r"<tr>(.*?)</tr>", html)[-1]
    assert re.findall(r"<td>(.*?)</td>", row)[-2:] == ["2", "1"]
    assert "&lt;b&gt;" in simulator_table([(summarize("<b>", "a", {}), audit_summary(AUDIT), None)])


def test_curves_figure_draws_a_recall_panel() -> None:
    pytest.importorskip("matplotlib")
    from amemgym.report.figures import curves_figure

    panels = (*curve_panels(), RECALL_CURVE)
    fig = curves_figure({"a": {n: period_series(METRICS, n) for n, _ in panels}}, panels)
    assert [ax.get_title() for ax in fig.axes] == [t for _, t in panels]


def page_data(html: str) -> dict:
    block = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', html, re.S)
    assert block
    return json.loads(block.group(1))


@pytest.fixture(scope="module")
def evolution_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """An evolution run (scripted fake) with a lexical simulator audit, and its report page."""
    pytest.importorskip("matplotlib")
    tmp = tmp_path_factory.mktemp("evo_report")
    asyncio.run(evolve_once(tmp / "run", script, tmp))
    asyncio.run(audit_run(RunDir(tmp / "run"), load_environment(ENV)))
    return tmp / "run", build_report([tmp / "run"]).html


def test_report_of_an_evolution_run_shows_recall_policy_and_audit(evolution_report: tuple[Path, str]) -> None:
    run, html = evolution_report
    metrics = json.loads((run / "metrics.json").read_text())
    summary = re.search(r'<table id="summary">.*?</table>', html, re.S)
    assert summary and "memory recall" in summary.group(0)
    assert Stat.of(metrics["overall"]["memory_recall"]).text() in summary.group(0)
    assert '<table id="simulator">' in html and "reveals value" in html
    data = page_data(html)
    uid, cycles_dir = next((u["id"], u) for u in data["runs"][0]["users"])
    record = json.loads((run / "users" / uid / "evolution" / "period_01.json").read_text())
    period = cycles_dir["periods"][1]
    assert period["evolution"]["policy"] == record["policy"]
    assert period["evolution"]["next_policy"] == record["next_policy"]
    assert period["evolution"]["status"] == record["status"]
    assert period["cell"]["memory_recall"] == metrics["per_user"][uid]["1"]["memory_recall"]


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed")
def test_policy_renders_as_text_in_the_browser(evolution_report: tuple[Path, str], tmp_path: Path) -> None:
    run, html = evolution_report
    page = tmp_path / "report.html"
    page.write_text(html, encoding="utf-8")
    uid = json.loads((run / "manifest.json").read_text())["users"][0]
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={tmp_path / 'p'}",
           "--virtual-time-budget=3000", "--dump-dom", f"{page.as_uri()}#run=0&user={uid}&period=1"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    dom = done.stdout
    assert 'data-ready="1"' in dom and re.search(r'<pre id="console-errors" hidden="">\s*</pre>', dom)
    assert "Memory policy (self-evolution)" in dom and '<pre class="policy">' in dom
    assert "memory recall" in dom
