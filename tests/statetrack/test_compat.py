"""The original-style entry points map onto amemgym."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from amemgym.errors import ConfigError
from amemgym.families.statetrack.compat.flags import agent_from_original


def test_agent_config_mapping(tmp_path: Path) -> None:
    cfg = {"type": "awe", "name": "awe-mini", "llm_config": {"llm_model": "gpt-4.1-mini", "max_tokens": 2000},
           "agent_config": {"update_bsz": 2, "local_length": 8, "top_k": 10}}
    path = tmp_path / "awe.json"
    path.write_text(json.dumps(cfg))
    agent = agent_from_original(str(path))
    assert (agent.kind, agent.name, agent.endpoint) == ("awe-2-8-10", "awe-mini",
                                                        {"model": "gpt-4.1-mini", "max_tokens": 2000})
    assert agent.max_tokens == 2000
    path.write_text(json.dumps({"type": "hack"}))
    with pytest.raises(ConfigError, match="unsupported agent type"):
        agent_from_original(str(path))


def test_random_entry_point(original_env_path: Path, tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "amemgym.eval.random", "--env_data", str(original_env_path),
                           "--output_dir", str(tmp_path)], capture_output=True, text=True, check=True)
    data = json.loads((tmp_path / "random" / "random_metrics.json").read_text())
    assert data["per_period"] == [0.25, 0.25, 0.25]
    assert "random baseline" in proc.stdout


def test_bad_env_file_is_one_line_exit_2(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "amemgym.eval.overall", "--env_data", str(tmp_path / "no.json"),
                           "--output_dir", str(tmp_path)], capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith("error:") and len(proc.stderr.strip().splitlines()) == 1
