"""Shared fixtures: the original-shape environment, the scripted model client, and a temp cache dir."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from amemgym.llm.client import LLMClient
from amemgym.testing.scripted_model import Script, scripted_client

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


@pytest.fixture
def scripted_llm(tmp_path: Path) -> Callable[..., LLMClient]:
    """A factory of clients answered by a script: ``scripted_llm(script, cache=True)``.

    With ``cache`` the client keeps a response cache in the test's temp folder (shared by the clients one
    test makes, so a second run can be served from it).
    """

    def make(script: Script, *, cache: bool = True) -> LLMClient:
        return scripted_client(script, cache=tmp_path / "scripted-cache.sqlite" if cache else None)

    return make
