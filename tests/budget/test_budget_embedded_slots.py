"""A budget run on the embedded model gets slots long enough for an event's conversation, unless the config
says otherwise: with the embedded default of 8,192 tokens, the 0.5B model's cut-off replies to a long batch
of documents overflowed the slot and the episode could never finish."""

from __future__ import annotations

from pathlib import Path

import pytest

from amemgym.config import load_config
from amemgym.families import NoOptions, RunRequest
from amemgym.families.budget.family import Budget
from amemgym.families.budget.tiers import EMBEDDED_CTX_PER_SLOT


def _configured(tmp_path: Path, sets: list[str]) -> int:
    cfg = load_config(None, sets)
    Budget().configure(cfg, RunRequest(out_dir=tmp_path, options=NoOptions(), sets=sets))
    return cfg.llm.embedded.ctx_per_slot


def test_the_budget_family_widens_the_embedded_slots_by_default(tmp_path: Path) -> None:
    assert EMBEDDED_CTX_PER_SLOT > load_config().llm.embedded.ctx_per_slot
    assert _configured(tmp_path, []) == EMBEDDED_CTX_PER_SLOT


@pytest.mark.parametrize("chosen", [4096, 8192, 32768])
def test_a_slot_size_the_user_set_is_kept(tmp_path: Path, chosen: int) -> None:
    assert _configured(tmp_path, [f"llm.embedded.ctx_per_slot={chosen}"]) == chosen


def test_a_config_file_that_sets_the_slots_is_kept(tmp_path: Path) -> None:
    file = tmp_path / "run.yaml"
    file.write_text("llm:\n  embedded:\n    ctx_per_slot: 6144\n", encoding="utf-8")
    cfg = load_config(str(file))
    Budget().configure(cfg, RunRequest(out_dir=tmp_path, options=NoOptions(), config=str(file)))
    assert cfg.llm.embedded.ctx_per_slot == 6144
