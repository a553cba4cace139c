"""The CLI against a local OpenAI-compatible server: check-llm, run with trials, info."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from amemgym.cli import app
from amemgym.testing.fake_endpoint import FakeEndpoint


@pytest.fixture
def endpoint(monkeypatch: pytest.MonkeyPatch):
    with FakeEndpoint() as ep:
        monkeypatch.setenv("OPENAI_BASE_URL", ep.base_url)
        yield ep


def test_check_llm_talks_to_the_configured_server(endpoint: FakeEndpoint) -> None:
    result = CliRunner().invoke(app, ["check-llm", "--set", f"llm.roles.embedder.base_url={endpoint.base_url}"])
    assert result.exit_code == 0, result.output
    for role in ("generator", "simulator", "agent", "judge", "embedder"):
        assert role in result.output
    assert endpoint.calls >= 5  # four chats and one structured call (embeddings may be counted apart)


def test_info_names_the_endpoint_without_secrets(endpoint: FakeEndpoint, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-SECRET-987")
    result = CliRunner().invoke(app, ["info"])
    assert result.exit_code == 0
    assert "openai" in result.output and "SECRET" not in result.output


def test_run_with_trials_reports_the_spread(endpoint: FakeEndpoint, original_env_path: Path, tmp_path: Path) -> None:
    out = tmp_path / "runs"
    result = CliRunner().invoke(app, ["run", "--env", str(original_env_path), "--config", "tiny", "--out", str(out),
                                      "--trials", "2"])
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "trials.json").read_text())
    assert [t["trial"] for t in summary["trials"]] == ["trial_1", "trial_2"]
    assert summary["spread"]["memory_score"]["n"] in (0, 1, 2)
    assert (out / "trial_2" / "metrics.json").exists()
    manifests = [json.loads((out / f"trial_{k}" / "manifest.json").read_text()) for k in (1, 2)]
    assert [m["config"]["run"]["seed"] for m in manifests] == [0, 1]
