"""``amemgym export``: a finished run's trajectories as fine-tuning data."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..cli_common import handled, out


def register(app: typer.Typer) -> None:
    """Add the ``export`` command to ``app``."""

    @app.command("export")
    @handled
    def export(
        rundir: Annotated[Path, typer.Argument(help="A run directory written by `amemgym run`.")],
        out_file: Annotated[Path, typer.Option("--out", "-o", help="JSONL file to write.")],
        fmt: Annotated[str, typer.Option("--format", "-f", help="openai-chat (one conversation a line) or "
                                         "jsonl (one message a line, with metadata).")] = "openai-chat",
        with_evaluation: Annotated[bool, typer.Option("--with-evaluation", help="Add the evaluation turns: in "
                                                      "openai-chat, each correct answer after the conversation "
                                                      "up to its period; in jsonl, every answer with its reward.")]
        = False,
        unit: Annotated[str, typer.Option("--unit", help="openai-chat lines: episode (a user's whole "
                                          "conversation, default) or session (one session each).")] = "episode",
    ) -> None:
        """Export the conversations of a run (and optionally its scored evaluations) for training."""
        from ..train.export import export_run

        summary = export_run(rundir, out_file, fmt=fmt, with_evaluation=with_evaluation, unit=unit)
        out.print(f"wrote {summary.lines} lines to {summary.path} ({summary.users} users, {summary.sessions} "
                  f"sessions, {summary.evaluations} evaluation answers)", highlight=False)
        if summary.left_out:
            out.print(f"left out {summary.left_out} wrongly answered evaluation(s): no trainable target "
                      "(use --format jsonl to keep every answer with its reward)", highlight=False)
