"""``python -m amemgym.eval.overall``: the full on-policy evaluation with the original flags."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from ..run.driver import run_command
from ._compat import agent_from_original, app_config, main_guard, output_dir, parser


def main() -> int:
    """Run, or resume, the evaluation of one agent."""
    args = parser("Evaluate an agent on-policy (amemgym runner, original flags).").parse_args()
    agent, name, overrides = agent_from_original(args.agent_config)
    cfg = app_config(args, overrides)
    off = Path(args.off_policy_dir) if args.off_policy_dir else None
    return run_command(cfg, Path(args.env_data), agent, output_dir(args, name), off_policy=off, console=Console())


if __name__ == "__main__":
    main_guard(main)
