"""A run whose usage files were deleted must not report a usage count that only looks whole.

The calls an earlier invocation made are counted nowhere but in ``usage.json`` (and, after a kill, in
``usage.journal``). When they are gone, the next invocation cannot know them: it must say that the count it
reports is a lower bound, in ``usage.json``, in ``metrics.json`` and in one line, rather than start again from
zero as if the run had cost nothing before.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
import test_resume_tamper as tamper
from test_resume_tamper import cut_back, resume

from amemgym.engine.usage import UsageBook
from amemgym.llm.usage import UsageLedger

# The resume tests' endpoint settings and clean run, shared as this module's fixtures.
_env, clean = tamper._env, tamper.clean


def usage(run: Path) -> dict[str, Any]:
    return json.loads((run / "usage.json").read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def calls(run: Path) -> int:
    return int(usage(run)["cumulative"]["total"]["calls"])


def metrics_usage(run: Path) -> dict[str, Any]:
    return json.loads((run / "metrics.json").read_text(encoding="utf-8"))["usage"]  # type: ignore[no-any-return]


def notes(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "usage" in r.getMessage() and "incomplete" in r.getMessage()]


def test_a_resume_with_its_usage_file_kept_adds_to_it(clean: Path, tmp_path: Path,
                                                       caplog: pytest.LogCaptureFixture) -> None:
    run = cut_back(clean, tmp_path, (2, 1))
    before = calls(run)
    result = resume(run)
    assert result.exit_code == 0, result.output
    this = json.loads((run / "metrics.json").read_text())["usage"]["last_invocation"]["total"]["calls"]
    assert this > 0 and calls(run) == before + this
    assert usage(run).get("incomplete") is None and metrics_usage(run).get("incomplete") is None
    assert "running" not in usage(run)
    assert not notes(caplog)


def test_a_deleted_usage_file_of_a_finished_run_is_marked_incomplete(clean: Path, tmp_path: Path,
                                                                     caplog: pytest.LogCaptureFixture) -> None:
    run = cut_back(clean, tmp_path, (3, 0))
    assert calls(clean) > 0
    (run / "usage.json").unlink()
    result = resume(run)
    assert result.exit_code == 0, result.output
    assert calls(run) < calls(clean)  # the earlier calls are truly gone...
    assert usage(run)["incomplete"] and metrics_usage(run)["incomplete"]  # ...and the files say so
    assert len(notes(caplog)) == 1 and "usage.json" in notes(caplog)[0]
    assert "incomplete" in result.output  # the console's summary says it too


def test_a_deleted_usage_file_of_a_half_finished_run_stays_marked(clean: Path, tmp_path: Path,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    run = cut_back(clean, tmp_path, (2, 1))
    (run / "usage.json").unlink()
    assert resume(run).exit_code == 0
    first = usage(run)["incomplete"]
    assert first and calls(run) < calls(clean)
    caplog.clear()
    assert resume(run).exit_code == 0  # a later invocation keeps the mark, and says nothing new
    assert usage(run)["incomplete"] == first and metrics_usage(run)["incomplete"] == first
    assert not notes(caplog)


def test_a_killed_invocation_whose_call_journal_is_gone_is_marked_incomplete(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    book = UsageBook(tmp_path)
    spent = UsageLedger()
    spent.role("agent").calls = 7
    book.save("first", spent)
    book.start("second")  # the second invocation begins, journals its calls, and is killed
    journal = book.journal("second")
    journal.record("agent", (3, 10, 2, 10, 0.1, 0.0))
    journal.close()
    (tmp_path / "usage.journal").unlink()  # deleted by hand before the next invocation
    book.fold_pending(resumed=True, played=True)
    data = json.loads((tmp_path / "usage.json").read_text())
    assert data["cumulative"]["agent"]["calls"] == 7
    assert "usage.journal" in data["incomplete"]
    assert len(notes(caplog)) == 1


def test_a_killed_invocation_with_its_call_journal_is_complete(tmp_path: Path,
                                                              caplog: pytest.LogCaptureFixture) -> None:
    book = UsageBook(tmp_path)
    spent = UsageLedger()
    spent.role("agent").calls = 7
    book.save("first", spent)
    book.start("second")
    journal = book.journal("second")
    journal.record("agent", (3, 10, 2, 10, 0.1, 0.0))
    journal.close()
    with caplog.at_level(logging.WARNING):
        book.fold_pending(resumed=True, played=True)
    data = json.loads((tmp_path / "usage.json").read_text())
    assert data["cumulative"]["agent"]["calls"] == 10
    assert data.get("incomplete") is None and "running" not in data
    assert not notes(caplog)
