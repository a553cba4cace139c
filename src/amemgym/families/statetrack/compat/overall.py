"""``python -m amemgym.eval.overall``: the full on-policy evaluation with the original flags and config files."""

from __future__ import annotations

from rich.console import Console

from .flags import main_guard, parser, run_original


def main() -> int:
    """Run, or resume, the evaluation of one agent."""
    args = parser("Evaluate an agent on-policy (amemgym runner, original flags).").parse_args()
    code, _ = run_original(args, Console())
    return code


if __name__ == "__main__":
    main_guard(main)
