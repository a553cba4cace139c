"""An endpoint that fails after its retries fails the budget episode (exit 1, resumable); it is never scored.

A failed call says nothing about the agent's memory. Scoring the episode anyway would turn an outage into a
lower composite with exit 0 and an empty failures.json; instead the episode is reported failed, keeps no
record, and the next run resumes it from the event the failure interrupted. Output the model wrote but that
is unusable (MalformedOutput) stays the agent's own failure and ends the event's turn as before.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from amemgym.config import AppConfig, load_config
from amemgym.engine.runner import RunOptions, run_units
from amemgym.errors import MalformedOutput
from amemgym.families.budget.model import Episode
from amemgym.families.budget.units import UNITS
from amemgym.llm.backends import PermanentError, TransientError
from amemgym.llm.client import LLMClient
from amemgym.llm.types import ChatRequest
from amemgym.testing.budget import BudgetScript, client_factory, write_episodes
from amemgym.testing.scripted_model import HashEmbedder, ScriptedBackend

SPECS = (("lite", "companies", 0),)


@pytest.fixture(scope="module")
def envs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Episode]]:
    root = tmp_path_factory.mktemp("env")
    return root, write_episodes(root, SPECS)


class FailingAt:
    """The script, except that attempts ``first`` .. ``first + count - 1`` get ``error`` instead of a reply (the
    default count outlasts any retry policy: the endpoint stays down until the run gives up)."""

    def __init__(self, script: Any, first: int, error: BaseException, count: int = 100) -> None:
        self.script, self.first, self.error, self.count = script, first, error, count
        self.seen = 0

    def __call__(self, req: ChatRequest) -> Any:
        self.seen += 1
        if self.first <= self.seen < self.first + self.count:
            return self.error
        return self.script(req)


def _run(env: Path, out: Path, agent: str, responder: Any) -> tuple[int, str]:
    cfg = load_config("tiny")
    cfg.llm.default.max_retries = 0
    log = io.StringIO()

    def make(c: AppConfig) -> LLMClient:
        if agent == "native":
            return client_factory(responder)(c)
        return LLMClient(backends={"agent": ScriptedBackend(responder), "memory": ScriptedBackend(responder)},
                         embedder=HashEmbedder())

    code = run_units(UNITS, cfg, env, out, RunOptions(agent=agent, serial=True), console=Console(file=log, width=250),
                     make_client=make)
    return code, log.getvalue()


def _record(out: Path) -> dict[str, Any] | None:
    paths = list(out.rglob("results.json"))
    return json.loads(paths[0].read_text()) if paths else None


def _score(record: dict[str, Any]) -> dict[str, Any]:
    return record["score"]


@pytest.mark.parametrize("error", [PermanentError("http_401", "HTTP 401: bad key"), TransientError("http_500")],
                         ids=["rejected", "retries-exhausted"])
def test_a_failed_tool_agent_call_fails_the_episode_and_a_resume_scores_it_as_a_clean_run(
        envs: tuple[Path, list[Episode]], tmp_path: Path, error: BaseException) -> None:
    env, episodes = envs
    assert _run(env, tmp_path / "clean", "native", BudgetScript(episodes))[0] == 0
    clean = _record(tmp_path / "clean")
    assert clean is not None

    code, log = _run(env, tmp_path / "out", "native", FailingAt(BudgetScript(episodes), 12, error))
    assert code == 1, log
    assert _record(tmp_path / "out") is None  # nothing scored from a run the endpoint broke
    failures = json.loads((tmp_path / "out" / "failures.json").read_text())["failures"]
    assert len(failures) == 1 and "agent call" in failures[0]["error"]
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert metrics["complete"] is False

    again = BudgetScript(episodes)
    code, log = _run(env, tmp_path / "out", "native", again)
    assert code == 0, log
    resumed = _record(tmp_path / "out")
    assert resumed is not None and _score(resumed) == _score(clean)


def test_the_resume_starts_at_the_interrupted_event_not_the_episode_start(envs: tuple[Path, list[Episode]],
                                                                         tmp_path: Path) -> None:
    env, episodes = envs
    full = BudgetScript(episodes)
    assert _run(env, tmp_path / "clean", "native", full)[0] == 0
    total = sum(full.calls.values())
    assert _run(env, tmp_path / "out", "native", FailingAt(BudgetScript(episodes), total // 2,
                                                             TransientError("http_503")))[0] == 1
    again = BudgetScript(episodes)
    assert _run(env, tmp_path / "out", "native", again)[0] == 0
    assert sum(again.calls.values()) < total  # the events before the failure were not played again


def test_unusable_model_output_stays_the_agents_failure(envs: tuple[Path, list[Episode]], tmp_path: Path) -> None:
    # MalformedOutput is the model answering badly, which is what the benchmark measures: the event's turn
    # ends, the episode finishes and is scored (lower), exit 0.
    env, episodes = envs
    code, log = _run(env, tmp_path / "out", "native",
                     FailingAt(BudgetScript(episodes), 12, MalformedOutput("no usable reply")))
    assert code == 0, log
    record = _record(tmp_path / "out")
    assert record is not None
    trace = [json.loads(line) for line in next((tmp_path / "out").rglob("trace.jsonl")).read_text().splitlines()]
    assert any("no usable reply" in str(t.get("error")) for t in trace)


class Reader:
    """A memory agent's model: short replies to events, "I don't know" to questions."""

    def __init__(self) -> None:
        self.seen = 0

    def __call__(self, req: ChatRequest) -> str:
        self.seen += 1
        return "I don't know" if "question" in str(req.messages[-1].get("content", "")).lower() else "Noted."


@pytest.mark.parametrize("where", [0.1, 0.9], ids=["early", "late"])
def test_a_failed_memory_agent_call_fails_the_episode(envs: tuple[Path, list[Episode]], tmp_path: Path,
                                                      where: float) -> None:
    env, _ = envs
    reader = Reader()
    assert _run(env, tmp_path / "clean", "rag", reader)[0] == 0
    clean = _record(tmp_path / "clean")
    assert clean is not None
    first = max(1, int(reader.seen * where))
    code, log = _run(env, tmp_path / "out", "rag", FailingAt(Reader(), first, PermanentError("http_401")))
    assert code == 1, log
    assert _record(tmp_path / "out") is None
    code, log = _run(env, tmp_path / "out", "rag", Reader())
    assert code == 0, log
    resumed = _record(tmp_path / "out")
    assert resumed is not None and _score(resumed) == _score(clean)
