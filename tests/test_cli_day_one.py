"""Day-one conventions: model flags and --limit, preflight before the first call, plug-ins from files."""

from __future__ import annotations

import json
import sys
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from amemgym.agents.registry import resolve_agent
from amemgym.cli import app
from amemgym.config import LLMConfig
from amemgym.errors import BackendUnavailable, ConfigError
from amemgym.llm import embedder as embedder_mod
from amemgym.llm.preflight import check_roles, preflight, run_roles
from amemgym.testing.fake_endpoint import FakeEndpoint
from amemgym.testing.responder import default_responder, request_kind

PLUGIN = '''
from amemgym.agents.native import native


def make_agent(llm, ctx):
    return native(llm, ctx)


make_agent.roles = ("agent",)
'''


class Recorder:
    """A responder that remembers which model each kind of request named."""

    def __init__(self) -> None:
        self.models: Counter[tuple[str, str]] = Counter()
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> str:
        kind = request_kind(body)
        with self._lock:
            self.models[("simulator" if kind == "simulator" else "agent", str(body.get("model")))] += 1
        return default_responder(body)


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch):
    rec = Recorder()
    with FakeEndpoint(responder=rec, served_models=("model-m", "user-u", "fake-model")) as ep:
        monkeypatch.setenv("OPENAI_BASE_URL", ep.base_url)
        yield ep, rec


def test_run_model_and_limit_flags(recorded: tuple[FakeEndpoint, Recorder], tmp_path: Path) -> None:
    ep, rec = recorded
    gen = CliRunner().invoke(app, ["generate", "--config", "tiny", "--users", "3", "--out", str(tmp_path / "env")])
    assert gen.exit_code == 0, gen.output
    env_path = tmp_path / "env" / "data.json"
    assert len(json.loads(env_path.read_text())) == 3  # otherwise --limit 2 would prove nothing
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["run", "--env", str(env_path), "--config", "tiny", "--out", str(out),
                                      "--model", "model-m", "--user-model", "user-u", "--limit", "2",
                                      "--max-connections", "3"])
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert len(manifest["users"]) == 2
    assert manifest["config"]["llm"]["default"]["max_concurrency"] == 3
    metrics = json.loads((out / "metrics.json").read_text())
    assert len(metrics["per_user"]) == 2
    assert sorted(p.name for p in (out / "users").iterdir()) == sorted(manifest["users"])
    sent = {(role, model) for role, model in rec.models}
    assert ("agent", "model-m") in sent and ("simulator", "user-u") in sent
    assert {m for role, m in sent if role == "agent"} == {"model-m"}
    assert {m for role, m in sent if role == "simulator"} == {"user-u"}
    assert ep.max_in_flight <= 3


def test_a_model_the_endpoint_does_not_serve_stops_before_any_call(recorded: tuple[FakeEndpoint, Recorder],
                                                                   tmp_path: Path) -> None:
    ep, _ = recorded
    result = CliRunner().invoke(app, ["run", "--out", str(tmp_path / "r"), "--model", "no-such-model"])
    assert result.exit_code == 2, result.output
    assert "role agent" in result.output and "no-such-model" in result.output
    assert "Traceback" not in result.output
    assert ep.calls == 0 and not (tmp_path / "r" / "manifest.json").exists()


def test_an_unreachable_endpoint_stops_before_any_call(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with FakeEndpoint() as ep:
        dead = ep.base_url
    monkeypatch.setenv("OPENAI_BASE_URL", dead)
    result = CliRunner().invoke(app, ["run", "--out", str(tmp_path / "r")])
    assert result.exit_code == 2, result.output
    assert "unreachable" in result.output and "role simulator" in result.output


def test_a_redirecting_endpoint_is_named_as_such_before_any_call(monkeypatch: pytest.MonkeyPatch,
                                                                 tmp_path: Path) -> None:
    # The run's client follows no redirect, so the preflight must not follow one either: before, it
    # chased the Location and reported the original endpoint "unreachable", or passed a wrong base_url.
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    seen: list[str] = []

    class Redirect(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - stdlib naming
            seen.append(self.path)
            self.send_response(308)
            self.send_header("Location", "http://127.0.0.1:9/elsewhere/v1/models")
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_POST = do_GET

        def log_message(self, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Redirect)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{server.server_port}/v1")
        result = CliRunner().invoke(app, ["run", "--out", str(tmp_path / "r"), "--model", "m"])
    finally:
        server.shutdown()
    assert result.exit_code == 2, result.output
    assert "redirects to http://127.0.0.1:9/elsewhere/v1/models (HTTP 308)" in result.output
    assert seen == ["/v1/models"] and "Traceback" not in result.output


def test_a_missing_embedder_stops_a_rag_run_but_not_a_native_one(
    recorded: tuple[FakeEndpoint, Recorder], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    ep, _ = recorded
    monkeypatch.setattr(embedder_mod, "_BUNDLED_TOKENIZER", tmp_path / "gone.json")
    monkeypatch.setattr(embedder_mod, "_TOKENIZER_PACKAGE", "no_such_tokenizer_package")
    result = CliRunner().invoke(app, ["run", "--agent", "rag", "--out", str(tmp_path / "r"), "--limit", "1"])
    assert result.exit_code == 2, result.output
    assert "role embedder" in result.output and "tokenizer" in result.output
    assert ep.calls == 0
    assert check_roles(LLMConfig(), run_roles(resolve_agent("native").roles)) != []
    assert "embedder" not in run_roles(resolve_agent("native").roles)


def test_a_model_name_without_an_endpoint_is_refused(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["run", "--out", str(tmp_path / "r"), "--model", "gpt-x"])
    assert result.exit_code == 2, result.output
    assert "no endpoint" in result.output


def test_run_roles_follow_the_agent() -> None:
    assert run_roles(("agent",)) == ["simulator", "agent"]
    assert run_roles(("agent",), off_policy=True) == ["agent"]
    assert run_roles(None) == ["simulator", "agent", "memory", "embedder"]
    assert run_roles(resolve_agent("awe").roles) == ["simulator", "agent", "memory", "embedder"]
    assert run_roles(resolve_agent("awi").roles, extra=["judge"]) == ["simulator", "agent", "memory", "judge"]


def test_preflight_probes_each_endpoint_once(monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeEndpoint(served_models=("a", "b")) as ep:
        cfg = LLMConfig.model_validate({"default": {"base_url": ep.base_url, "model": "a"},
                                        "roles": {"simulator": {"model": "b"}}})
        results = preflight(cfg, ["simulator", "agent", "memory", "judge"])
        assert [r.ok for r in results] == [True] * 4
        assert ep.model_calls == 1 and ep.calls == 0
        cfg.roles = {"memory": {"model": "c"}}
        with pytest.raises(BackendUnavailable, match="role memory: model 'c' is not served"):
            preflight(cfg, ["agent", "memory"])


def test_check_llm_checks_the_memory_role(recorded: tuple[FakeEndpoint, Recorder]) -> None:
    ep, _ = recorded
    result = CliRunner().invoke(app, ["check-llm", "--set", f"llm.roles.embedder.base_url={ep.base_url}",
                                      "--set", "llm.roles.memory.model=model-m"])
    assert result.exit_code == 0, result.output
    assert "memory" in result.output
    assert ep.calls >= 6  # five chats (memory included) and one structured call


# ---- plug-ins -------------------------------------------------------------------------------------------


@pytest.fixture
def plugin_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "work"
    (d / "sub").mkdir(parents=True)
    (d / "myagent_day1.py").write_text(PLUGIN)
    (d / "sub" / "other_day1.py").write_text(PLUGIN)
    monkeypatch.chdir(d)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", ".", str(d))])
    return d


def test_plugin_module_in_the_current_directory_loads(plugin_dir: Path) -> None:
    spec = resolve_agent("myagent_day1:make_agent")
    assert spec.roles == ("agent",) and callable(spec.factory)


def test_plugin_from_a_file_path_loads(plugin_dir: Path) -> None:
    spec = resolve_agent("./sub/other_day1.py:make_agent")
    again = resolve_agent(str(plugin_dir / "sub" / "other_day1.py") + ":make_agent")
    assert spec.factory is again.factory  # one module per file, not a fresh copy per mention


def test_plugin_errors_are_one_line(plugin_dir: Path) -> None:
    with pytest.raises(ConfigError, match="no such file"):
        resolve_agent("./missing.py:make_agent")
    with pytest.raises(ConfigError, match="has no callable 'nope'"):
        resolve_agent("./sub/other_day1.py:nope")
    (plugin_dir / "broken_day1.py").write_text("raise RuntimeError('boom')\n")
    with pytest.raises(ConfigError, match="RuntimeError: boom"):
        resolve_agent("broken_day1.py:make_agent")
    with pytest.raises(ConfigError, match="cannot import module 'not_here_day1'"):
        resolve_agent("not_here_day1:make_agent")
    (plugin_dir / "raising_day1.py").write_text("raise KeyError('at import')\n")
    with pytest.raises(ConfigError, match="importing raising_day1 raised KeyError"):
        resolve_agent("raising_day1:make_agent")
    (plugin_dir / "badroles_day1.py").write_text(PLUGIN.replace('("agent",)', '("agnet",)'))
    with pytest.raises(ConfigError, match="unknown role 'agnet'"):
        resolve_agent("badroles_day1:make_agent")


def test_check_agent_loads_a_plugin_next_to_it(plugin_dir: Path) -> None:
    result = CliRunner().invoke(app, ["check-agent", "myagent_day1:make_agent"])
    assert result.exit_code == 0, result.output


def test_evolve_takes_the_same_flags(recorded: tuple[FakeEndpoint, Recorder], tmp_path: Path) -> None:
    ep, rec = recorded
    out = tmp_path / "evo"
    args = ["evolve", "--out", str(out), "--agent", "awi", "--feedback", "none", "--no-recall", "--model", "model-m",
            "--user-model", "user-u", "--limit", "1", "--no-cache"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert len(manifest["users"]) == 1 and manifest["config"]["llm"]["cache"] is False
    assert {m for role, m in rec.models if role == "agent"} == {"model-m"}
    assert {m for role, m in rec.models if role == "simulator"} == {"user-u"}
    calls = ep.calls
    again = CliRunner().invoke(app, args)  # finished, so nothing to redo even without the cache
    assert again.exit_code == 0, again.output
    assert ep.calls == calls


def test_llm_generation_checks_the_generator_role_first(recorded: tuple[FakeEndpoint, Recorder],
                                                         tmp_path: Path) -> None:
    ep, _ = recorded
    res = CliRunner().invoke(app, ["generate", "--generator", "llm", "--users", "1", "--out", str(tmp_path / "g"),
                                   "--set", "llm.roles.generator.model=missing-model"])
    assert res.exit_code == 2 and "role generator" in res.output and "missing-model" in res.output
    assert ep.calls == 0


def test_evolve_takes_the_environments_preset_as_run_does(recorded: tuple[FakeEndpoint, Recorder],
                                                          tmp_path: Path) -> None:
    gen = CliRunner().invoke(app, ["generate", "--config", "small", "--users", "1", "--out", str(tmp_path / "env")])
    assert gen.exit_code == 0, gen.output
    env = str(tmp_path / "env" / "data.json")
    common = ["--env", env, "--agent", "awi", "--feedback", "none", "--no-recall", "--limit", "1"]
    for cmd in (["evolve", *common], ["run", "--env", env, "--agent", "awi", "--limit", "1"]):
        out = tmp_path / cmd[0]
        result = CliRunner().invoke(app, [*cmd, "--out", str(out)])
        assert result.exit_code == 0, result.output
    evolved, ran = (json.loads((tmp_path / d / "manifest.json").read_text())["config"] for d in ("evolve", "run"))
    keys = ("eval_max_tokens", "reply_max_tokens", "simulator_max_tokens", "context_window")
    assert evolved["env"] == ran["env"] and [evolved["run"][k] for k in keys] == [ran["run"][k] for k in keys]
