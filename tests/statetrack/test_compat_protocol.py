"""The original-style entry points honour the original's config files and write its output folder."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from amemgym.families.statetrack.compat import diagnosis, overall
from amemgym.families.statetrack.compat.flags import AGENT_KEY_ENV, GENERATOR_KEY_ENV, SIMULATOR_KEY_ENV
from amemgym.testing.fake_endpoint import CallRecord, FakeEndpoint

#: The models the original-style config files name; the fake lists them, as a server serving them would.
CONFIGURED = ("agent-model", "sim-model")


@pytest.fixture(autouse=True)
def _compat_keys_restored(monkeypatch: pytest.MonkeyPatch) -> None:
    # The entry points hand config-file keys to the client through these variables; undo them after each test.
    for name in (AGENT_KEY_ENV, SIMULATOR_KEY_ENV, GENERATOR_KEY_ENV):
        monkeypatch.setenv(name, "unset")


def _configs(tmp_path: Path, url: str, *, agent_tokens: int = 8192, sim_tokens: int = 8192) -> tuple[Path, Path]:
    agent = {"type": "native", "name": "mini-native",
             "llm_config": {"base_url": url, "api_key": "sk-compat-secret", "llm_model": "agent-model",
                            "temperature": 0.0, "max_tokens": agent_tokens, "source": "agent:interaction"}}
    low = {"base_url": url, "api_key": "EMPTY", "llm_model": "sim-model", "temperature": 0.2,
           "max_tokens": sim_tokens, "source": "env:data-generation"}
    env = {"start_date": "2020-10-01", "num_user_profiles": 1, "num_questions": 2, "num_periods": 2,
           "num_rounds_init": 1, "num_rounds_update": 2, "llm_config_low_temp": low,
           "llm_config_high_temp": {**low, "temperature": 0.5}, "exclude_ids": [], "seed": 42}
    (tmp_path / "native.json").write_text(json.dumps(agent))
    (tmp_path / "v1.base.json").write_text(json.dumps(env))
    return tmp_path / "native.json", tmp_path / "v1.base.json"


def _run(module: object, monkeypatch: pytest.MonkeyPatch, argv: list[str]) -> int:
    monkeypatch.setattr(sys, "argv", ["prog", *argv])
    return module.main()  # type: ignore[attr-defined, no-any-return]


def _roles(log: list[CallRecord]) -> dict[str, set[tuple[str | None, float | None, int | None, bool]]]:
    out: dict[str, set[tuple[str | None, float | None, int | None, bool]]] = {}
    for r in log:
        out.setdefault(r.kind, set()).add((r.model, r.temperature, r.max_tokens, r.system))
    return out


def test_overall_sends_the_configured_models_temperatures_and_budgets(
    original_env_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeEndpoint(model="server-first-model", served_models=("server-first-model", *CONFIGURED)) as ep:
        agent_cfg, env_cfg = _configs(tmp_path, ep.base_url)
        code = _run(overall, monkeypatch, ["--env_data", str(original_env_path), "--env_config", str(env_cfg),
                                           "--agent_config", str(agent_cfg), "--output_dir", str(tmp_path / "out")])
    assert code == 0
    roles = _roles(ep.log)
    # Replies, answers, probes and the upper bound all run on the agent's settings, with no system prompt.
    for kind in ("chat", "answer", "probe"):
        assert roles[kind] == {("agent-model", 0.0, 8192, False)}, kind
    assert roles["simulator"] == {("sim-model", 0.2, 8192, True)}
    assert not any(r.model == "server-first-model" for r in ep.log)


def test_key_from_an_original_config_reaches_the_server_but_no_file(
    original_env_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeEndpoint(served_models=("fake-model", *CONFIGURED)) as ep:
        agent_cfg, env_cfg = _configs(tmp_path, ep.base_url)
        _run(overall, monkeypatch, ["--env_data", str(original_env_path), "--env_config", str(env_cfg),
                                    "--agent_config", str(agent_cfg), "--output_dir", str(tmp_path / "out")])
    assert "Bearer sk-compat-secret" in ep.authorizations
    for path in (tmp_path / "out").rglob("*"):
        if path.is_file():
            assert "sk-compat-secret" not in path.read_text(encoding="utf-8", errors="replace"), path


def test_original_output_folder_is_written_and_replayed_off_policy(
    original_env_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeEndpoint(served_models=("fake-model", *CONFIGURED)) as ep:
        agent_cfg, env_cfg = _configs(tmp_path, ep.base_url)
        args = ["--env_data", str(original_env_path), "--env_config", str(env_cfg), "--agent_config", str(agent_cfg)]
        assert _run(overall, monkeypatch, [*args, "--output_dir", str(tmp_path / "on")]) == 0
        user = tmp_path / "on" / "mini-native" / "u-0001"
        interactions = [json.loads((user / "interactions" / f"period_{p:02d}.json").read_text()) for p in range(3)]
        assert [len(s) for s in interactions] == [2, 1, 2]
        assert interactions[1][0][0]["content"].startswith("[Current Time: ")
        assert [len(m) for m in interactions[1]] == [4]  # 2 rounds after period 0
        results = json.loads((user / "overall_results.json").read_text())
        metrics = json.loads((user / "overall_metrics.json").read_text())
        assert len(results) == 3 and len(results[0]) == 2
        assert metrics["accuracy"] == [[r["scores"]["accuracy"] for r in row] for row in results]
        diag = json.loads((user / "diagnosis_metrics.json").read_text())
        assert set(diag) == {"write_failure", "read_failure", "memory_success"}
        copied = json.loads((tmp_path / "on" / "mini-native" / "native.json").read_text())
        assert copied["llm_config"]["api_key"] is None

        # Replaying the original folder: no simulator call, and the agent ingests exactly those conversations.
        ep.reset_counters()
        original_folder = tmp_path / "original-copy"
        original_folder.mkdir()
        import shutil

        shutil.copytree(user / "interactions", original_folder / "u-0001" / "interactions")
        code = _run(overall, monkeypatch, [*args, "--output_dir", str(tmp_path / "off"),
                                           "--off_policy_dir", str(original_folder)])
    assert code == 0
    assert "simulator" not in ep.calls_by_kind and "chat" not in ep.calls_by_kind
    replayed = tmp_path / "off" / "mini-native" / "u-0001" / "interactions"
    assert [json.loads((replayed / f"period_{p:02d}.json").read_text()) for p in range(3)] == interactions


def test_off_policy_rejects_a_folder_whose_conversations_do_not_match(
    original_env_path: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "orig" / "u-0001" / "interactions"
    folder.mkdir(parents=True)
    (folder / "period_00.json").write_text(json.dumps([[{"role": "user", "content": "hi"},
                                                         {"role": "assistant", "content": "hello"}]] * 2))
    proc = subprocess.run([sys.executable, "-m", "amemgym.eval.overall", "--env_data", str(original_env_path),
                           "--output_dir", str(tmp_path / "out"), "--off_policy_dir", str(tmp_path / "orig")],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.startswith("error:") and "not this session's opening" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def _malformed(body: dict) -> str:
    from amemgym.testing.responder import default_responder, request_kind

    if request_kind(body) == "answer":
        return '{"answer": -1}'  # the second-to-last option for the original, out of range for amemgym
    return default_responder(body)


def test_diagnosis_console_counts_invalid_answers_and_uses_the_original_rule(
    original_env_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeEndpoint(responder=_malformed, served_models=("fake-model", *CONFIGURED)) as ep:
        agent_cfg, env_cfg = _configs(tmp_path, ep.base_url)
        code = _run(diagnosis, monkeypatch, ["--env_data", str(original_env_path), "--env_config", str(env_cfg),
                                             "--agent_config", str(agent_cfg), "--output_dir", str(tmp_path)])
    assert code == 0
    shown = capsys.readouterr().out
    assert "invalid answers: 6 of 6 (out of range 6)" in shown
    metrics = json.loads((tmp_path / "mini-native" / "metrics.json").read_text())
    env = json.loads(original_env_path.read_text())[0]
    # {"answer": -1} indexes the second-to-last option under the original rule.
    expected = []
    for period in env["periods"]:
        for qa in env["qas"]:
            truth = [period["state"][v] for v in qa["required_info"]]
            expected.append(1.0 if qa["answer_choices"][-2]["state"] == truth else 0.0)
    assert 0 < sum(expected) < len(expected)
    assert metrics["answers"]["overall_original_rule"] == pytest.approx(sum(expected) / len(expected))
    assert metrics["answers"]["overall_strict"] == 0.0
    assert metrics["answers"]["rule"] == "original"
    assert metrics["overall"]["overall"]["mean"] == pytest.approx(sum(expected) / len(expected))


def test_random_output_file_has_the_original_shape(original_env_path: Path, tmp_path: Path) -> None:
    target = tmp_path / "eval-output" / "random_metrics.json"
    subprocess.run([sys.executable, "-m", "amemgym.eval.random", "--data_file", str(original_env_path),
                    "--output_file", str(target)], capture_output=True, text=True, check=True)
    assert json.loads(target.read_text()) == {"accuracy": [[[0.25, 0.25]] * 3]}


def test_upperbound_uses_the_agent_config_and_writes_utilization_metrics(
    original_env_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from amemgym.families.statetrack.compat import upperbound

    with FakeEndpoint(served_models=("fake-model", *CONFIGURED)) as ep:
        agent_cfg, _ = _configs(tmp_path, ep.base_url, agent_tokens=2000)
        code = _run(upperbound, monkeypatch, ["--data_file", str(original_env_path), "--agent_config",
                                              str(agent_cfg), "--output_dir", str(tmp_path / "ub")])
    assert code == 0
    assert _roles(ep.log)["answer"] == {("agent-model", 0.0, 2000, False)}
    cube = json.loads((tmp_path / "ub" / "agent-model" / "utilization_metrics.json").read_text())["accuracy"]
    assert len(cube) == 1 and len(cube[0]) == 3 and len(cube[0][0]) == 2
