"""Seeing results: the HTML report, figures, the leaderboard and paired comparisons of runs."""

from __future__ import annotations

from .aggregate import Grid, Stat, Summary, summarize
from .build import Report, build_report
from .leaderboard import Entry, leaderboard, to_csv, to_markdown
from .load import RunRecord, load_run, load_runs
from .stats import PairedComparison, cell_differences, paired_comparison

__all__ = [
    "Entry",
    "Grid",
    "PairedComparison",
    "Report",
    "RunRecord",
    "Stat",
    "Summary",
    "build_report",
    "cell_differences",
    "leaderboard",
    "load_run",
    "load_runs",
    "paired_comparison",
    "summarize",
    "to_csv",
    "to_markdown",
]
