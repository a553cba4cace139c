"""The procedural generator passes ``validate`` for every seed the tests use (a CI gate, docs/design.md §8)."""

from __future__ import annotations

import pytest

from amemgym.config import env_preset
from amemgym.families.statetrack.generate.procedural import generate_procedural
from amemgym.families.statetrack.validity.strategies import TextVectors
from amemgym.families.statetrack.validity.suite import run_suite
from amemgym.testing.scripted_model import HashEmbedder


def _validate(preset: str, seed: int, embed=None):
    env, _ = generate_procedural(env_preset(preset), seed=seed)
    return run_suite(env, TextVectors(embed or HashEmbedder().embed_sync), seed=0)


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 42])
def test_tiny_procedural_environments_pass(seed: int) -> None:
    report = _validate("tiny", seed)
    assert report.passed, report.failures


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_small_procedural_environments_pass(seed: int) -> None:
    report = _validate("small", seed)
    assert report.passed, report.failures
    assert not report.leaky_questions


def test_procedural_data_has_no_unexposed_or_wrong_exposures() -> None:
    env, _ = generate_procedural(env_preset("small"), seed=0)
    counts = run_suite(env, TextVectors(HashEmbedder().embed_sync)).audit.to_dict()["counts"]
    assert counts["unexposed_update"] == 0 and counts["wrong_exposure"] == 0


@pytest.mark.embedded
def test_tiny_procedural_passes_with_minilm() -> None:
    embedder = pytest.importorskip("amemgym.llm.embedder")
    ok, detail = embedder.embedder_status()
    if not ok:
        pytest.skip(detail)
    report = _validate("tiny", 42, embed=embedder.MiniLMEmbedder(threads=1).embed)
    assert report.passed, report.failures
