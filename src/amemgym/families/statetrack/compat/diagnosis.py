"""``python -m amemgym.eval.diagnosis``: write / read / utilization failure rates (runs or resumes the run)."""

from __future__ import annotations

from ....console import new_console
from ....records import Metrics, as_dict, read_record
from ....runfiles import METRICS
from .flags import main_guard, parser, run_original


def main() -> int:
    """Finish the run if needed, then print the failure rates per period."""
    args = parser("Diagnose memory failures (amemgym runner, original flags).").parse_args()
    console = new_console()
    code, out = run_original(args, console)
    metrics = as_dict(read_record(out / METRICS, Metrics))
    for row in metrics["per_period"]:
        console.print(f"period {row['period']:2d}: {row['failure_rates']}", highlight=False)
    return code


if __name__ == "__main__":
    main_guard(main)
