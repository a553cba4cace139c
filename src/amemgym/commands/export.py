"""``amemgym export``: a finished run's trajectories as fine-tuning data."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..cli_common import check_output, handled, out
from ..families import family_for_run, training_method


def register(app: typer.Typer) -> None:
    """Add the ``export`` command to ``app``."""

    @app.command("export")
    @handled
    def export(
        rundir: Annotated[Path, typer.Argument(help="A run directory written by `amemgym run` (any family).")],
        out_file: Annotated[Path, typer.Option("--out", "-o", help="JSONL file to write.")],
        fmt: Annotated[str, typer.Option("--format", "-f", help="openai-chat (one conversation a line) or "
                                         "jsonl (one message, or a budget run's tool call, a line, with "
                                         "metadata).")] = "openai-chat",
        with_evaluation: Annotated[bool, typer.Option("--with-evaluation", help="Add the evaluation turns: in "
                                                      "openai-chat, each correct answer after the conversation "
                                                      "up to its period (a budget run: each correctly answered "
                                                      "question event); in jsonl, every answer with its reward.")]
        = False,
        unit: Annotated[str | None, typer.Option("--unit", help="openai-chat lines of a statetrack run: episode (a "
                                                 "user's whole conversation, default) or session (one session "
                                                 "each); a budget run has one line per event.")] = None,
    ) -> None:
        """Export the conversations of a run (and optionally its scored evaluations) for training."""
        check_output(out_file, "--out")
        family = family_for_run(rundir)
        result = training_method(family, "export")(rundir, out_file, fmt=fmt, unit=unit,
                                                   with_evaluation=with_evaluation)
        out.print(f"wrote {result.lines} lines to {result.path} ({result.detail})", highlight=False)
        for note in result.notes:
            out.print(note, highlight=False)
