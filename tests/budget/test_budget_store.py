"""The harness-owned store: what each operation costs, refunds on a miss, the cap, and search."""

from __future__ import annotations

import numpy as np

from amemgym.families.budget.store import BudgetStore


def store(budget: int | None = 3) -> BudgetStore:
    return BudgetStore(budget=budget, note_chars=40)


def test_a_write_costs_one() -> None:
    s = store()
    assert s.write("Apex|employees=100").ok
    assert s.writes_used == 1 and s.writes_left == 2


def test_an_edit_costs_one_outside_a_correction_and_nothing_during_one() -> None:
    s = store()
    s.write("Apex|employees=100")
    s.begin_event(1, correction=False)
    assert s.edit(1, "100", "120").ok
    assert s.writes_used == 2
    s.begin_event(2, correction=True)
    assert s.edit(1, "120", "150").ok
    assert s.writes_used == 2
    assert s.notes[1] == "Apex|employees=150"


def test_a_missed_edit_is_refunded_and_recorded() -> None:
    s = store()
    s.write("Apex|employees=100")
    assert not s.edit(1, "999", "5").ok  # old text absent
    assert not s.edit(7, "100", "5").ok  # unknown note
    assert s.writes_used == 1
    refunds = [e for e in s.ledger if e.refunded]
    assert len(refunds) == 2 and all(e.charged == 1 for e in refunds)


def test_an_oversize_write_is_refused_and_refunded() -> None:
    s = store()
    assert not s.write("x" * 41).ok
    assert s.writes_used == 0 and not s.notes


def test_an_edit_cannot_grow_a_note_past_the_cap() -> None:
    s = store()
    s.write("short")
    assert not s.edit(1, "short", "y" * 41).ok
    assert s.notes[1] == "short" and s.writes_used == 1


def test_the_budget_is_enforced_by_the_store() -> None:
    s = store(budget=2)
    assert s.write("a").ok and s.write("b").ok
    assert not s.write("c").ok
    assert not s.edit(1, "a", "z").ok  # a charged edit with no budget left
    assert s.writes_used == 2 and len(s.notes) == 2
    s.begin_event(3, correction=True)
    assert s.edit(1, "a", "z").ok  # free during a correction, even with no budget left


def test_forget_and_reads_are_free() -> None:
    s = store()
    s.write("a")
    s.read(1)
    s.search("a")
    assert s.forget(1).ok
    assert s.writes_used == 1 and not s.notes


def test_bm25_search_ranks_the_matching_note_first() -> None:
    s = BudgetStore(budget=None, note_chars=200)
    s.write("Blue Labs revenue 40")
    s.write("Apex Works headcount 150 staff")
    s.write("Cinder Group revenue 25")
    assert s.search("Apex headcount", k=1)[0][0] == 2


def test_the_embedder_hook_is_used_in_vector_mode() -> None:
    def embed(texts: list[str]) -> np.ndarray:
        # Query and note 3 share the marker word, so only the embedder can find it.
        return np.array([[1.0, 0.0] if "zebra" in t or "giraffe" in t else [0.0, 1.0] for t in texts])

    s = BudgetStore(budget=None, note_chars=200, embed=embed, mode="vector")
    s.write("alpha")
    s.write("beta")
    s.write("giraffe facts")
    assert s.search("zebra", k=1)[0][0] == 3
