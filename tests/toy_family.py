"""A toy third family that lives only in the tests: it proves a family needs nothing but the engine's contract.

A *quiz* file holds a few arithmetic questions; the agent answers each in one chat call; a unit is one file;
its group is the quiz's ``level``. ``play`` saves after every question through the engine's checkpoint, so a
killed run resumes where it stopped. Its one metric, ``right``, is the share answered right.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from amemgym.engine.commands import EngineFamily
from amemgym.engine.contract import AgentPlan, Unit, UnitRow
from amemgym.errors import ConfigError, DataError
from amemgym.scoring.registry import unit_metric, unit_metrics

NAME = "toyquiz"


def write_quiz(path: Path, level: str, pairs: list[tuple[int, int]]) -> Path:
    """A quiz file asking ``a + b`` for each pair."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"family": NAME, "level": level, "questions": [list(p) for p in pairs]}))
    return path


class ToyUnits:
    """Quizzes as engine units."""

    name = NAME
    noun = "quizzes"

    def units(self, env: Path, limit: int | None) -> list[Unit]:
        from amemgym.families.folders import episode_files

        files = episode_files(env) if env.is_dir() else [env]
        out = []
        for f in files[:limit]:
            raw = f.read_bytes()
            try:
                data = json.loads(raw)
            except ValueError:
                raise DataError(f"{f}: not a quiz") from None
            rel = "." if f == env else f.parent.relative_to(env).as_posix()
            out.append(Unit(rel, f, hashlib.sha256(raw).hexdigest(), str(data["level"]),
                            f"{data['level']}/{f.parent.name}", {}, data))
        return out

    def plan(self, agent: str, cfg: Any, llm: Any, first: Unit) -> AgentPlan:
        if agent != "native":
            raise ConfigError(f"the toy quiz runs the native agent only, not {agent!r}")
        return AgentPlan(agent, ("agent",), {"style": "plain"})

    async def pins(self, plan: AgentPlan, cfg: Any, llm: Any, pinned: Mapping[str, Any]) -> dict[str, Any]:
        return {}

    async def play(self, unit: Unit, plan: AgentPlan, pins: Mapping[str, Any], llm: Any, cfg: Any,
                   checkpoint: Any) -> dict[str, Any]:
        state = checkpoint.restore() or {"next_event": 0, "answers": {}}
        for i, (a, b) in enumerate(unit.data["questions"][state["next_event"]:], start=state["next_event"]):
            reply = await llm.chat("agent", [{"role": "user", "content": f"Quiz question {i}: what is {a} + {b}?"}])
            state["answers"][str(i)] = {"reply": reply.text, "correct": reply.text.strip() == str(a + b)}
            checkpoint.trace({"event": i, "reply": reply.text})
            state["next_event"] = i + 1
            checkpoint.save(state)
        answers = state["answers"]
        return {"family": NAME, "environment_sha256": unit.digest, "agent": plan.agent, "protocol": "quiz/v1",
                "answers": answers, "right": sum(a["correct"] for a in answers.values()) / max(1, len(answers))}

    def summary(self, console: Any, rows: list[UnitRow]) -> None:
        console.print(f"toy quiz: {sum(r.record is not None for r in rows)} quizzes scored", highlight=False)


def register() -> EngineFamily:
    """Register the toy family and its metric (idempotent); the family object."""
    from amemgym.families import _EXTRA, register_family

    if not unit_metrics(NAME):
        unit_metric(NAME, "right", "share of quiz questions answered right", headline=True)(lambda r: r.get("right"))
    if NAME not in _EXTRA:
        register_family(EngineFamily(ToyUnits()))  # type: ignore[arg-type]
    return _EXTRA[NAME]  # type: ignore[return-value]


def answer(text: str) -> str:
    """The right answer to a quiz prompt, or a wrong one when the sum is odd (so scores differ from 1)."""
    import re

    m = re.search(r"what is (\d+) \+ (\d+)\?", text)
    if m is None:
        return "?"
    total = int(m.group(1)) + int(m.group(2))
    return str(total if total % 2 == 0 else total + 1)
