"""``python -m amemgym.eval.diagnosis``: write / read / utilization failure rates (runs or resumes the run)."""

from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console

from ..run.driver import run_command
from ._compat import agent_from_original, app_config, main_guard, output_dir, parser


def main() -> int:
    """Finish the run if needed, then print the failure rates per period."""
    args = parser("Diagnose memory failures (amemgym runner, original flags).").parse_args()
    agent, name, overrides = agent_from_original(args.agent_config)
    out = output_dir(args, name)
    off = Path(args.off_policy_dir) if args.off_policy_dir else None
    console = Console()
    code = run_command(app_config(args, overrides), Path(args.env_data), agent, out, off_policy=off, console=console)
    metrics = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    for row in metrics["per_period"]:
        console.print(f"period {row['period']:2d}: {row['failure_rates']}", highlight=False)
    return code


if __name__ == "__main__":
    main_guard(main)
