"""Bad input gives one precise line: environment files, configs, prompt templates, and the CLI's error path."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from amemgym.cli import app
from amemgym.config import load_config
from amemgym.errors import ConfigError, DataError, PromptError
from amemgym.families.statetrack.data import load_environment, save_environment
from amemgym.families.statetrack.data.io import dump_environment
from amemgym.prompts import render, render_text


@pytest.fixture
def raw(original_env_path: Path) -> list[dict[str, Any]]:
    return json.loads(original_env_path.read_text(encoding="utf-8"))


def write(tmp_path: Path, data: Any, name: str = "original_shape.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


# ---- round trips --------------------------------------------------------------------------------------
def test_original_shape_loads_and_dumps_unchanged(original_env_path: Path, raw: list[dict[str, Any]]) -> None:
    env = load_environment(original_env_path)
    assert json.loads(dump_environment(env)) == raw


def test_save_then_load_round_trips_as_a_plain_list(original_env_path: Path, tmp_path: Path) -> None:
    env = load_environment(original_env_path)
    out = tmp_path / "saved.json"
    save_environment(env, out)
    assert load_environment(out) == env
    data = json.loads(out.read_text(encoding="utf-8"))
    assert isinstance(data, list) and {"id", "periods", "qas", "state_schema"} <= data[0].keys()


# ---- one precise message per kind of invalid file ----------------------------------------------------
def _set(path: list[Any], value: Any) -> Callable[[list[dict[str, Any]]], None]:
    def edit(data: list[dict[str, Any]]) -> None:
        node: Any = data
        for part in path[:-1]:
            node = node[part]
        node[path[-1]] = value

    return edit


def _drop(path: list[Any]) -> Callable[[list[dict[str, Any]]], None]:
    def edit(data: list[dict[str, Any]]) -> None:
        node: Any = data
        for part in path[:-1]:
            node = node[part]
        del node[path[-1]]

    return edit


def _second_user(change: Callable[[dict[str, Any]], None]) -> Callable[[list[dict[str, Any]]], None]:
    def edit(data: list[dict[str, Any]]) -> None:
        other = copy.deepcopy(data[0])
        other["id"] = "second"
        change(other)
        data.append(other)

    return edit


def _pad_choice(data: list[dict[str, Any]]) -> None:
    data[0]["qas"][1]["answer_choices"][3]["state"].append("hot_plate_only")


def _both_match_p0(data: list[dict[str, Any]]) -> None:
    # Choice 3 becomes a second option for period 0's state (and so a duplicate combination).
    data[0]["qas"][0]["answer_choices"][3]["state"] = ["fixed_daytime", "casual_5k"]


def _none_match_p1(data: list[dict[str, Any]]) -> None:
    data[0]["qas"][0]["answer_choices"][2]["state"] = ["part_time_mornings", "half_marathon"]


INVALID = {
    "wrong type": (_set([0, "user_profile", "age"], "forty"),
                   "original_shape.json: [0].user_profile.age: input should be a valid integer"),
    "missing field": (_drop([0, "qas", 0, "query"]),
                      "original_shape.json: [0].qas[0].query: required field is missing"),
    "value not in schema": (
        _set([0, "periods", 0, "sessions", 0, "exposed_states"], {"running_goal": "marathon_x"}),
        "original_shape.json: [0].periods[0].sessions[0].exposed_states.running_goal: value 'marathon_x' is not "
        "in state_schema.running_goal"),
    "choice state length": (_pad_choice,
                            "original_shape.json: [0].qas[1].answer_choices[3].state: expected 2 values, got 3"),
    "two matching choices": (_both_match_p0,
                             "original_shape.json: [0].qas[0].answer_choices: two choices share a value combination"),
    "no matching choice": (_none_match_p1,
                           "original_shape.json: [0].qas[0].answer_choices: 0 choices match the state of period 1 "
                           "['rotating_nights', 'casual_5k'], expected 1"),
    "period counts differ": (_second_user(lambda u: u["periods"].pop()),
                             "original_shape.json: [1].periods: 2 periods, but user [0] has 3"),
    "bad date": (_set([0, "start_time"], "2020-13-45"),
                 "original_shape.json: [0].start_time: not a date or date-time"),
    "duplicate ids": (_second_user(lambda u: u.update(id="u-0001")),
                      "original_shape.json: [1].id: duplicate user id"),
}


@pytest.mark.parametrize("kind", sorted(INVALID))
def test_invalid_file_gives_one_precise_line(kind: str, raw: list[dict[str, Any]], tmp_path: Path) -> None:
    edit, expected = INVALID[kind]
    edit(raw)
    with pytest.raises(DataError) as info:
        load_environment(write(tmp_path, raw))
    message = str(info.value)
    assert message.startswith(expected), message
    assert "\n" not in message


def test_choice_state_length_message_is_exact(raw: list[dict[str, Any]], tmp_path: Path) -> None:
    _pad_choice(raw)
    with pytest.raises(DataError) as info:
        load_environment(write(tmp_path, raw))
    assert str(info.value) == "original_shape.json: [0].qas[1].answer_choices[3].state: expected 2 values, got 3"


def test_two_matching_choices_are_reported_per_period(raw: list[dict[str, Any]], tmp_path: Path) -> None:
    _both_match_p0(raw)
    with pytest.raises(DataError, match="and 1 more problem"):
        load_environment(write(tmp_path, raw))


def test_not_json_and_missing_file(tmp_path: Path) -> None:
    bad = tmp_path / "broken.json"
    bad.write_text('[{"id": "a",', encoding="utf-8")
    with pytest.raises(DataError, match=r"^broken\.json: not valid JSON at line 1 column 13"):
        load_environment(bad)
    with pytest.raises(DataError, match="no such environment file"):
        load_environment(tmp_path / "absent.json")


def test_wrong_top_level_type(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"^x\.json: expected a JSON list of users, got str$"):
        load_environment(write(tmp_path, "users", "x.json"))


# ---- configs -------------------------------------------------------------------------------------------
def _cfg(tmp_path: Path, text: str) -> str:
    path = tmp_path / "cfg.yaml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_config_unknown_field(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^cfg\.yaml: run\.user_concurency: unknown field$"):
        load_config(_cfg(tmp_path, "run:\n  user_concurency: 3\n"))


@pytest.mark.parametrize("setting", ["llm.default.api_key", "llm.roles.agent.api_key", "llm.default.token"])
def test_a_key_given_as_a_setting_gets_advice_and_is_never_echoed(setting: str) -> None:
    from amemgym.redact import redact

    with pytest.raises(ConfigError) as err:
        load_config("tiny", [f"{setting}=PLAINkeyVALUE123456"])
    text = str(err.value)
    assert "PLAINkeyVALUE123456" not in text and f"there is no {setting.rsplit('.', 1)[1]} setting" in text
    assert "api_key_env" in text and redact(text) == text  # the error line's own redaction leaves it whole


@pytest.mark.parametrize("setting", ["llm.default.api_key_env", "llm.roles.judge.api_key_env",
                                     "llm.default.api_key_file"])
@pytest.mark.parametrize("key", ["sk-PLANTED0123456789abcdef", "PLANTEDkey0123456789abcdef", "0123456789abcdef0123"])
def test_a_key_pasted_where_a_name_goes_is_refused_and_never_echoed(setting: str, key: str, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    # Otherwise it is a setting like any other, and the run's manifest records it as given.
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as err:
        load_config("tiny", [f"{setting}={key}"])
    assert key not in str(err.value) and setting.rsplit(".", 1)[1] in str(err.value)


@pytest.mark.parametrize("setting", ["api_key_env=OPENAI_API_KEY_2", "api_key_env=my_key", "api_key_env=VllmKey",
                                     "api_key_file=key.txt", "api_key_file=~/keys/openai", "api_key_file=openai_key"])
def test_ordinary_key_names_are_kept(setting: str) -> None:
    name, value = setting.split("=")
    assert getattr(load_config("tiny", [f"llm.default.{setting}"]).llm.default, name) == value


def test_an_existing_file_with_a_key_like_name_is_a_key_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "K3yFileNamed0123456789").write_text("secret-in-file\n")
    cfg = load_config("tiny", ["llm.default.api_key_file=K3yFileNamed0123456789"])
    assert cfg.llm.default.api_key_file == "K3yFileNamed0123456789"


def test_config_bad_type(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^cfg\.yaml: llm\.default\.max_concurrency: Input should be a valid "
                                          r"integer"):
        load_config(_cfg(tmp_path, "llm:\n  default:\n    max_concurrency: lots\n"))


def test_config_bad_set_flags() -> None:
    with pytest.raises(ConfigError, match=r"^--set 'runseed': expected KEY\.PATH=VALUE$"):
        load_config("tiny", ["runseed"])
    with pytest.raises(ConfigError, match=r"run\.sed: unknown field"):
        load_config("tiny", ["run.sed=3"])


def test_config_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"nope\.yaml: neither a preset \(tiny, .*\) nor an existing file"):
        load_config(str(tmp_path / "nope.yaml"))


def test_config_not_yaml_mapping(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^cfg\.yaml: expected a mapping at the top level, got list$"):
        load_config(_cfg(tmp_path, "- a\n- b\n"))


# ---- strict prompt rendering ---------------------------------------------------------------------------
def test_prompt_missing_variable() -> None:
    with pytest.raises(PromptError, match=r"prompt t: missing variable\(s\) b"):
        render_text("${a} and ${b}", "t", a=1)


def test_prompt_unused_variable() -> None:
    with pytest.raises(PromptError, match=r"prompt t: unused variable\(s\) c"):
        render_text("${a}", "t", a=1, c=2)


def test_prompt_dollar_escape_and_stray_dollar() -> None:
    assert render_text("costs $$${n}", "t", n=5) == "costs $5\n"
    with pytest.raises(PromptError, match="stray"):
        render_text("costs $5", "t")


def test_packaged_prompt_is_strict() -> None:
    with pytest.raises(PromptError, match="missing"):
        render("probe", variables="- x: one of a, b")
    with pytest.raises(PromptError, match="no prompt template named 'nonexistent'"):
        render("nonexistent")


# ---- the CLI's error path ------------------------------------------------------------------------------
def _one_error_line(result: Any) -> str:
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 2, result.output
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    assert "Traceback" not in result.output
    return str(lines[0])


def test_cli_bad_environment(tmp_path: Path, raw: list[dict[str, Any]]) -> None:
    _pad_choice(raw)
    bad = write(tmp_path, raw, "bad.json")
    result = CliRunner().invoke(app, ["run", "--env", str(bad), "--out", str(tmp_path / "X")])
    line = _one_error_line(result)
    assert "bad.json: [0].qas[1].answer_choices[3].state: expected 2 values, got 3" in line
    assert not (tmp_path / "X").exists()


def test_cli_bad_config(tmp_path: Path, original_env_path: Path) -> None:
    cfg = _cfg(tmp_path, "run:\n  user_concurency: 3\n")
    result = CliRunner().invoke(app, ["run", "--env", str(original_env_path), "--out", str(tmp_path / "X"),
                                      "--config", cfg])
    assert "cfg.yaml: run.user_concurency: unknown field" in _one_error_line(result)


def test_set_values_read_as_yaml_reads_them_with_or_without_pyyaml() -> None:
    # A plain name or URL skips PyYAML (a run would import it only for its --set values); every string the
    # shortcut takes must be read exactly as YAML reads it, and everything else still goes through YAML.
    import itertools
    import math
    import random

    import yaml

    from amemgym.config import set_value, settings_yaml

    def yaml_reads(raw: str) -> object:
        try:
            return settings_yaml(raw)  # PyYAML's safe loading, dates kept as strings
        except yaml.YAMLError:
            return raw

    rng = random.Random(7)
    alphabet = "aAzZ09_./:-~#@ eEnNoOtTyY+"
    samples = ["".join(p) for n in (1, 2, 3) for p in itertools.product("aN0.:-~ y", repeat=n)]
    samples += ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 24))) for _ in range(20_000)]
    samples += ["http://127.0.0.1:8000/v1", "fake-model", "gpt-4o-mini", "Yes", "NULL", "off", "a:", "a: b",
                "true", "On", "x:1", "no_cache", "2020-10-01", "1e3", "0x1F", "1:20", "a #b", "a#b"]
    for raw in samples:
        got, want = set_value(raw), yaml_reads(raw)
        same = (isinstance(got, float) and isinstance(want, float) and math.isnan(got) and math.isnan(want)) \
            or (type(got) is type(want) and got == want)
        assert same, (raw, got, want)
    assert set_value("http://127.0.0.1:8000/v1") == "http://127.0.0.1:8000/v1"
    assert set_value("4") == 4 and set_value("no") is False and set_value("a: b") == {"a": "b"}
