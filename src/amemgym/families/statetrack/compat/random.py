"""``python -m amemgym.eval.random``: the analytic random baseline (1 / number of options), no model."""

from __future__ import annotations

from pathlib import Path

from ....storage import atomic_write_json
from ..data.io import load_environment
from .flags import main_guard, output_dir, parser


def main() -> int:
    """Compute and write the random baseline per period.

    With ``--output_file`` (the original's flag) the file holds the original's shape,
    ``{"accuracy": [user][period][question]}``; otherwise ``<output_dir>/random/random_metrics.json`` holds
    amemgym's per-period summary.
    """
    p = parser("Random baseline (original flags).")
    p.add_argument("--output_file", default=None,
                   help="Write the original's random_metrics.json shape to this file.")
    args = p.parse_args()
    env = load_environment(Path(args.env_data))
    # Exactly one option matches the state at every period, so a uniform pick scores 1/options everywhere.
    cube = [[[1.0 / len(qa.answer_choices) for qa in u.qas] for _ in u.periods] for u in env.users]
    vals = [x for user in cube for row in user[:1] for x in row]
    per_period = [sum(vals) / len(vals)] * env.num_periods
    if args.output_file:
        out = Path(args.output_file)
        atomic_write_json(out, {"accuracy": cube})
    else:
        out = output_dir(args, "random") / "random_metrics.json"
        atomic_write_json(out, {"per_period": per_period, "mean": per_period[0]})
    print(f"random baseline per period: {[round(x, 3) for x in per_period]}; results: {out}")
    return 0


if __name__ == "__main__":
    main_guard(main)
