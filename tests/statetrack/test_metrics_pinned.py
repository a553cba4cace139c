"""Refactors must not move a number: metrics of the bundled environment with the scripted fake are pinned.

The scripted agent answers some questions wrongly and misreports some probes (a fixed pattern), so every
metric (overall, upper bound, random, memory score, the three failure rates, per period and per user)
is exercised. After a deliberate change of scoring, regenerate the fixture with
``AMEMGYM_REPIN=1 python -m pytest tests/statetrack/test_metrics_pinned.py`` and say why in the commit.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from amemgym.agents import resolve_agent
from amemgym.config import load_config
from amemgym.families.statetrack.data import load_environment
from amemgym.families.statetrack.data.model import Environment, UserEnv
from amemgym.families.statetrack.generate.procedural import tiny_environment_path
from amemgym.families.statetrack.runner import Runner
from amemgym.llm.types import ChatRequest
from amemgym.testing.run_script import RunScript

PINNED = Path(__file__).parents[1] / "fixtures" / "pinned_metrics.json"


def _imperfect(user: UserEnv, salt: int) -> RunScript:
    """Wrong on about a third of the (period, question) cells and misprobed on about a quarter, per user."""
    picks: dict[tuple[int, int], list[str]] = {}
    probes: dict[tuple[int, int], dict[str, str]] = {}
    for p, period in enumerate(user.periods):
        for q, qa in enumerate(user.qas):
            truth = [period.state[v] for v in qa.required_info]
            if (p + q) % (2 + salt) == 0:
                picks[(p, q)] = next(c.state for c in qa.answer_choices if c.state != truth)
            if (p * 2 + q + salt) % 4 == 0:
                first = qa.required_info[0]
                other = next(v for v in user.state_schema[first] if v != period.state[first])
                probes[(p, q)] = {**{v: period.state[v] for v in qa.required_info}, first: other}
    return RunScript(user, picks, probes)


def _numbers(metrics: dict[str, Any]) -> dict[str, Any]:
    o = metrics["overall"]
    keep = ("overall", "upper_bound", "random", "memory_score")
    return {
        "overall": {k: o[k] for k in keep} | {"failure_rates": o["failure_rates"]},
        "per_period": [{k: row[k] for k in ("period", *keep)} for row in metrics["per_period"]],
    }


class _ByUser:
    """Routes each request to the script of the user it belongs to (by opening utterance or question)."""

    def __init__(self, env: Environment) -> None:
        self.scripts = [(_marks(u), _imperfect(u, i)) for i, u in enumerate(env.users)]

    def __call__(self, req: ChatRequest) -> str:
        text = "\n".join(m["content"] for m in req.messages)
        owner = [script for marks, script in self.scripts if any(mark in text for mark in marks)]
        assert len(owner) == 1, "request matches no user or several"
        return owner[0](req)


def _marks(user: UserEnv) -> list[str]:
    return [s.query for period in user.periods for s in period.sessions] + [qa.query for qa in user.qas]


async def test_metrics_of_the_bundled_environment_are_pinned(tmp_path: Path, scripted_llm: Any) -> None:
    env = load_environment(tiny_environment_path())
    llm = scripted_llm(_ByUser(env))
    try:
        outcome = await Runner(env, resolve_agent("native"), tmp_path / "run", load_config("tiny"), llm).run()
    finally:
        await llm.aclose()
    assert outcome.metrics["complete"] and not outcome.failures
    got = _numbers(outcome.metrics)
    text = json.dumps(got, indent=1, sort_keys=True) + "\n"
    if os.environ.get("AMEMGYM_REPIN"):
        PINNED.write_text(text, encoding="utf-8")
    assert text == PINNED.read_text(encoding="utf-8")
