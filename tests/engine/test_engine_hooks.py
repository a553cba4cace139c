"""The contract's optional hooks: a family that leaves them out keeps the engine's defaults, one that defines
them gets its own resume check, manifest keys, "finished" test, failure entries and run metrics.

The hooked family is the toy quiz (tests/toy_family.py) writing its answers as its own file through the
engine's UnitWriter (no ``results.json``), the way statetrack's users leave sessions and evaluations.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from amemgym.config import load_config
from amemgym.engine.contract import HOOKS, Unit, UnitFailed, check_unit_family, hook
from amemgym.engine.executor import LocalExecutor, PlayContext
from amemgym.engine.runner import RunOptions, run_units
from amemgym.engine.unit_writer import UnitWriter
from amemgym.errors import RunError
from amemgym.llm.client import LLMClient
from amemgym.testing.scripted_model import ScriptedBackend
from toy_family import NAME, ToyUnits, answer, register, write_quiz


@pytest.fixture(scope="module", autouse=True)
def toy() -> Iterator[Any]:
    from amemgym.families import unregister_family
    from amemgym.scoring.registry import unregister_unit_metrics

    yield register()
    unregister_family(NAME)
    unregister_unit_metrics(NAME)


class HookedToy(ToyUnits):
    """The toy quiz with every optional hook; quizzes of level ``broken`` fail with the family's own entry."""

    def check_resume(self, old: Mapping[str, Any], protocol: Mapping[str, Any], root: Path) -> dict[str, Any]:
        if old.get("quiz_format") != "answers/v1":
            raise RunError(f"{root}: holds quizzes of another format")
        return dict(old)

    def manifest(self, base: Mapping[str, Any], old: Mapping[str, Any] | None, units: Sequence[Unit], plan: Any,
                 cfg: Any) -> dict[str, Any]:
        return {**base, "quiz_format": "answers/v1", "quizzes": [u.id for u in units]}

    def finished(self, unit: Unit, root: Path) -> dict[str, Any] | None:
        path = root / unit.id / "answers.json"
        if not path.exists():
            return None
        answers = json.loads(path.read_text())
        return {"family": NAME, "unit": unit.id, "group": unit.group, "label": unit.label, "agent": "native",
                "protocol": "quiz/v1", "right": sum(answers.values()) / len(answers)}

    def run_metrics(self, units: Sequence[Unit], root: Path, found: Sequence[Any], cfg: Any) -> dict[str, Any]:
        done = [u.id for u in units if self.finished(u, root) is not None]
        return {"family": NAME, "complete": len(done) == len(units), "quizzes_done": done}

    async def play(self, unit: Unit, plan: Any, pins: Any, llm: Any, cfg: Any, checkpoint: Any) -> None:
        if unit.group == "broken":
            raise UnitFailed([{"user": unit.id, "period": 0, "stage": "question", "error": "no answer"}])
        record = await super().play(unit, plan, pins, llm, cfg, checkpoint)
        assert record is not None
        UnitWriter(checkpoint.dir).put_now("answers.json", {k: v["correct"] for k, v in record["answers"].items()})


def client(seen: list[str]) -> Any:
    def respond(req: Any) -> str:
        seen.append(str(req.messages[-1]["content"]))
        return answer(seen[-1])

    return lambda cfg: LLMClient(backends={"agent": ScriptedBackend(respond)})


def test_every_family_passes_the_check_and_missing_hooks_get_the_defaults() -> None:
    from amemgym.families.budget.units import UNITS
    from amemgym.families.statetrack.units import STATETRACK_UNITS

    for family in (ToyUnits(), UNITS, HookedToy(), STATETRACK_UNITS):
        assert check_unit_family(family) == []
    made_per_family = {"run_metrics", "run_summary"}  # defaults that close over the family
    assert {name: hook(ToyUnits(), name) is HOOKS[name](ToyUnits()) for name in HOOKS if name not in made_per_family} \
        == dict.fromkeys(HOOKS.keys() - made_per_family, True)
    assert all(callable(getattr(STATETRACK_UNITS, name)) for name in HOOKS)  # statetrack defines every hook
    assert hook(HookedToy(), "finished").__func__ is HookedToy.finished  # type: ignore[attr-defined]

    class AsyncHook(ToyUnits):
        async def finished(self, unit: Unit, root: Path) -> None:
            return None

    assert check_unit_family(AsyncHook()) == ["optional hook finished() must not be async"]


def test_a_hooked_family_runs_resumes_and_reports_through_its_hooks(tmp_path: Path) -> None:
    env = tmp_path / "env"
    write_quiz(env / "easy" / "a" / "data.json", "easy", [(1, 1), (2, 3)])
    write_quiz(env / "broken" / "b" / "data.json", "broken", [(5, 5)])
    out, seen = tmp_path / "o", []
    opts = RunOptions(agent="native", serial=True)
    code = run_units(HookedToy(), load_config("tiny"), env, out, opts, console=Console(file=io.StringIO()),
                     make_client=client(seen))
    assert code == 1 and len(seen) == 2
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["quiz_format"] == "answers/v1" and manifest["quizzes"] == ["broken/b", "easy/a"]
    assert not (out / "easy" / "a" / "results.json").exists()
    assert json.loads((out / "easy" / "a" / "answers.json").read_text()) == {"0": True, "1": False}
    failures = json.loads((out / "failures.json").read_text())["failures"]
    assert failures == [{"user": "broken/b", "period": 0, "stage": "question", "error": "no answer"}]
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["quizzes_done"] == ["easy/a"] and metrics["complete"] is False
    assert metrics["agent"] == "native" and metrics["failures"] == failures
    # A resume plays only what its "finished" hook does not find done.
    assert run_units(HookedToy(), load_config("tiny"), env, out, opts, console=Console(file=io.StringIO()),
                     make_client=client(seen)) == 1
    assert len(seen) == 2
    # Its resume check decides: a manifest of another format is refused.
    manifest["quiz_format"] = "other"
    (out / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(RunError, match="another format"):
        run_units(HookedToy(), load_config("tiny"), env, out, opts, console=Console(file=io.StringIO()),
                  make_client=client(seen))


class CountingExecutor:
    """A family's own executor: plays through the engine's local one and notes what it was handed."""

    handed: list[list[str]] = []

    async def play(self, ctx: PlayContext, units: list[Unit]) -> list[dict[str, Any]]:
        self.handed.append([u.id for u in units])
        return await LocalExecutor(2).play(ctx, units)


class OwnExecutorToy(ToyUnits):
    def executor(self, opts: Any, cfg: Any, units: Sequence[Unit]) -> CountingExecutor:
        return CountingExecutor()


def test_a_family_executor_plays_what_the_engine_hands_it(tmp_path: Path) -> None:
    env = tmp_path / "env"
    for name in ("a", "b"):
        write_quiz(env / "easy" / name / "data.json", "easy", [(1, 1)])
    seen: list[str] = []
    assert check_unit_family(OwnExecutorToy()) == []
    for _ in range(2):
        assert run_units(OwnExecutorToy(), load_config("tiny"), env, tmp_path / "o", RunOptions(agent="native"),
                         console=Console(file=io.StringIO()), make_client=client(seen)) == 0
    assert CountingExecutor.handed == [["easy/a", "easy/b"], []]  # a resume hands it nothing left to play
    assert len(seen) == 2
    assert json.loads((tmp_path / "o" / "metrics.json").read_text())["complete"]


class Display:
    """A family's own live display, noting what the engine tells it."""

    def __init__(self) -> None:
        self.seen: list[Any] = []

    def start(self, total: int, ledger: Any) -> None:
        self.seen.append(("start", total))

    def unit_done(self) -> None:
        self.seen.append("done")

    def close(self) -> None:
        self.seen.append("close")


class OwnDisplayToy(ToyUnits):
    display = Display()

    def progress(self, units: Sequence[Unit], root: Path) -> Display:
        return self.display


def test_a_family_display_is_started_told_each_unit_and_closed(tmp_path: Path) -> None:
    env = tmp_path / "env"
    for name in ("a", "b"):
        write_quiz(env / "easy" / name / "data.json", "easy", [(2, 2)])
    family = OwnDisplayToy()
    assert check_unit_family(family) == []
    assert run_units(family, load_config("tiny"), env, tmp_path / "o", RunOptions(agent="native"),
                     console=Console(file=io.StringIO()), make_client=client([])) == 0
    assert family.display.seen == [("start", 2), "done", "done", "close"]
