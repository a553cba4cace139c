"""A budget run directory written before the engine (``model.json``, ``batch.json``, ``tool_protocol.json``, no
manifest) is adopted on resume: its pinned model, agent, run seed and tool protocol become the manifest's, so a
model change is refused unless allowed. One that cannot be adopted safely is refused in one line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from amemgym.cli import app
from amemgym.families.budget.generate import build_episode
from amemgym.families.budget.model import Episode
from amemgym.families.budget.tool_agents import _PROBED
from amemgym.testing.budget import BudgetScript, served_episode
from amemgym.testing.fake_endpoint import FakeEndpoint

SERVED = "served-now"


@pytest.fixture(scope="module")
def episode() -> Episode:
    return build_episode("lite", "films", 1)


@pytest.fixture(autouse=True)
def _fresh_probes() -> None:
    _PROBED.clear()


def _run(env: Path, out: Path, script: BudgetScript, monkeypatch: pytest.MonkeyPatch, *extra: str,
         model: str = SERVED) -> tuple[int, str]:
    with FakeEndpoint(responder=script.body_reply, model=model) as ep:
        monkeypatch.setenv("OPENAI_BASE_URL", ep.base_url)
        res = CliRunner().invoke(app, ["run", "--env", str(env), "--out", str(out), "--model", model,
                                       "--set", "llm.cache=false", *extra])
    return res.exit_code, " ".join(res.output.split())


def _agent_calls(script: BudgetScript) -> int:
    return sum(n for k, n in script.calls.items() if k != "probe")


def _as_legacy(out: Path, episode: Episode, *, model: str = SERVED, protocol: str = "text",
               agent: str = "native", run_seed: int = 0) -> None:
    """Turn a finished run directory into what the version before the engine left: no manifest, metrics or
    usage; the model pin, the batch file and the episode's tool-protocol pin instead."""
    manifest = json.loads((out / "manifest.json").read_text())
    for name in ("manifest.json", "metrics.json", "usage.json"):
        (out / name).unlink(missing_ok=True)
    (out / "model.json").write_text(json.dumps({"format_version": 1, "agent_model": model, "role_models": {},
                                                "changes": []}))
    (out / "batch.json").write_text(json.dumps({
        "family": "budget", "kind": "batch", "format_version": 1, "environment": manifest["environment_file"],
        "agent": agent, "policy": "budget", "store": "notes", "results_version": 3, "run_seed": run_seed,
        "agent_model": model, "episodes": [{"path": ".", "sha256": manifest["units"][0]["sha256"], "tier": "lite",
                                            "domain": episode.domain, "seed": episode.seed, "salt": 0}]}))
    (out / "tool_protocol.json").write_text(json.dumps({"format_version": 1, "tool_protocol": protocol,
                                                        "reason": "pinned by the old version"}))


def _legacy_run(episode: Episode, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **legacy: Any) -> tuple[Path, Path]:
    env, _ = served_episode(episode, tmp_path / "env")
    out = tmp_path / "out"
    code, text = _run(env, out, BudgetScript([episode]), monkeypatch, "--set", "budget.tools=text")
    assert code == 0, text
    _as_legacy(out, episode, **legacy)
    return env, out


def test_the_same_model_resumes_the_old_run_without_a_call(episode: Episode, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    env, out = _legacy_run(episode, tmp_path, monkeypatch)
    before = json.loads((out / "results.json").read_text())
    script = BudgetScript([episode])
    code, text = _run(env, out, script, monkeypatch)
    assert code == 0 and "adopted" in text, text
    assert _agent_calls(script) == 0 and script.calls["probe"] == 0  # finished, and the old pin kept: no probe
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["models"]["agent"]["served"] == SERVED and manifest["model_changes"] == []
    assert manifest["pins"]["tool_protocol"] == {"protocol": "text", "reason": "pinned by the old version"}
    assert manifest["protocol"]["agent"] == "native" and manifest["protocol"]["run_seed"] == 0
    assert json.loads((out / "results.json").read_text())["score"] == before["score"]
    assert json.loads((out / "metrics.json").read_text())  # the engine's run files are written again


def test_a_changed_model_is_refused_unless_allowed(episode: Episode, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    env, out = _legacy_run(episode, tmp_path, monkeypatch, model="old-model-7b")
    script = BudgetScript([episode])
    code, text = _run(env, out, script, monkeypatch)
    assert code == 2 and "'old-model-7b', now 'served-now'" in text and "--allow-model-change" in text, text
    assert "Traceback" not in text and _agent_calls(script) == 0
    code, text = _run(env, out, script, monkeypatch, "--allow-model-change")
    assert code == 0, text
    changes = json.loads((out / "manifest.json").read_text())["model_changes"]
    assert [(c["role"], c["from"], c["to"]) for c in changes] == [("agent", "old-model-7b", SERVED)]


def test_another_tool_protocol_than_the_old_pin_is_refused(episode: Episode, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    env, out = _legacy_run(episode, tmp_path, monkeypatch)
    code, text = _run(env, out, BudgetScript([episode]), monkeypatch, "--set", "budget.tools=native")
    assert code == 2 and "text" in text and "Traceback" not in text, text


def test_another_agent_or_seed_than_the_old_batch_is_refused(episode: Episode, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    env, out = _legacy_run(episode, tmp_path, monkeypatch)
    code, text = _run(env, out, BudgetScript([episode]), monkeypatch, "--set", "run.seed=5")
    assert code == 2 and "run seed" in text, text


@pytest.mark.parametrize("case", ["no batch", "results of another seed", "unreadable model", "two protocols"])
def test_an_old_directory_that_cannot_be_adopted_is_one_line(case: str, episode: Episode, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    # Adversarial: adopting these would count results of an unknown agent or seed, or hide the old model.
    env, out = _legacy_run(episode, tmp_path, monkeypatch, run_seed=3 if case == "results of another seed" else 0)
    if case == "no batch":
        (out / "batch.json").unlink()
    elif case == "unreadable model":
        (out / "model.json").write_text("{not json")
    elif case == "two protocols":
        batch = json.loads((out / "batch.json").read_text())
        batch["episodes"].append({**batch["episodes"][0], "path": "other"})
        (out / "batch.json").write_text(json.dumps(batch))
        (out / "other").mkdir()
        (out / "other" / "tool_protocol.json").write_text(json.dumps({"tool_protocol": "native", "reason": "x"}))
    script = BudgetScript([episode])
    code, text = _run(env, out, script, monkeypatch)
    assert code == 2 and "Traceback" not in text and _agent_calls(script) == 0, text
    assert "use a new --out directory" in text, text
    assert not (out / "manifest.json").exists()


def test_a_manifest_beside_a_disagreeing_old_model_pin_is_refused(episode: Episode, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # A version that ignored model.json resumed with another model and wrote a manifest of its own: the mix
    # is caught on the next resume.
    env, out = _legacy_run(episode, tmp_path, monkeypatch, model="old-model-7b")
    (out / "model.json").rename(out / "model.json.hidden")
    assert _run(env, out, BudgetScript([episode]), monkeypatch)[0] == 2  # batch.json alone is not adopted
    (out / "batch.json").unlink()
    assert _run(env, out, BudgetScript([episode]), monkeypatch)[0] == 0  # as the ignoring version did
    (out / "model.json.hidden").rename(out / "model.json")
    code, text = _run(env, out, BudgetScript([episode]), monkeypatch)
    assert code == 2 and "pins agent model 'old-model-7b'" in text, text
    assert _run(env, out, BudgetScript([episode]), monkeypatch, "--allow-model-change")[0] == 0
    changes = json.loads((out / "manifest.json").read_text())["model_changes"]
    assert [(c["role"], c["from"], c["to"]) for c in changes] == [("agent", "old-model-7b", SERVED)]
    assert _run(env, out, BudgetScript([episode]), monkeypatch)[0] == 0  # recorded: no second refusal
