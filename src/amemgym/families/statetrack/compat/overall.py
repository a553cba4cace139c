"""``python -m amemgym.eval.overall``: the full on-policy evaluation with the original flags and config files."""

from __future__ import annotations

from ....console import new_console
from .flags import main_guard, parser, run_original


def main() -> int:
    """Run, or resume, the evaluation of one agent."""
    args = parser("Evaluate an agent on-policy (amemgym runner, original flags).").parse_args()
    code, _ = run_original(args, new_console())
    return code


if __name__ == "__main__":
    main_guard(main)
