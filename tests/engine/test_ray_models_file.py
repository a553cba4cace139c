"""Scale-out pieces that need no Ray: the models file, the per-task concurrency share, import hygiene."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from amemgym.config import AppConfig, EndpointConfig, LLMConfig, load_config
from amemgym.engine.models_file import apply_models_file, load_models_file
from amemgym.engine.ray import check_endpoints, task_config, task_slots
from amemgym.errors import ConfigError
from amemgym.families.statetrack.driver import run_command

SRC = Path(__file__).resolve().parents[2] / "src"

GOOD = """
agent:
  base_url: http://gpu-1:8000/v1
  model: Qwen/Qwen2.5-7B-Instruct
  api_key_env: VLLM_API_KEY
  max_concurrency: 64
simulator:
  base_url: https://api.example.com/v1
  model: small-model
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "models.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_models_file_becomes_role_overrides(tmp_path: Path) -> None:
    roles = load_models_file(write(tmp_path, GOOD))
    assert roles["agent"]["max_concurrency"] == 64 and roles["simulator"]["model"] == "small-model"
    llm = LLMConfig(roles=roles)
    assert llm.endpoint("memory").base_url == "http://gpu-1:8000/v1"  # memory follows the agent's endpoint


def test_models_file_overlays_existing_roles_field_by_field(tmp_path: Path) -> None:
    merged = apply_models_file({"agent": {"temperature": 0.3, "model": "old"}}, write(tmp_path, GOOD))
    assert merged["agent"]["temperature"] == 0.3 and merged["agent"]["model"] == "Qwen/Qwen2.5-7B-Instruct"


@pytest.mark.parametrize(("text", "needle"), [
    ("agent: [1, 2]", "expected a mapping of endpoint settings"),
    ("- agent", "expected a mapping of role"),
    ("planner:\n  model: x", "unknown role 'planner'"),
    ("agent:\n  max_concurrency: 0", "agent: max_concurrency"),
    ("agent:\n  modle: x", "agent: modle"),
    ("agent:\n  api_key: sk-123", "do not put keys in the file"),
    ("agent: {base_url: [", "not valid YAML"),
])
def test_bad_models_files_are_one_line_config_errors(tmp_path: Path, text: str, needle: str) -> None:
    with pytest.raises(ConfigError, match=needle.replace("[", r"\[")) as info:
        load_models_file(write(tmp_path, text))
    assert "\n" not in str(info.value)


def test_missing_models_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read models file"):
        load_models_file(tmp_path / "nope.yaml")


def served(max_concurrency: int = 8, user_concurrency: int = 8) -> AppConfig:
    cfg = load_config("tiny")
    cfg.llm = LLMConfig(default=EndpointConfig(base_url="http://127.0.0.1:9/v1", max_concurrency=max_concurrency),
                        roles={"simulator": {"max_concurrency": 5}})
    cfg.run.user_concurrency = user_concurrency
    return cfg


#: The chat roles a statetrack user's episode calls.
ROLES = ("agent", "memory", "simulator")


def test_tasks_share_each_endpoints_limit() -> None:
    cfg = served(max_concurrency=8, user_concurrency=3)
    slots = task_slots(cfg, 10, None, ROLES)
    per_task = task_config(cfg, slots, ROLES).llm
    assert slots == 3
    assert per_task.endpoint("agent").max_concurrency * slots <= 8
    assert per_task.endpoint("simulator").max_concurrency * slots <= 5
    assert task_slots(served(max_concurrency=2), 10, None, ROLES) == 2  # every task keeps at least one permit
    assert task_slots(cfg, 1, None, ROLES) == 1


def test_task_config_pins_the_drivers_base_url(monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = load_config("tiny")
    with pytest.raises(ConfigError, match="needs an HTTP endpoint for role 'agent'"):
        check_endpoints(cfg, ROLES)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://10.0.0.5:8000/v1")
    pinned = task_config(cfg, 1, ROLES)
    monkeypatch.delenv("OPENAI_BASE_URL")
    assert pinned.llm.endpoint("simulator").base_url == "http://10.0.0.5:8000/v1"
    assert cfg.llm.roles == {}  # the run's own config is untouched


def test_driver_rejects_unknown_executor_and_stray_address(tmp_path: Path) -> None:
    console = Console(file=io.StringIO())
    cfg = load_config("tiny")
    with pytest.raises(ConfigError, match="unknown executor 'dask'"):
        run_command(cfg, None, "native", tmp_path, off_policy=None, console=console, executor="dask")
    with pytest.raises(ConfigError, match="--ray-address needs --executor ray"):
        run_command(cfg, None, "native", tmp_path, off_policy=None, console=console, ray_address="auto")


def test_importing_amemgym_never_imports_ray() -> None:
    code = ("import sys, amemgym, amemgym.families.statetrack.driver, amemgym.engine.ray, "
            "amemgym.cli; "
            "assert 'ray' not in sys.modules, 'ray imported'")
    proc = subprocess.run([sys.executable, "-c", code], env={"PYTHONPATH": str(SRC)}, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("raw", [b'agent: {model: "caf\xe9"}\n', b"\xff\xfeagent"])
def test_a_models_file_that_is_not_utf8_is_one_line(tmp_path: Path, raw: bytes) -> None:
    path = tmp_path / "models.yaml"
    path.write_bytes(raw)
    with pytest.raises(ConfigError, match="not UTF-8 text"):
        load_models_file(path)
