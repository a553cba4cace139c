"""``python -m amemgym.eval.upperbound``: the bare model's accuracy when the state is given (no agent run)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from ....llm.client import LLMClient
from ....seeding import derive_seed
from ....storage import atomic_write_json
from ..data.io import load_environment
from ..questioning import combo_key, upper_bound_answers
from .flags import agent_from_original, app_config, main_guard, output_dir, parser


def main() -> int:
    """Ask every needed (question, combination) once and report the per-period upper bound.

    As in the original, the folder is ``<output_dir>/<model>`` and invalid answers follow the original's
    rule; ``utilization_metrics.json`` holds the original's ``{"accuracy": [user][period][question]}``.
    """
    args = parser("Upper bound: answer with the required state given (original flags).").parse_args()
    agent = agent_from_original(args.agent_config)
    cfg = app_config(args, agent)
    env = load_environment(Path(args.env_data))
    out = output_dir(args, str(agent.endpoint.get("model") or "default").replace("/", "_"))
    llm = LLMClient.from_config(cfg.llm)

    async def go() -> dict[str, dict[str, Any]]:
        try:
            budget = cfg.run.eval_max_tokens
            return {u.id: await upper_bound_answers(llm, u, {}, budget, derive_seed(cfg.run.seed, u.id))
                    for u in env.users}
        finally:
            await llm.aclose()

    answers = asyncio.run(go())
    cube = [[[answers[u.id][combo_key(q, tuple(period.state[v] for v in qa.required_info))]["score_original_rule"]
              for q, qa in enumerate(u.qas)] for period in u.periods] for u in env.users]
    per_period = []
    for p in range(env.num_periods):
        scores = [x for user in cube for x in user[p]]
        per_period.append(sum(scores) / len(scores))
    mean = sum(per_period) / len(per_period)
    atomic_write_json(out / "upper_bound.json", {"answers": answers, "per_period": per_period, "mean": mean,
                                                 "answer_rule": "original"})
    atomic_write_json(out / "utilization_metrics.json", {"accuracy": cube})
    print(f"upper bound per period: {[round(x, 3) for x in per_period]}; mean {mean:.3f}")
    print(f"results: {out / 'upper_bound.json'} and {out / 'utilization_metrics.json'}")
    return 0


if __name__ == "__main__":
    main_guard(main)
