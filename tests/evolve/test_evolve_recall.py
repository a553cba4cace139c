"""The recall judge: one batched call per period, a boolean per fact id, recall = supported / revealed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from amemgym.errors import LLMError
from amemgym.evolve import LLMRecallJudge, RevealedFact, memory_recall
from amemgym.testing.scripted_model import scripted_client

FACTS = [RevealedFact("work_location", "fully_on_site", "fully_remote"), RevealedFact("diet", "vegetarian"),
         RevealedFact("pet", "old_dog")]


async def test_recall_counts_supported_facts_in_one_call(tmp_path: Path) -> None:
    llm = scripted_client(lambda req: json.dumps({"F1": True, "F2": False, "F3": True}),
        cache=tmp_path / "cache.sqlite")
    result = await memory_recall(LLMRecallJudge(llm), FACTS, "work: now at the office every day", seed=1)
    assert (result.supported, result.revealed, result.recall) == (2, 3, pytest.approx(2 / 3))
    assert [f["supported"] for f in result.facts] == [True, False, True]
    (req,) = llm.scripted.requests
    prompt = req.messages[-1]["content"]
    assert "F1. work location: fully on site" in prompt and "F3. pet: old dog" in prompt
    assert "work: now at the office every day" in prompt
    assert req.json_schema["additionalProperties"] is False and req.json_schema["required"] == ["F1", "F2", "F3"]


async def test_no_revealed_facts_means_undefined_recall_and_no_call(tmp_path: Path) -> None:
    llm = scripted_client(lambda req: "{}", cache=tmp_path / "cache.sqlite")
    result = await memory_recall(LLMRecallJudge(llm), [], "anything", seed=1)
    assert result.recall is None and llm.ledger.totals().calls == 0


async def test_a_judge_missing_verdicts_is_an_error_not_a_score(tmp_path: Path) -> None:
    llm = scripted_client(lambda req: json.dumps({"F1": True}), cache=tmp_path / "cache.sqlite")
    with pytest.raises(LLMError, match="F2"):
        await memory_recall(LLMRecallJudge(llm), FACTS, "notes", seed=1)
