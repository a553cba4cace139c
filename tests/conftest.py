"""Shared fixtures: the original-shape environment, scripted clients, and a temp cache dir."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    # Tests never touch the user's real cache or endpoints.
    monkeypatch.setenv("AMEMGYM_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


@pytest.fixture
def original_env_path() -> Path:
    return FIXTURES / "original_shape.json"
