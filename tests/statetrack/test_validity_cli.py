"""``amemgym validate`` and ``amemgym audit-sim`` through the command line, plus the judge path of the audit."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest
import typer
from test_validity_suite import plant_longest, synthetic_env
from typer.testing import CliRunner

from amemgym.agents import resolve_agent
from amemgym.commands.validate import register
from amemgym.config import load_config
from amemgym.families.statetrack.data import load_environment, save_environment
from amemgym.families.statetrack.layout import RunDir
from amemgym.families.statetrack.runner import Runner
from amemgym.families.statetrack.validity.sim_audit import audit_run, lexical_flags
from amemgym.llm import LLMClient
from amemgym.llm.types import ChatRequest
from amemgym.testing.run_script import RunScript
from amemgym.testing.scripted_model import scripted_client


def cli() -> typer.Typer:
    app = typer.Typer()
    register(app)
    return app


def invoke(*args: str):
    return CliRunner().invoke(cli(), list(args))


def test_validate_passes_on_the_fixture_and_writes_json(original_env_path: Path, tmp_path: Path) -> None:
    res = invoke("validate", "--env", str(original_env_path), "--embedder", "hash", "--no-judge",
                 "--json", str(tmp_path / "v.json"))
    assert res.exit_code == 0, res.output
    data = json.loads((tmp_path / "v.json").read_text())
    assert data["passed"] and {s["name"] for s in data["strategies"]} >= {"longest", "perfect_memory", "no_memory"}


def test_validate_catches_the_planted_longest_leak(tmp_path: Path) -> None:
    path = tmp_path / "leaky.json"
    save_environment(plant_longest(synthetic_env()), path)
    res = invoke("validate", "--env", str(path), "--embedder", "hash", "--no-judge")
    assert res.exit_code == 1
    assert "FAIL: shortcut longest" in res.output


def test_validate_reports_bad_input_in_one_line(tmp_path: Path) -> None:
    res = invoke("validate", "--env", str(tmp_path / "missing.json"), "--embedder", "hash")
    assert res.exit_code == 2
    res = invoke("validate", "--env", str(tmp_path / "missing.json"), "--embedder", "bert")
    assert res.exit_code == 2


# ---- simulator audit -------------------------------------------------------------------------------

LEAKY_TURN = "By the way I moved to rotating nights at work. Thanks, that's all I needed, goodbye!"


class LeakySimulator(RunScript):
    """The scripted run, except that the simulator names a schema value and says goodbye."""

    def __call__(self, req: ChatRequest) -> str:
        if req.role == "simulator":
            return LEAKY_TURN
        if req.role == "judge":
            return json.dumps({"stated": [{"topic": "work_shift_pattern", "value": "rotating_nights"}],
                               "contradicts_state": False, "ends_conversation": True})
        return super().__call__(req)


async def make_run(env_path: Path, out: Path, tmp_path: Path) -> LLMClient:
    env = load_environment(env_path)
    llm = scripted_client(LeakySimulator(env.users[0]), cache=tmp_path / "c.sqlite", embedder=False)
    await Runner(env, resolve_agent("native"), out, load_config("tiny"), llm, env_path=env_path).run()
    return llm


def test_audit_sim_flags_revealed_value_and_goodbye(original_env_path: Path, tmp_path: Path) -> None:
    asyncio.run(make_run(original_env_path, tmp_path / "run", tmp_path))
    res = invoke("audit-sim", str(tmp_path / "run"))
    assert res.exit_code == 0, res.output
    audit = json.loads((tmp_path / "run" / "sim_audit.json").read_text())
    assert audit["turns"] == 3  # periods 1 and 2 hold 3 sessions of 2 rounds; round 0 is the opening
    # Period 1 exposes rotating_nights, so only the two period-2 turns reveal something new.
    assert audit["counts"]["reveals_value"] == 2
    assert audit["rates"]["ends_conversation"] == 1.0
    assert {t["period"] for t in audit["offending"]} == {1, 2}


async def test_audit_sim_with_judge(original_env_path: Path, tmp_path: Path) -> None:
    llm = await make_run(original_env_path, tmp_path / "run", tmp_path)
    env = load_environment(original_env_path)
    audit = await audit_run(RunDir(tmp_path / "run"), env, llm=llm)
    assert audit["judged"] == 3 and audit["judge_failures"] == 0
    assert audit["counts"]["judge_ends_conversation"] == 3
    assert audit["counts"]["judge_reveals_value"] == 2
    assert llm.ledger.role("judge").calls >= 3


async def test_audit_sim_records_a_broken_judge_per_turn(original_env_path: Path, tmp_path: Path) -> None:
    await make_run(original_env_path, tmp_path / "run", tmp_path)
    llm = scripted_client(lambda req: '{"stated": [{"topic": "nope", "value": "x"}]}', roles=("judge",),
                          embedder=False)
    audit = await audit_run(RunDir(tmp_path / "run"), load_environment(original_env_path), llm=llm)
    assert audit["judge_failures"] == 3 and audit["judged"] == 0
    assert audit["rates"]["judge_reveals_value"] is None


def test_audit_sim_refuses_a_run_it_would_audit_in_part(original_env_path: Path, tmp_path: Path) -> None:
    # Rates over half a run's turns would read as the run's, as export's training data would.
    asyncio.run(make_run(original_env_path, tmp_path / "run", tmp_path))
    for damage, said in (("metrics.json", "has not finished"), ("users", "missing")):
        broken = tmp_path / f"no-{damage}"
        shutil.copytree(tmp_path / "run", broken)
        target = broken / damage
        if damage == "users":
            target = next(target.iterdir())
        shutil.rmtree(target) if target.is_dir() else target.unlink()
        res = invoke("audit-sim", str(broken))
        assert res.exit_code == 2 and said in res.output, res.output
        assert not (broken / "sim_audit.json").exists()


def test_audit_sim_needs_a_run_directory(tmp_path: Path) -> None:
    res = invoke("audit-sim", str(tmp_path))
    assert res.exit_code == 2
    assert "no manifest.json" in res.output


@pytest.mark.parametrize(("text", "flag"), [
    ("", "empty"),
    ("Talk to you later!", "ends_conversation"),
    ("I'm all set, thanks.", "ends_conversation"),
    ("What should I cook with a hot-plate only?", "reveals_value"),
])
def test_lexical_checks(original_env_path: Path, text: str, flag: str) -> None:
    user = load_environment(original_env_path).users[0]
    session = user.periods[0].sessions[0]
    assert flag in lexical_flags(user, session, text)[0]


def test_turn_copying_the_opening_and_a_clean_turn(original_env_path: Path) -> None:
    user = load_environment(original_env_path).users[0]
    session = user.periods[0].sessions[0]
    assert lexical_flags(user, session, session.query)[0] == ["copies_opening"]
    assert lexical_flags(user, session, "Thanks! Could you give me a sample week?")[0] == []


def test_a_run_on_a_file_whose_exposure_cannot_be_checked_says_so_in_metrics(original_env_path: Path,
                                                                            tmp_path: Path) -> None:
    from amemgym.families.statetrack.generate.procedural import tiny_environment_path
    from amemgym.families.statetrack.validity.exposure import unchecked_reason

    asyncio.run(make_run(original_env_path, tmp_path / "run", tmp_path))
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert "exposure unchecked" in metrics["exposure_unchecked"] and "judge role" in metrics["exposure_unchecked"]
    # A file of the built-in pack is read from its text, metadata or not.
    procedural = load_environment(tiny_environment_path())
    for user in procedural.users:
        user.amemgym = None
    assert unchecked_reason(procedural) is None


def test_progress_on_a_terminal_is_one_live_line_that_goes_away() -> None:
    import io

    from rich.console import Console

    from amemgym.commands.validate import ValidateProgress

    buffer = io.StringIO()
    progress = ValidateProgress(3, Console(file=buffer, force_terminal=True, width=100), live=True)
    for step in ("embeddings", "fixed", "gates"):
        progress(step, None)
        progress(step, 0.1)
    progress.close()
    assert progress.done == 3
    text = buffer.getvalue()
    assert "validate:" in text and "done in" not in text  # the live line, never the plain lines


def test_progress_without_a_terminal_prints_each_step_once() -> None:
    import io

    from rich.console import Console

    from amemgym.commands.validate import ValidateProgress

    buffer = io.StringIO()
    progress = ValidateProgress(2, Console(file=buffer, width=100), live=False)
    for step in ("embeddings", "gates"):
        progress(step, None)
        progress(step, 0.25)
    progress.close()
    assert buffer.getvalue().splitlines() == ["validate: embeddings done in 0.2 s (1/2)",
                                              "validate: gates done in 0.2 s (2/2)"]


def test_validate_with_the_judge_fails_a_file_whose_openings_the_judge_finds_silent(
        original_env_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from amemgym.testing.fake_endpoint import FakeEndpoint

    # A judge that reads no fact in any opening: every change is unstated, whatever the metadata claims.
    with FakeEndpoint(responder=lambda body: '{"stated": []}') as ep:
        monkeypatch.setenv("OPENAI_BASE_URL", ep.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        monkeypatch.setenv("AMEMGYM_CACHE_DIR", str(tmp_path / "cache"))
        res = invoke("validate", "--env", str(original_env_path), "--embedder", "hash", "--judge",
                     "--set", "llm.default.model=fake-model", "--set", "llm.default.max_retries=1")
    assert res.exit_code == 1, res.output
    assert "not stated by any opening text" in res.output and "LLM judge" in res.output
    assert "validate: judge (" in res.output and "UNCHECKED" not in res.output


def test_the_default_progress_runs_live_when_stderr_is_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from amemgym.commands.validate import ValidateProgress

    # The default console must be one rich's live display can enter (the CLI's lazy console was not).
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    progress = ValidateProgress(2)
    progress("fixed", None)
    progress("fixed", 0.1)
    progress.close()
    assert progress._bar is not None and progress.done == 1
