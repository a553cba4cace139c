"""``python -m amemgym.eval.upperbound``: the bare model's accuracy when the state is given (no agent run)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from ..data.io import load_environment
from ..llm.client import LLMClient
from ..run.evaluation import combo_key, upper_bound_answers
from ..seeding import derive_seed
from ..storage import atomic_write_json
from ._compat import agent_from_original, app_config, main_guard, output_dir, parser


def main() -> int:
    """Ask every needed (question, combination) once and report the per-period upper bound."""
    args = parser("Upper bound: answer with the required state given (original flags).").parse_args()
    _, _, overrides = agent_from_original(args.agent_config)
    cfg = app_config(args, overrides)
    env = load_environment(Path(args.env_data))
    out = output_dir(args, "ub-" + (overrides.get("model") or "default").replace("/", "_"))
    llm = LLMClient.from_config(cfg.llm)

    async def go() -> dict[str, dict[str, dict]]:
        try:
            budget = cfg.run.eval_max_tokens
            return {u.id: await upper_bound_answers(llm, u, {}, budget, derive_seed(cfg.run.seed, u.id))
                    for u in env.users}
        finally:
            await llm.aclose()

    answers = asyncio.run(go())
    per_period = []
    for p in range(env.num_periods):
        scores = [answers[u.id][combo_key(q, tuple(u.periods[p].state[v] for v in qa.required_info))]["score"]
                  for u in env.users for q, qa in enumerate(u.qas)]
        per_period.append(sum(scores) / len(scores))
    atomic_write_json(out / "upper_bound.json", {"answers": answers, "per_period": per_period,
                                                 "mean": sum(per_period) / len(per_period)})
    print(f"upper bound per period: {[round(x, 3) for x in per_period]}; mean {sum(per_period) / len(per_period):.3f}")
    print(f"results: {out / 'upper_bound.json'}")
    return 0


if __name__ == "__main__":
    main_guard(main)
