"""``python -m amemgym.eval.random``: the analytic random baseline (1 / number of options), no model."""

from __future__ import annotations

from pathlib import Path

from ..data.io import load_environment
from ..storage import atomic_write_json
from ._compat import main_guard, output_dir, parser


def main() -> int:
    """Compute and write the random baseline per period."""
    args = parser("Random baseline (original flags).").parse_args()
    env = load_environment(Path(args.env_data))
    # Every period asks the same questions with the same options, so the baseline is flat over periods.
    vals = [1.0 / len(qa.answer_choices) for u in env.users for qa in u.qas]
    per_period = [sum(vals) / len(vals)] * env.num_periods
    out = output_dir(args, "random")
    atomic_write_json(out / "random_metrics.json", {"per_period": per_period, "mean": per_period[0]})
    print(f"random baseline per period: {[round(x, 3) for x in per_period]}; results: {out / 'random_metrics.json'}")
    return 0


if __name__ == "__main__":
    main_guard(main)
