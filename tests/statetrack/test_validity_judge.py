"""Exposure is read from the text of every file by default: the pack's phrasings where the pack is recognised,
the judge role for the users it cannot read (``--judge`` forces the judge on every user, ``--no-judge``
leaves unread users loudly UNCHECKED). Judges here are fake endpoints or scripted clients, never a model."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from amemgym.commands.validate import register
from amemgym.families.statetrack.data import load_environment, save_environment
from amemgym.families.statetrack.data.model import Environment
from amemgym.testing.fake_endpoint import FakeEndpoint


def invoke(*args: str):
    app = typer.Typer()
    register(app)
    return CliRunner().invoke(app, list(args))


def truthful(env: Environment, silent: str | None = None):
    """A judge that states exactly what each opening in its prompt exposes (except the ``silent`` opening)."""

    def reply(body: dict[str, Any]) -> str:
        prompt = body["messages"][-1]["content"]
        stated = [{"topic": k, "value": v} for u in env.users for p in u.periods for s in p.sessions
                  if s.query in prompt and s.query != silent for k, v in s.exposed_states.items()]
        return json.dumps({"stated": stated})

    return reply


def endpoint_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, url: str) -> list[str]:
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("AMEMGYM_CACHE_DIR", str(tmp_path / "cache"))
    return ["--set", "llm.default.model=fake-model", "--set", "llm.default.max_retries=1"]


def stripped_original(original_env_path: Path, tmp_path: Path) -> Path:
    """The original-format fixture without any metadata block (it has none the pack could use anyway)."""
    data = json.loads(original_env_path.read_text())
    for item in data if isinstance(data, list) else data["users"]:
        item.pop("_amemgym", None)
    path = tmp_path / "stripped.json"
    path.write_text(json.dumps(data))
    return path


def test_by_default_an_unrecognised_file_is_judged_and_fails_on_an_unstated_change(
        original_env_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = stripped_original(original_env_path, tmp_path)
    env = load_environment(path)
    silent = env.users[0].periods[1].sessions[0].query
    # A judge that finds every change but one: no --judge flag, yet the text is read and the file fails.
    with FakeEndpoint(responder=truthful(env, silent=silent)) as ep:
        extra = endpoint_env(monkeypatch, tmp_path, ep.base_url)
        res = invoke("validate", "--env", str(path), "--embedder", "hash", "--json", str(tmp_path / "v.json"),
                     *extra)
        calls = ep.calls
    assert res.exit_code == 1, res.output
    assert calls == sum(len(u.periods) for u in env.users)  # one call per user and period
    text = " ".join(res.output.split())
    assert "not stated by any opening text" in text and "UNCHECKED" not in text
    assert "only as good as its reading" in text  # how far the judge can be trusted, with the verdict
    data = json.loads((tmp_path / "v.json").read_text())
    assert data["exposure_checked"] is True and data["judge"] == "auto"
    assert data["text_exposure"]["judged_users"] == [u.id for u in env.users]
    assert data["text_exposure"]["counts"]["unrevealed_change"] == 1


def test_by_default_a_truthful_judge_passes_the_same_file(original_env_path: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    path = stripped_original(original_env_path, tmp_path)
    with FakeEndpoint(responder=truthful(load_environment(path))) as ep:
        res = invoke("validate", "--env", str(path), "--embedder", "hash",
                     *endpoint_env(monkeypatch, tmp_path, ep.base_url))
    assert res.exit_code == 0, res.output
    assert "PASS" in res.output and "UNCHECKED" not in res.output


def test_the_judge_reads_only_the_users_the_pack_cannot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from amemgym.families.statetrack.generate.procedural import tiny_environment_path

    env = load_environment(tiny_environment_path())
    odd = env.users[0]
    # Renamed variables (as a language model would name them): the pack cannot read this user any more.
    rename = {v: f"my_{v}" for v in odd.state_schema}
    odd.state_schema = {rename[k]: v for k, v in odd.state_schema.items()}
    for period in odd.periods:
        period.state = {rename[k]: v for k, v in period.state.items()}
        period.updates = {rename[k]: v for k, v in period.updates.items()}
        for s in period.sessions:
            s.exposed_states = {rename[k]: v for k, v in s.exposed_states.items()}
    for qa in odd.qas:
        qa.required_info = [rename[k] for k in qa.required_info]
    for user in env.users:
        user.amemgym = None
    path = tmp_path / "mixed.json"
    save_environment(env, path)
    prompts: list[str] = []
    judge = truthful(env)

    def record(body: dict[str, Any]) -> str:
        prompts.append(body["messages"][-1]["content"])
        return judge(body)

    with FakeEndpoint(responder=record) as ep:
        res = invoke("validate", "--env", str(path), "--embedder", "hash", "--json", str(tmp_path / "v.json"),
                     *endpoint_env(monkeypatch, tmp_path, ep.base_url))
    assert res.exit_code in (0, 1), res.output
    assert len(prompts) == len(odd.periods)
    # Every prompt holds an opening of the renamed user, none of another user's.
    assert all(any(s.query in p for per in odd.periods for s in per.sessions) for p in prompts)
    others = [s.query for u in env.users[1:] for per in u.periods for s in per.sessions]
    assert not any(q in p for q in others for p in prompts)
    data = json.loads((tmp_path / "v.json").read_text())
    assert data["text_exposure"]["judged_users"] == [odd.id] and data["exposure_checked"] is True


def test_no_judge_leaves_an_unrecognised_file_loudly_unchecked_and_calls_nothing(
        original_env_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = stripped_original(original_env_path, tmp_path)
    with FakeEndpoint(responder=lambda body: '{"stated": []}') as ep:
        res = invoke("validate", "--env", str(path), "--embedder", "hash", "--no-judge", "--json",
                     str(tmp_path / "v.json"), *endpoint_env(monkeypatch, tmp_path, ep.base_url))
        calls, listed = ep.calls, ep.model_calls
    assert res.exit_code == 0, res.output
    assert calls == 0 and listed == 0
    text = " ".join(res.output.split())
    assert "WARNING: exposure UNCHECKED" in text and "EXPOSURE UNCHECKED" in text and "--no-judge" in text
    data = json.loads((tmp_path / "v.json").read_text())
    assert data["exposure_checked"] is False and data["judge"] == "never"


def _closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


@pytest.mark.parametrize("flag", [[], ["--judge"]])
def test_an_unreachable_judge_is_one_line_and_exit_2(original_env_path: Path, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch, flag: list[str]) -> None:
    path = stripped_original(original_env_path, tmp_path)
    res = invoke("validate", "--env", str(path), "--embedder", "hash", "--json", str(tmp_path / "v.json"), *flag,
                 *endpoint_env(monkeypatch, tmp_path, _closed_port_url()))
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output
    text = " ".join(res.output.split())
    assert "judge" in text and "unreachable" in text and "--no-judge" in text
    assert not (tmp_path / "v.json").exists()  # no verdict is written for a file nobody could read


def test_a_pack_file_without_metadata_is_read_by_the_pack_and_never_calls_a_model(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from amemgym.families.statetrack.generate.procedural import tiny_environment_path

    env = load_environment(tiny_environment_path())
    for user in env.users:
        user.amemgym = None
    path = tmp_path / "tiny.json"
    save_environment(env, path)
    # The judge role points nowhere: a file the pack reads must not even check it.
    res = invoke("validate", "--env", str(path), "--embedder", "hash", "--json", str(tmp_path / "v.json"),
                 *endpoint_env(monkeypatch, tmp_path, _closed_port_url()))
    assert res.exit_code == 0, res.output
    data = json.loads((tmp_path / "v.json").read_text())
    assert data["exposure_checked"] is True and data["text_exposure"]["judged_users"] == []
    assert data["text_exposure"]["reader"].startswith("lexical")


def test_the_judge_rereads_what_an_edited_pack_makes_the_phrasings_miss() -> None:
    """A file claiming edited pack files: the phrasings' misses prove nothing, so the judge decides."""
    from test_validity_planted import _claim_edited_pack, clean, plant_silent_session

    from amemgym.families.statetrack.validity.reading import llm_judge
    from amemgym.families.statetrack.validity.strategies import TextVectors
    from amemgym.families.statetrack.validity.suite import run_suite
    from amemgym.llm import LLMClient
    from amemgym.testing.scripted_model import HashEmbedder, ScriptedBackend

    env = _claim_edited_pack(plant_silent_session(clean()))
    without = run_suite(env, TextVectors(HashEmbedder().embed_sync))
    assert without.exposure_unchecked and "edited pack" in without.exposure_unchecked

    silent = "Hi! Could you help me think through the next few weeks?"  # the planted opening

    def reply(req) -> str:
        return truthful(env, silent=silent)({"messages": req.messages})

    llm = LLMClient(backends={"judge": ScriptedBackend(reply)}, backoff_base=0.001)
    report = run_suite(env, TextVectors(HashEmbedder().embed_sync), judge=llm_judge(llm, "scripted"))
    flagged = {f.user for f in (without.text_exposure.findings if without.text_exposure else [])}
    assert report.text_exposure is not None and set(report.text_exposure.judged_users) == flagged
    assert report.exposure_unchecked is None
    assert any("not stated by any opening text" in f for f in report.failures)


def test_without_an_endpoint_the_judge_is_the_embedded_model_and_its_note_says_how_weak_it_is(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from amemgym.config import load_config
    from amemgym.families.statetrack.family import _judge

    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    judge = _judge(load_config("tiny").llm)  # builds nothing and calls nothing until it has a user to read
    assert "embedded" in judge.name
    assert "weak evidence" in judge.note and "false PASS" in judge.note and "llm.roles.judge" in judge.note
