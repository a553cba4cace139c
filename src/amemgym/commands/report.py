"""``amemgym report``, ``leaderboard`` and ``compare``: see and rank results of finished runs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from ..cli_common import handled, out
from ..errors import ConfigError, RunError
from ..storage import atomic_write_text

RunsArg = Annotated[list[Path], typer.Argument(help="Run directories (each with manifest.json and metrics.json), "
                                               "or a --trials output (its trials pooled).")]


def report(
    runs: RunsArg,
    out_file: Annotated[Path, typer.Option("--out", "-o", help="HTML file to write.")] = Path("report.html"),
    figures: Annotated[Path | None, typer.Option("--figures", help="Also write PNG and SVG figures here.")] = None,
    env: Annotated[Path | None, typer.Option("--env", help="Environment file, if the manifests' one moved.")]
    = None,
) -> None:
    """Write one self-contained HTML report (tables, curves, diagnosis, heat maps, trace browser)."""
    from ..report.build import build_report
    from ..report.figures import write_figures

    rep = build_report(list(runs), env_override=env)
    atomic_write_text(out_file, rep.html)
    for note in rep.notes:
        out.print(f"note: {note}", highlight=False, markup=False)
    out.print(f"wrote {out_file}", highlight=False, markup=False)
    if figures is not None:
        paths = write_figures(rep.figures, figures)
        out.print(f"wrote {len(paths)} figure files to {figures}", highlight=False, markup=False)


def leaderboard_cmd(
    runs: RunsArg,
    out_md: Annotated[Path | None, typer.Option("--out-md", help="Write the board as Markdown.")] = None,
    out_csv: Annotated[Path | None, typer.Option("--out-csv", help="Write the board as CSV.")] = None,
) -> None:
    """Rank runs by memory score, within groups of the same environment and protocol."""
    from ..report.leaderboard import DISPLAY_COLUMNS, display_rows, leaderboard, to_csv, to_markdown
    from ..report.load import load_runs

    entries = leaderboard(load_runs(list(runs)))
    table = Table(*DISPLAY_COLUMNS, title="amemgym leaderboard (ranked within each group)")
    for row in display_rows(entries):
        table.add_row(*row)
    out.print(table)
    for e in entries:
        # Printed outside the table too: a narrow terminal would cut the flags column short.
        if e.summary.degenerate:
            out.print(f"[red]DEGENERATE[/] (not ranked) {e.summary.label}: {'; '.join(e.summary.flags)}; memory "
                      f"score {e.summary.memory_text()}", highlight=False)
    if len({e.group for e in entries}) > 1:
        out.print("note: runs differ in environment or protocol; each group is ranked separately",
                  highlight=False, markup=False)
    if out_md is not None:
        atomic_write_text(out_md, to_markdown(entries))
    if out_csv is not None:
        atomic_write_text(out_csv, to_csv(entries))


def compare(
    run_a: Annotated[Path, typer.Argument(help="Baseline run directory (A).")],
    run_b: Annotated[Path, typer.Argument(help="Candidate run directory (B); differences are B - A.")],
    bootstrap: Annotated[int, typer.Option("--bootstrap", help="Bootstrap resamples (also the permutation "
                                                               "test's sample size beyond 12 users).")] = 10_000,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the resampling.")] = 0,
) -> None:
    """Paired comparison of two runs on the same environment: mean memory-score gain, 95 % CI, p-value."""
    from ..report.leaderboard import trials_flag
    from ..report.load import load_runs
    from ..report.stats import cell_differences, paired_comparison

    if bootstrap < 1:
        raise ConfigError("--bootstrap must be at least 1")
    a, b = load_runs([run_a, run_b])
    if a.environment_sha256 != b.environment_sha256:
        raise RunError(f"{a.root} and {b.root} were run on different environments (sha256 "
                       f"{str(a.environment_sha256)[:12]} vs {str(b.environment_sha256)[:12]}); a paired comparison "
                       "needs the same environment")
    diffs = cell_differences(a.metrics.get("per_user") or {}, b.metrics.get("per_user") or {})
    if not diffs:
        raise RunError("the runs share no (user, period) cell with a defined memory score")
    res = paired_comparison(diffs, resamples=bootstrap, seed=seed)
    table = Table("quantity", "value", title=f"{b.label} (B) vs {a.label} (A): memory score, B - A")
    table.add_row("shared users / cells", f"{res.users} / {res.cells}")
    table.add_row("memory score A / B", f"{_mean(a.metrics)} / {_mean(b.metrics)}")
    table.add_row("mean difference", f"{res.mean_diff:+.4f}")
    ci = "n/a (one user)" if res.lo is None else f"[{res.lo:+.4f}, {res.hi:+.4f}]"
    table.add_row("95 % bootstrap CI (users resampled)", ci)
    how = "exact, all sign patterns" if res.exact else f"{res.resamples} random sign patterns"
    table.add_row(f"p-value (paired sign-flip permutation over users; {how})", f"{res.p_value:.4g}")
    table.add_row("seed / resamples", f"{res.seed} / {res.resamples}")
    from ..report.aggregate import cell_counts, degeneracy_flags

    for name, run in (("A", a), ("B", b)):
        excluded, total = cell_counts(run.metrics)
        if total:
            table.add_row(f"cells excluded from {name}'s memory score (UB <= R)", f"{excluded}/{total}")
        flags = degeneracy_flags(run.metrics)
        table.add_row(f"flags of {name}", "; ".join(f"DEGENERATE: {f}" for f in flags) or "-")
    for name, run in (("A", a), ("B", b)):
        if run.metrics.get("trials"):
            table.add_row(f"{name}: trials", trials_flag(run.metrics["trials"]))
    out.print(table)
    for name, run in (("A", a), ("B", b)):
        for flag in degeneracy_flags(run.metrics):
            out.print(f"[red]DEGENERATE[/] run {name} ({run.label}): {flag}; the difference says little about "
                      "memory", highlight=False)
    if not (a.complete and b.complete):
        out.print("note: at least one run is incomplete; only cells present in both are compared",
                  highlight=False, markup=False)


def _mean(metrics: dict) -> str:
    m = ((metrics.get("overall") or {}).get("memory_score") or {}).get("mean")
    return "-" if m is None else f"{m:.4f}"


def register(app: typer.Typer) -> None:
    """Add ``report``, ``leaderboard`` and ``compare`` to the CLI."""
    app.command("report")(handled(report))
    app.command("leaderboard")(handled(leaderboard_cmd))
    app.command("compare")(handled(compare))
