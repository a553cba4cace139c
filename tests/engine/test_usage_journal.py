"""The call journal: every finished call counted across a kill, never twice, whatever the flush had."""

from __future__ import annotations

import json
from pathlib import Path

from amemgym.engine.usage import UsageBook
from amemgym.llm.usage import CallJournal, UsageLedger, read_journal
from amemgym.records import versioned


def _ledger(calls: int, prompt: int = 0, retries: int = 0) -> UsageLedger:
    ledger = UsageLedger()
    usage = ledger.role("agent")
    usage.calls, usage.prompt_tokens, usage.retries = calls, prompt, retries
    return ledger


def _journal(book: UsageBook, invocation: str, calls: int, role: str = "agent") -> None:
    journal = book.journal(invocation)
    for _ in range(calls):
        journal.record(role, (1, 10, 2, 10, 0.5, 0.0))
    journal.close()


def _pending(book: UsageBook, invocation: str, ledger: UsageLedger) -> None:
    book.pending.write_text(json.dumps(versioned({"invocation": invocation, "usage": ledger.to_dict()})))


def _total(book: UsageBook) -> dict[str, int]:
    return book.cumulative()["cumulative"]["total"]


def test_a_kill_before_any_flush_still_counts_every_finished_call(tmp_path: Path) -> None:
    book = UsageBook(tmp_path)
    _journal(book, "killed", 7)
    book.fold_pending()
    assert _total(book)["calls"] == 7 and _total(book)["prompt_tokens"] == 70
    assert not book.journal_path.exists()


def test_the_journal_completes_a_flush_that_was_behind_and_keeps_what_only_the_flush_has(tmp_path: Path) -> None:
    book = UsageBook(tmp_path)
    _pending(book, "killed", _ledger(4, prompt=40, retries=3))
    _journal(book, "killed", 9)
    book.fold_pending()
    total = _total(book)
    assert total["calls"] == 9 and total["prompt_tokens"] == 90  # from the journal
    assert total["retries"] == 3  # only the flush counts retries
    assert not book.pending.exists() and not book.journal_path.exists()


def test_a_kill_between_the_fold_and_the_cleanup_does_not_count_twice(tmp_path: Path) -> None:
    book = UsageBook(tmp_path)
    _journal(book, "killed", 5)
    book.fold_pending()
    _journal(book, "killed", 5)  # as if the journal had survived the fold (killed before its removal)
    book.fold_pending()
    assert _total(book)["calls"] == 5


def test_invocations_add_up_and_a_normal_end_removes_the_journal(tmp_path: Path) -> None:
    book = UsageBook(tmp_path)
    _journal(book, "first", 3)
    book.fold_pending()
    journal = book.journal("second")
    journal.record("agent", (1, 10, 2, 10, 0.5, 0.0))
    journal.close()
    book.save("second", _ledger(1, prompt=10))
    assert _total(book)["calls"] == 4
    assert not book.journal_path.exists()


def test_a_torn_or_foreign_line_is_skipped(tmp_path: Path) -> None:
    book = UsageBook(tmp_path)
    _journal(book, "killed", 2)
    with open(book.journal_path, "ab") as f:
        f.write(b'["killed", "agent", 1, 10')  # the last write of a dying process, cut short
    with open(book.journal_path, "ab") as f:
        f.write(b"\nnot json\n")
    assert read_journal(book.journal_path)["killed"].role("agent").calls == 2


def test_an_unwritable_journal_stops_without_failing_the_call(tmp_path: Path) -> None:
    journal = CallJournal(tmp_path / "usage.journal", "x")
    journal.close()  # as after a failed write
    journal.record("agent", (1, 1, 1, 1, 0.1, 0.0))  # no error: the flush still counts the call
    assert read_journal(tmp_path / "usage.journal") == {}
