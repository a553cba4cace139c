"""Long steps give feedback without flooding a log: progress lines, stall warnings, the model assembly."""

from __future__ import annotations

import hashlib
import io
import logging
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from rich.console import Console

from amemgym.families.statetrack import progress as progress_mod
from amemgym.families.statetrack.progress import RunProgress
from amemgym.llm import embedded_model
from amemgym.llm.usage import UsageLedger

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_readmes_validation_time_names_its_embedder() -> None:
    text = " ".join(README.read_text().split())
    claims = [text[m.start():m.end() + 40] for m in re.finditer(r"\d+ s of CPU", text)]
    assert claims and all("--embedder" in claim for claim in claims), claims


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _quiet_progress(monkeypatch: pytest.MonkeyPatch, sessions: int) -> tuple[RunProgress, Clock, io.StringIO,
                                                                               UsageLedger, RunProgress]:
    clock = Clock()
    monkeypatch.setattr(progress_mod.time, "monotonic", clock)
    buf = io.StringIO()
    progress = RunProgress(Console(file=buf, width=300), live=False)
    user = SimpleNamespace(periods=[SimpleNamespace(sessions=[None] * sessions)])
    ledger = UsageLedger()
    progress.watch([user], Path("."))
    progress.start(1, ledger)  # outside an event loop: no ticker, updates come from the counts it is told
    return progress, clock, buf, ledger, progress


def test_a_slow_run_without_a_tty_prints_a_line_per_tenth_not_per_event(monkeypatch: pytest.MonkeyPatch) -> None:
    progress, clock, buf, _, events = _quiet_progress(monkeypatch, sessions=99)
    for s in range(99):
        clock.now += 6  # one session every 6 s: the old display printed each of them
        events.on_session("u", 0, s)
    events.on_eval("u", 0)
    lines = buf.getvalue().splitlines()
    assert 5 <= len(lines) <= 12, lines
    assert lines[-1].startswith("sessions 99/99, evaluations 1/1")


def test_a_run_that_stops_moving_still_speaks_every_few_minutes(monkeypatch: pytest.MonkeyPatch) -> None:
    progress, clock, buf, _, events = _quiet_progress(monkeypatch, sessions=1000)
    events.on_session("u", 0, 0)
    for s in range(1, 4):
        clock.now += progress_mod.LOG_EVERY_SECONDS + 1  # slower than a tenth: still a line now and then
        events.on_session("u", 0, s)
    assert len(buf.getvalue().splitlines()) == 4


def test_a_stall_is_reported_once_a_minute_not_every_tick(monkeypatch: pytest.MonkeyPatch) -> None:
    progress, clock, buf, ledger, _ = _quiet_progress(monkeypatch, sessions=3)
    ledger.limiters["embedded:qwen"] = SimpleNamespace(limit=2)  # type: ignore[assignment]
    with ledger.waiting():
        for token in list(ledger._started):
            ledger._started[token] = clock.now
        for _ in range(24):  # two minutes of 5 s ticks
            clock.now += progress_mod.TICK_SECONDS
            progress._update(heartbeat=True)
    lines = [line for line in buf.getvalue().splitlines() if "waiting" in line]
    assert 1 <= len(lines) <= 3, lines
    assert "can take minutes" in lines[0]  # the embedded model is on the CPU: say what to expect


def test_a_budget_run_without_a_tty_reports_a_stall_at_once_then_once_a_minute(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from amemgym.engine.progress import UnitProgress

    clock = Clock()
    monkeypatch.setattr(progress_mod.time, "monotonic", clock)
    buf = io.StringIO()
    progress = UnitProgress(Console(file=buf, width=300), noun="episodes", live=False)
    ledger = UsageLedger()
    progress.start(4, ledger)  # outside an event loop: no ticker, the test ticks by hand
    with ledger.waiting():
        for token in list(ledger._started):
            ledger._started[token] = clock.now
        for _ in range(24):  # two minutes of 5 s ticks with one call hung
            clock.now += progress_mod.TICK_SECONDS
            progress._update(heartbeat=True)
    lines = buf.getvalue().splitlines()
    assert 2 <= len(lines) <= 3, lines  # the old display printed a line at every tick (24)
    assert all("call waiting" in line for line in lines)
    progress.close()


def test_the_embedded_roles_are_named_before_a_run(monkeypatch: pytest.MonkeyPatch) -> None:
    from amemgym.config import load_config
    from amemgym.engine.runner import embedded_note

    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    cfg = load_config("tiny")
    note = embedded_note(cfg, ["agent", "simulator"])
    assert note and "agent and simulator roles" in note and "minutes" in note
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    assert embedded_note(cfg, ["agent", "simulator"]) is None


def test_assembling_the_model_says_what_it_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                caplog: pytest.LogCaptureFixture) -> None:
    content = b"GGUF\x03\x00\x00\x00" + b"x" * 100
    pkg = tmp_path / "pkgs" / "amemgym_fakechunk_assembly_0"
    (pkg / "data").mkdir(parents=True)
    (pkg / "data" / "part.bin").write_bytes(content)
    (pkg / "__init__.py").write_text("from pathlib import Path\n\n\ndef get_part_path():\n"
                                     "    return str(Path(__file__).parent / 'data' / 'part.bin')\n")
    monkeypatch.syspath_prepend(str(tmp_path / "pkgs"))
    spec = embedded_model.EmbeddedModelSpec(
        name="fake", description="test model", parts=(("amemgym_fakechunk_assembly_0", "get_part_path"),),
        sha256=hashlib.sha256(content).hexdigest(), size=len(content), filename="fake.gguf", instruct=False,
        default_ctx=512, requirements=("fake-model-parts==1.0",))
    with caplog.at_level(logging.INFO, logger="amemgym.llm"):
        path = embedded_model.ensure_model_file(spec=spec, cache_dir=tmp_path / "cache")
    said = " ".join(r.getMessage() for r in caplog.records)
    assert "assembling" in said and "fake" in said and str(path) in said and "sha256" in said
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="amemgym.llm"):
        embedded_model.ensure_model_file(spec=spec, cache_dir=tmp_path / "cache")
    assert not caplog.records  # an assembled, verified file is used silently
