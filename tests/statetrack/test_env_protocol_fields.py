"""A user's ``_amemgym`` block: rounds per session in a sane range, and no format newer than this amemgym's.

Each bad value is refused on load in one line naming the file, the user and the field (``validate`` and ``run``
say the same), where before -3, 0, 10**12 and 10**400 rounds and ``format_version: 99`` loaded silently.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from amemgym.cli import app
from amemgym.config import MAX_ROUNDS_PER_SESSION, load_config
from amemgym.errors import ConfigError, DataError
from amemgym.families.statetrack.data.io import load_environment
from amemgym.families.statetrack.data.model import FORMAT_VERSION


@pytest.fixture
def raw(original_env_path: Path) -> list[dict[str, Any]]:
    return json.loads(original_env_path.read_text(encoding="utf-8"))


def with_protocol(tmp_path: Path, raw: list[dict[str, Any]], text: str) -> Path:
    """The environment with ``text`` (raw JSON, so huge numbers stay numbers) as user 0's ``_amemgym``."""
    items = [json.dumps(u) for u in raw]
    items[0] = items[0][:-1] + f', "_amemgym": {text}}}'
    path = tmp_path / "env.json"
    path.write_text("[" + ",\n".join(items) + "]", encoding="utf-8")
    return path


@pytest.mark.parametrize("field", ["num_rounds_update", "num_rounds_init"])
@pytest.mark.parametrize("value", ["-3", "0", "1000000000000", "1" + "0" * 400, "2.5", "true", '"3"'])
def test_rounds_per_session_out_of_range_are_refused_naming_user_and_field(
        field: str, value: str, raw: list[dict[str, Any]], tmp_path: Path) -> None:
    path = with_protocol(tmp_path, raw, f'{{"format_version": 1, "{field}": {value}}}')
    with pytest.raises(DataError) as info:
        load_environment(path)
    message = str(info.value)
    assert message.startswith(f"env.json: [0]._amemgym.{field}: "), message
    assert f"from 1 to {MAX_ROUNDS_PER_SESSION}" in message and "\n" not in message
    assert len(message) < 300  # a 400-digit number is not echoed whole


@pytest.mark.parametrize("value", [1, 2, MAX_ROUNDS_PER_SESSION])
def test_rounds_in_range_load(value: int, raw: list[dict[str, Any]], tmp_path: Path) -> None:
    path = with_protocol(tmp_path, raw, json.dumps({"format_version": 1, "num_rounds_update": value}))
    user = load_environment(path).users[0]
    assert user.amemgym is not None and user.amemgym.num_rounds_update == value


def test_a_newer_format_version_is_refused(raw: list[dict[str, Any]], tmp_path: Path) -> None:
    path = with_protocol(tmp_path, raw, '{"format_version": 99}')
    with pytest.raises(DataError) as info:
        load_environment(path)
    message = str(info.value)
    assert message.startswith("env.json: [0]._amemgym.format_version: "), message
    assert "written by a newer amemgym" in message and f"{FORMAT_VERSION}" in message


@pytest.mark.parametrize("value", ["0", "-1", '"1"'])
def test_a_format_version_that_is_no_version_is_refused(value: str, raw: list[dict[str, Any]],
                                                       tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"^env\.json: \[0\]\._amemgym\.format_version: "):
        load_environment(with_protocol(tmp_path, raw, f'{{"format_version": {value}}}'))


def test_validate_and_run_refuse_in_one_line(raw: list[dict[str, Any]], tmp_path: Path) -> None:
    path = with_protocol(tmp_path, raw, '{"format_version": 1, "num_rounds_update": 1000000000000}')
    for args in (["validate", "--env", str(path)], ["run", "--env", str(path), "--out", str(tmp_path / "X")]):
        res = CliRunner().invoke(app, args)
        lines = [line for line in res.output.splitlines() if line.strip()]
        assert res.exit_code == 2 and len(lines) == 1 and lines[0].startswith("error: "), res.output
        assert "num_rounds_update" in lines[0]
    assert not (tmp_path / "X").exists()


def test_the_config_caps_rounds_the_same_way() -> None:
    assert load_config("tiny", [f"env.num_rounds_update={MAX_ROUNDS_PER_SESSION}"]).env.num_rounds_update == \
        MAX_ROUNDS_PER_SESSION
    with pytest.raises(ConfigError, match="num_rounds_update"):
        load_config("tiny", [f"env.num_rounds_update={MAX_ROUNDS_PER_SESSION + 1}"])


def test_a_number_too_long_to_parse_is_one_line(raw: list[dict[str, Any]], tmp_path: Path) -> None:
    path = with_protocol(tmp_path, raw, '{"num_rounds_update": 1' + "0" * 5000 + "}")
    with pytest.raises(DataError, match=r"^env\.json: \[0\]: holds a number too long to be read$"):
        load_environment(path)
