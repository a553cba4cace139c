"""Shared fixtures: the original-shape environment, the scripted model client, a temp cache dir, and the fake
endpoint as the environment's default endpoint."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from amemgym.testing.fake_endpoint import FakeEndpoint
from amemgym.testing.scripted_model import Script, ScriptedClient, scripted_client

# tests/ holds helper modules (toy_family, budget_plugins, evolve_script), and test modules in the folders
# below import each other's helpers by basename (pytest's default import mode names a test module by its
# basename, so basenames stay unique across folders). Every folder goes on the path before collection,
# whatever order the folders are collected in.
_TESTS = Path(__file__).parent
sys.path[:0] = [str(_TESTS), *(str(d) for d in sorted(_TESTS.iterdir()) if d.is_dir() and d.name.isidentifier()
                                and any(d.glob("test_*.py")))]

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    # Tests never touch the user's real cache or endpoints.
    monkeypatch.setenv("AMEMGYM_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


@pytest.fixture
def endpoint(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    """The fake endpoint as ``$OPENAI_BASE_URL`` (what a bare ``amemgym run`` talks to), with a cache of its own."""
    monkeypatch.setenv("AMEMGYM_CACHE_DIR", str(tmp_path / "cache"))
    with FakeEndpoint() as ep:
        monkeypatch.setenv("OPENAI_BASE_URL", ep.base_url)
        yield ep


@pytest.fixture(scope="module")
def module_endpoint() -> Iterator[FakeEndpoint]:
    """One fake endpoint (seed 5) shared by a test module's tests."""
    with FakeEndpoint(seed=5) as ep:
        yield ep


def finished_run(endpoint: FakeEndpoint, root: Path) -> Path:
    """``root/run``: a finished ``amemgym run`` of the original-shape environment against ``endpoint``, with a
    response cache of its own under ``root``."""
    from typer.testing import CliRunner

    from amemgym.cli import app

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("OPENAI_BASE_URL", endpoint.base_url)
        mp.setenv("AMEMGYM_CACHE_DIR", str(root / "cache"))
        result = CliRunner().invoke(app, ["run", "--env", str(FIXTURES / "original_shape.json"),
                                          "--out", str(root / "run")])
    assert result.exit_code == 0, result.output
    return root / "run"


@pytest.fixture
def original_env_path() -> Path:
    return FIXTURES / "original_shape.json"


@pytest.fixture
def scripted_llm(tmp_path: Path) -> Callable[..., ScriptedClient]:
    """A factory of clients answered by a script: ``scripted_llm(script, cache=True, roles=...)``.

    With ``cache`` the client keeps a response cache in the test's temp folder (shared by the clients one
    test makes, so a second run can be served from it). The client's ``scripted`` is the backend behind it:
    ``llm.scripted.requests`` are the calls that reached the model.
    """

    def make(script: Script, *, cache: bool = True, **options: Any) -> ScriptedClient:
        return scripted_client(script, cache=tmp_path / "scripted-cache.sqlite" if cache else None, **options)

    return make


@pytest.fixture
def load_hf_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[Path], Any]:
    """Load a JSONL file with Hugging Face ``datasets``, offline, the way a trainer would (skipped without it)."""
    datasets = pytest.importorskip("datasets")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")

    def load(path: Path) -> Any:
        return datasets.load_dataset("json", data_files=str(path), split="train", cache_dir=str(tmp_path / "hf"))

    return load
