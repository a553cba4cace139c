"""From run directories to the report page and its figures.

The page's charts are JSON drawn in the browser (:mod:`amemgym.report.charts`), so building it imports no
plotting library; the matplotlib figures are made only when :attr:`Report.figures` is read (``--figures``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .aggregate import (
    RECALL_CURVE,
    curve_panels,
    failure_series,
    period_series,
    question_period_grid,
    summarize,
    user_period_grid,
)
from .browser import browser_run
from .charts import curves_chart, diagnosis_chart, heatmap_chart, is_large
from .extras import has_recall, leak_guard, read_sim_audit
from .figures import curves_figure, diagnosis_figure, heatmap_figure
from .html import FigureImage, SimulatorRow, render_report
from .leaderboard import trials_flag
from .load import RunRecord, answer_rule, eval_records, load_run_environment, load_runs, session_records

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ..families.statetrack.data.model import Environment


RECALL_NOTE = (" Memory recall: share of the facts revealed in a period that the judge finds in the agent's"
               " memory (self-evolution runs).")


#: What an undefined heat-map cell means, shown in each heat map's legend.
UNDEFINED_MEMORY = "not evaluated, or upper bound <= random (the memory score's normalisation is undefined)"
UNDEFINED_QUESTION = "question not evaluated in this period"


@dataclass
class Report:
    """A built report: the page, its notes, and (made on first access) the matplotlib figures by file name."""

    html: str
    notes: list[str]
    runs: list[RunRecord] = field(default_factory=list, repr=False)

    @cached_property
    def figures(self) -> dict[str, Figure]:
        """The report's figures drawn with matplotlib (needs the ``report`` extra)."""
        return run_figures(self.runs)


def _safe(label: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in label)


def run_figures(runs: list[RunRecord]) -> dict[str, Figure]:
    """Curves (with a memory-recall panel when a run carries recall), diagnosis bars and per-run heat maps."""
    panels = curve_panels() + ((RECALL_CURVE,) if any(has_recall(r.metrics) for r in runs) else ())
    figures: dict[str, Figure] = {
        "curves": curves_figure({r.label: {n: period_series(r.metrics, n) for n, _ in panels} for r in runs},
                                panels),
        "diagnosis": diagnosis_figure({r.label: failure_series(r.metrics) for r in runs}),
    }
    for r in runs:
        ms = user_period_grid(r.metrics, r.users, r.num_periods)
        figures[f"heat_memory_{_safe(r.label)}"] = heatmap_figure(ms, "memory score (user x period)", vmin=-1.0,
                                                                  vmax=1.0, cmap="RdBu")
        evals = {u: eval_records(r, u) for u in r.users}
        qs = question_period_grid(evals, r.num_periods, answer_rule(r))
        figures[f"heat_questions_{_safe(r.label)}"] = heatmap_figure(qs, "accuracy (question x period)")
    return figures


def _num(value: Any) -> str:
    return f"{value:.3f}" if isinstance(value, int | float) else str(value if value is not None else "n/a")


def scoring_note(label: str, metrics: dict[str, Any]) -> str | None:
    """How a run's answers and memory score were counted: invalid answers and both aggregations, named."""
    answers = metrics.get("answers") or {}
    overall = metrics.get("overall") or {}
    if not answers.get("total") and "memory_score_original" not in overall:
        return None
    parts = []
    if answers.get("total"):
        parts.append(f"invalid answers {answers.get('invalid', 0)} of {answers['total']} (headline rule: "
                     f"{answers.get('rule', 'strict')}); overall strict {_num(answers.get('overall_strict'))}, "
                     f"original rule {_num(answers.get('overall_original_rule'))}.")
    if "memory_score_original" in overall:
        mean = (overall.get("memory_score") or {}).get("mean")
        parts.append(f"Memory score, amemgym's aggregation (mean over users, undefined cells excluded: "
                     f"{overall.get('undefined_memory_cells', 0)}) {_num(mean)}; the original's (mean over all "
                     f"user x period cells, unguarded) {_num(overall['memory_score_original'])}.")
    return f"{label}: " + " ".join(parts)


def build_report(roots: list[Path], *, env_override: Path | None = None, title: str = "amemgym report",
                 environment: tuple[Environment, str] | None = None) -> Report:
    """Load runs and render the self-contained page.

    Args:
        roots: run directories, in legend order.
        env_override: environment file to use instead of the one each manifest names.
        title: page title.
        environment: an environment already loaded and checked, with its sha256 (``amemgym run`` passes the
            one it just ran, so the file is not parsed and hashed again); used for the runs whose manifest
            records that hash.
    """
    runs = load_runs(roots)
    notes: list[str] = []
    hashes = {r.environment_sha256 for r in runs}
    if len(hashes) > 1:
        notes.append("These runs were made on different environments; their numbers are not comparable.")
    browser: list[dict[str, Any]] = []
    simulator: list[SimulatorRow] = []
    summaries = [summarize(r.label, r.agent, r.metrics) for r in runs]
    for r, summary in zip(runs, summaries, strict=True):
        env: Environment | None
        why: str | None
        if environment is not None and r.environment_sha256 == environment[1]:
            env, why = environment[0], None
        else:
            env, why = load_run_environment(r, env_override)
        if why:
            notes.append(f"{r.label}: true states not shown ({why}).")
        if r.metrics.get("trials"):
            notes.append(f"{r.label}: {trials_flag(r.metrics['trials'])} (numbers pooled over trials, intervals "
                         f"over users; the conversations and the question heat map are from {r.detail_root.name}).")
        if not r.complete:
            missing = len(r.metrics.get("missing") or [])
            notes.append(f"{r.label}: incomplete run ({missing} user-period cells not evaluated).")
        note = scoring_note(r.label, r.metrics)
        if note:
            notes.append(note)
        diffs = (r.metrics.get("protocol_settings") or {}).get("differences_from_original") or []
        if diffs:
            notes.append(f"{r.label}: not comparable with published results: {'; '.join(diffs)}.")
        browser.append(browser_run(r, env, why))
        audit, problem = read_sim_audit(r)
        if problem:
            notes.append(f"{r.label}: simulator audit not shown ({problem}).")
        guard = leak_guard(rec for u in r.users for rec in session_records(r, u).values())
        simulator.append((summary, audit, guard))
    charts = run_charts(runs)
    heat = [(r.label, [FigureImage(f"{kind} heat map of {r.label}", chart=f"heat_{kind}_{i}",
                                   collapsed=is_large(charts[f"heat_{kind}_{i}"]))
                       for kind in ("memory", "questions")]) for i, r in enumerate(runs)]
    html = render_report(
        title=title,
        summaries=summaries,
        notes=notes,
        curves=FigureImage("per-period curves", chart="curves", caption="Shaded bands: 95 % intervals over users."
                           + (RECALL_NOTE if any(has_recall(r.metrics) for r in runs) else "")),
        diagnosis=FigureImage("failure diagnosis", chart="diagnosis",
                              caption="Write and read rates per probed variable; utilization per question."),
        heatmaps=heat,
        browser=browser,
        simulator=simulator,
        charts=charts,
    )
    return Report(html=html, notes=notes, runs=runs)


def run_charts(runs: list[RunRecord]) -> dict[str, Any]:
    """The page's chart data: the same quantities as :func:`run_figures`, keyed by chart id."""
    panels = curve_panels() + ((RECALL_CURVE,) if any(has_recall(r.metrics) for r in runs) else ())
    charts: dict[str, Any] = {
        "curves": curves_chart({r.label: {n: period_series(r.metrics, n) for n, _ in panels} for r in runs}, panels),
        "diagnosis": diagnosis_chart({r.label: failure_series(r.metrics) for r in runs}),
    }
    for i, r in enumerate(runs):
        ms = user_period_grid(r.metrics, r.users, r.num_periods)
        charts[f"heat_memory_{i}"] = heatmap_chart(ms, f"memory score (user x period): {r.label}", vmin=-1.0,
                                                   vmax=1.0, diverging=True, undefined=UNDEFINED_MEMORY)
        qs = question_period_grid({u: eval_records(r, u) for u in r.users}, r.num_periods, answer_rule(r))
        charts[f"heat_questions_{i}"] = heatmap_chart(qs, f"accuracy (question x period): {r.label}",
                                                      undefined=UNDEFINED_QUESTION)
    return charts
