"""Flags and settings that used to end in a traceback, a hang or a silent default (found by probing the CLI)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from amemgym.cli import app
from amemgym.config import load_config, set_value
from amemgym.errors import ConfigError


def _cli(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(app, list(args))
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    return res.exit_code, res.output


@pytest.mark.parametrize("raw", ["2024-02-30", "2020-13-45", "2021-01-01", "2021-01-01 10:00:00"])
def test_a_date_like_set_value_stays_a_string(raw: str) -> None:
    # YAML would build a date (or fail inside PyYAML on an impossible one); every date setting is a string.
    assert set_value(raw) == raw
    assert load_config("tiny", [f"llm.default.model={raw}"]).llm.default.model == raw


def test_start_date_must_be_a_calendar_date(tmp_path: Path) -> None:
    assert load_config("tiny", ["env.start_date=2021-01-01"]).env.start_date == "2021-01-01"
    for bad in ("yesterday", "2020/01/01", "2024-02-30", "2021-1-5"):
        with pytest.raises(ConfigError, match="env.start_date: expected a calendar date as YYYY-MM-DD"):
            load_config("tiny", [f"env.start_date={bad}"])
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text("env:\n  start_date: 2021-03-04\n")  # unquoted: YAML's date type, read as the string
    assert load_config(str(cfg)).env.start_date == "2021-03-04"


@pytest.mark.parametrize("users", ["0", "1000001", "100000000000000000000"])
def test_generate_refuses_a_user_count_out_of_range(users: str, tmp_path: Path) -> None:
    code, text = _cli("generate", "--config", "tiny", "--users", users, "--out", str(tmp_path / "env"))
    assert code == 2 and "--users" in text and not (tmp_path / "env").exists()


@pytest.mark.parametrize("flags", [["--seed", "-1"], ["--bootstrap", "10000000000"], ["--bootstrap", "0"]])
def test_compare_refuses_bad_resampling_numbers_before_reading_runs(flags: list[str], tmp_path: Path) -> None:
    code, text = _cli("compare", str(tmp_path / "a"), str(tmp_path / "b"), *flags)
    assert code == 2 and flags[0] in text


def test_budget_validate_refuses_a_seed_count_it_cannot_build(tmp_path: Path) -> None:
    code, text = _cli("generate", "--family", "budget", "--tier", "lite", "--domain", "films", "--seed", "0",
                      "--out", str(tmp_path / "env"))
    assert code == 0, text
    code, text = _cli("validate", "--env", str(tmp_path / "env" / "data.json"), "--seeds", "99999999999")
    assert code == 2 and "--seeds must be from 0 to 10,000" in text


def test_a_statetrack_user_without_questions_is_refused(original_env_path: Path, tmp_path: Path) -> None:
    data = json.loads(original_env_path.read_text(encoding="utf-8"))
    data[0]["qas"] = []
    env = tmp_path / "data.json"
    env.write_text(json.dumps(data), encoding="utf-8")
    code, text = _cli("validate", "--env", str(env))
    assert code == 2 and "qas: list should have at least 1 item" in text


@pytest.mark.parametrize("body", [
    "def make(llm, ctx):\n    sys.exit(3)\n",
    "def __getattr__(name):\n    sys.exit(4)\n",
])
def test_a_plugin_that_calls_sys_exit_is_one_error_line(body: str, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "exiting_plugin.py").write_text("import sys\n\n" + textwrap.dedent(body), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    code, text = _cli("check-agent", "exiting_plugin:make")
    # Before: exit 3 or 4 and no output at all (check-agent's verdict on a failed build is exit 1).
    assert code in (1, 2) and "called sys.exit(" in " ".join(text.split()) and "exiting_plugin" in text


@pytest.mark.parametrize("domains", ["", ",,,", " , "])
def test_generate_refuses_a_domain_list_that_names_none(domains: str, tmp_path: Path) -> None:
    # Before: the default domains, as if the flag had not been given.
    code, text = _cli("generate", "--config", "tiny", "--domains", domains, "--out", str(tmp_path / "env"))
    assert code == 2 and "--domains names no domain" in text


def test_a_write_onto_a_directory_names_the_target_not_the_temp_file(tmp_path: Path) -> None:
    (tmp_path / "env" / "data.json").mkdir(parents=True)
    code, text = _cli("generate", "--config", "tiny", "--out", str(tmp_path / "env"))
    assert code == 1 and f"({tmp_path / 'env' / 'data.json'})" in text and ".tmp" not in text


def test_reader_outputs_never_overwrite_a_runs_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from amemgym.testing.fake_endpoint import FakeEndpoint

    monkeypatch.setenv("AMEMGYM_CACHE_DIR", str(tmp_path / "cache"))
    run = tmp_path / "run"
    with FakeEndpoint() as ep:
        monkeypatch.setenv("OPENAI_BASE_URL", ep.base_url)
        code, text = _cli("run", "--config", "tiny", "--limit", "1", "--out", str(run))
    assert code == 0, text
    files = {p: p.read_bytes() for p in run.rglob("*") if p.is_file()}
    session = next(p for p in files if p.name == "sessions.jsonl")
    for args in (["export", str(run), "--out", str(run / "metrics.json")],
                 ["export", str(run), "--out", str(session)],
                 ["report", str(run), "--out", str(run / "manifest.json")],
                 ["leaderboard", str(run), "--out-csv", str(run / "usage.json")],
                 ["leaderboard", str(run), "--out-md", str(run / "failures.json")]):
        code, text = _cli(*args)
        assert code == 2 and "a file of the run directory" in text, (args, text)
    assert {p: p.read_bytes() for p in run.rglob("*") if p.is_file()} == files
    # Its own report and a new file beside the records are still fine.
    code, text = _cli("report", str(run), "--out", str(run / "report.html"))
    assert code == 0, text
    code, text = _cli("export", str(run), "--out", str(run / "sft.jsonl"))
    assert code == 0, text


@pytest.mark.parametrize("setting", ["run.seed=yes", "run.serial=1", "llm.default.max_concurrency=true",
                                     "env.num_periods=2.5"])
def test_a_setting_of_the_wrong_kind_is_refused_not_coerced(setting: str) -> None:
    # Before: YAML's yes was read as seed 1, and 1 as serial=True.
    with pytest.raises(ConfigError, match=r"Input should be a valid (integer|boolean)"):
        load_config("tiny", [setting])
    assert load_config("tiny", ["llm.default.temperature=0"]).llm.default.temperature == 0.0  # an int is a float


@pytest.mark.parametrize(("body", "how"), [
    ("def make(llm, ctx):\n    os._exit(0)\n", "exit code 0"),
    ("os._exit(0)\n\ndef make(llm, ctx):\n    pass\n", "exit code 0"),
    ("def make(llm, ctx):\n    os.kill(os.getpid(), signal.SIGKILL)\n", "killed by signal 9"),
])
def test_a_plugin_that_ends_its_process_fails_the_check(body: str, how: str, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    # Before: check-agent ended with the plug-in's own exit code (0 here) and printed nothing, read as a pass.
    (tmp_path / "ending_plugin.py").write_text("import os\nimport signal\n\n" + body, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    code, text = _cli("check-agent", "ending_plugin:make")
    assert code == 1 and f"its code ended the checking process ({how}) before the checks finished" in " ".join(
        text.split())


def test_check_agent_still_reports_verdicts_and_input_errors_from_its_child() -> None:
    code, text = _cli("check-agent", "awi")
    assert code == 0 and "all checks passed" in text
    code, text = _cli("check-agent", "no-such-agent")
    assert code == 2 and "unknown agent 'no-such-agent'" in text


def test_brackets_in_paths_and_names_are_printed_as_they_are(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # rich markup used to parse every printed line: `--out "runs/x[/y]"` ran the whole run and then ended in a
    # MarkupError traceback in the summary, and `[bold]` in a path vanished from the output.
    from amemgym.testing.fake_endpoint import FakeEndpoint

    with FakeEndpoint() as ep:
        monkeypatch.setenv("OPENAI_BASE_URL", ep.base_url)
        for name in ("x[/y]", "z[bold]"):
            out = tmp_path / name
            res = CliRunner().invoke(app, ["run", "--out", str(out), "--limit", "1"])
            assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
            assert res.exit_code == 0, res.output
            assert str(out) in "".join(res.output.split())  # the results line, however the console wrapped it
            board = CliRunner().invoke(app, ["leaderboard", str(out)])
            assert board.exit_code == 0 and out.name in board.output, board.output
        res = CliRunner().invoke(app, ["compare", str(tmp_path / "x[/y]"), str(tmp_path / "z[bold]")])
        assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
        assert "z[bold]" in res.output
