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
    answered = result.output.split("answered by: ", 1)[1].split()
    assert answered == ["generator", f"{endpoint.model},", "simulator", f"{endpoint.model},", "agent",
                        f"{endpoint.model},", "memory", f"{endpoint.model},", "judge", endpoint.model], result.output


def test_check_llm_fails_for_a_model_the_server_does_not_list(monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeEndpoint(served_models=("served-model",)) as ep:
        monkeypatch.setenv("OPENAI_BASE_URL", ep.base_url)
        result = CliRunner().invoke(app, ["check-llm", "--set", "llm.default.model=unlisted-model",
                                          "--set", f"llm.roles.embedder.base_url={ep.base_url}"])
        assert result.exit_code == 2, result.output
        assert "'unlisted-model' is not served" in result.output and "served-model" in result.output
        assert len(result.output.strip().splitlines()) == 1
        assert ep.calls == 0  # refused before any model call


def test_check_llm_says_when_a_server_takes_the_request_and_stays_silent(monkeypatch: pytest.MonkeyPatch) -> None:
    """Found by probing: against a server that never answered, check-llm printed nothing for 15 minutes."""
    import amemgym.commands.info as info

    monkeypatch.setattr(info, "STALL_SECONDS", 0.3)
    with FakeEndpoint(timeout_sleep=1.5, force_faults={"*": "timeout"}) as ep:
        monkeypatch.setenv("OPENAI_BASE_URL", ep.base_url)
        result = CliRunner().invoke(app, ["check-llm", "--set", "llm.default.read_timeout_s=1",
                                          "--set", "llm.default.max_retries=0"])
    assert result.exit_code != 0
    assert "still waiting: 1 call waiting > 0.3 s" in result.output, result.output


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


def test_generate_llm_reports_failed_users_honestly(endpoint: FakeEndpoint, tmp_path: Path) -> None:
    # The fake server answers every structured call with a minimal schema instance, which the pipeline's
    # semantic checks reject: the user must be reported as failed, never silently dropped or patched.
    out = tmp_path / "gen"
    result = CliRunner().invoke(app, ["generate", "--generator", "llm", "--users", "1", "--out", str(out)])
    assert result.exit_code == 1, result.output
    report = json.loads((out / "generation_report.json").read_text())
    assert report["failures"] and report["failures"][0]["step"]
    partial = CliRunner().invoke(app, ["generate", "--generator", "llm", "--users", "1", "--out", str(out),
                                       "--allow-partial"])
    assert partial.exit_code == 0, partial.output


def test_generate_procedural_is_reproducible(tmp_path: Path) -> None:
    for name in ("a", "b"):
        result = CliRunner().invoke(app, ["generate", "--config", "tiny", "--seed", "3", "--out", str(tmp_path / name)])
        assert result.exit_code == 0, result.output
    assert (tmp_path / "a" / "data.json").read_bytes() == (tmp_path / "b" / "data.json").read_bytes()


def test_terminal_control_sequences_a_server_sends_never_reach_the_console(monkeypatch: pytest.MonkeyPatch) -> None:
    """Found by probing: a reply or a model name holding escape sequences went to the terminal as they were, where
    they can move the cursor and erase lines already printed (an endpoint-problem warning, a score)."""
    erase = "\x1b[1A\x1b[2K"  # cursor up one line, erase it

    def responder(body: dict) -> str:
        return '{"colour": "blue"}' if body.get("response_format") else f"hello{erase} there\x1b]0;title\x07"

    with FakeEndpoint(responder=responder) as ep:
        monkeypatch.setenv("OPENAI_BASE_URL", ep.base_url)
        result = CliRunner().invoke(app, ["check-llm", "--set", f"llm.roles.embedder.base_url={ep.base_url}"])
        assert result.exit_code == 0, result.output
        assert "hello" in result.output and "\x1b" not in result.output, repr(result.output)
        ep.served_models = (f"listed{erase}model",)
        result = CliRunner().invoke(app, ["check-llm", "--set", "llm.default.model=other"])
        assert result.exit_code == 2 and "listed" in result.output and "\x1b" not in result.output, repr(result.output)
