"""``amemgym report``, ``leaderboard`` and ``compare``: see and rank results of finished runs."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from ..cli_common import check_output, handled, out
from ..engine.read import check_manifest_file
from ..errors import ConfigError
from ..families import get_family, group_runs
from ..runfiles import MANIFEST, REPORT
from ..storage import write_output_text

if TYPE_CHECKING:
    from ..families import Board

RunsArg = Annotated[list[Path], typer.Argument(help="Run directories (each with manifest.json and metrics.json), "
                                               "or a --trials output (its trials pooled).")]


def _one_family(runs: list[Path], what: str) -> tuple[str, list[Path]]:
    """The single family of ``runs`` and the runs; several families in one ``what`` is an error, and so is a
    run whose ``manifest.json`` cannot be read (it names the family, so it would be taken for a statetrack run)."""
    for run in runs:
        if (run / MANIFEST).is_file():
            check_manifest_file(run / MANIFEST)
    groups = group_runs(runs)
    if len(groups) > 1:
        raise ConfigError(f"cannot mix {' and '.join(groups)}-family runs in one {what}")
    ((name, dirs),) = groups.items()
    return name, dirs


def report(
    runs: RunsArg,
    out_file: Annotated[Path, typer.Option("--out", "-o", help="HTML file to write.")] = Path(REPORT),
    figures: Annotated[Path | None, typer.Option("--figures", help="Also write PNG and SVG figures here.")] = None,
    env: Annotated[Path | None, typer.Option("--env", help="Environment file, if the manifests' one moved.")]
    = None,
) -> None:
    """Write one self-contained HTML report (tables, curves, diagnosis, heat maps, trace browser)."""
    check_output(out_file, "--out")
    name, dirs = _one_family(list(runs), "report")
    raise typer.Exit(get_family(name).report(dirs, out_file, env=env, figures=figures, console=out))


def leaderboard_cmd(
    runs: RunsArg,
    out_md: Annotated[Path | None, typer.Option("--out-md", help="Write the board as Markdown.")] = None,
    out_csv: Annotated[Path | None, typer.Option("--out-csv", help="Write the board as CSV.")] = None,
) -> None:
    """Rank runs within groups of the same family, environment or tier, and protocol."""
    check_output(out_md, "--out-md")
    check_output(out_csv, "--out-csv")
    boards = [get_family(name).leaderboard(dirs) for name, dirs in group_runs(list(runs)).items()]
    if out_csv is not None and len(boards) > 1 and out_csv.exists() and not out_csv.is_file():
        # Several families write one CSV each beside --out-csv (their columns differ): beside a device or a
        # pipe (/dev/stdout) that would make new files in its folder.
        raise ConfigError(f"--out-csv {out_csv}: runs of {len(boards)} families are written as one CSV each, "
                          "beside the given name, so it must name a file (or give runs of one family)")
    for board in boards:
        out.print(_board_table(board, out.width))
        for note in board.notes:
            # Printed outside the table too: a narrow terminal would cut the flags column short.
            out.print(note, highlight=False)
    if len(boards) > 1:
        out.print(f"note: runs of {len(boards)} families; each family is ranked on its own board",
                  highlight=False, markup=False)
    if out_md is not None:
        text = (boards[0].markdown if len(boards) == 1
                else "\n".join(f"## {b.family} family\n\n{b.markdown}" for b in boards))
        write_output_text(out_md, text)
    if out_csv is not None:
        if len(boards) == 1:
            write_output_text(out_csv, boards[0].csv)
        else:
            # The families' columns differ, so one CSV per family keeps every file rectangular.
            for b in boards:
                path = out_csv.with_name(f"{out_csv.stem}-{b.family}{out_csv.suffix}")
                write_output_text(path, b.csv)
                out.print(f"wrote {path}", highlight=False, markup=False)


def _board_table(board: Board, width: int) -> Table:
    """The board as one table, or, when its columns cannot fit ``width`` without cutting values short, as
    one field/value block per row (every value stays readable in a narrow terminal or a captured log)."""
    widths = [max(len(c), *(len(r[i]) for r in board.rows)) if board.rows else len(c)
              for i, c in enumerate(board.columns)]
    if sum(w + 3 for w in widths) + 1 <= width:
        table = Table(*board.columns, title=board.title)
        for row in board.rows:
            table.add_row(*row)
        return table
    table = Table("field", "value", title=board.title, show_lines=True)
    for n, row in enumerate(board.rows, 1):
        table.add_row(f"entry {n}", "\n".join(f"{c}: {v}" for c, v in zip(board.columns, row, strict=True)))
    return table


def compare(
    run_a: Annotated[Path, typer.Argument(help="Baseline run directory (A); for the budget family also a folder "
                                                "of runs, paired by episode.")],
    run_b: Annotated[Path, typer.Argument(help="Candidate run directory (B); differences are B - A.")],
    bootstrap: Annotated[int, typer.Option("--bootstrap", min=1, max=100_000,
                                           help="Bootstrap resamples (also the permutation test's sample size "
                                                "beyond 12 users).")] = 10_000,
    seed: Annotated[int, typer.Option("--seed", min=0, help="Seed of the resampling.")] = 0,
) -> None:
    """Paired comparison of two runs on the same environment: mean score gain, 95 % CI, p-value."""
    name, _ = _one_family([run_a, run_b], "comparison")
    raise typer.Exit(get_family(name).compare(run_a, run_b, bootstrap=bootstrap, seed=seed, console=out))


def register(app: typer.Typer) -> None:
    """Add ``report``, ``leaderboard`` and ``compare`` to the CLI."""
    app.command("report")(handled(report))
    app.command("leaderboard")(handled(leaderboard_cmd))
    app.command("compare")(handled(compare))
