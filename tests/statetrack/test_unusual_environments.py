"""Valid but unusual environment files that gave a wrong number with exit 0 or a traceback (found by probing
with hand-written files; the files are under tests/fixtures/unusual)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from amemgym.cli import app
from amemgym.families.statetrack.asking import parse_probe
from amemgym.families.statetrack.data.io import load_environment
from amemgym.families.statetrack.generate.procedural import tiny_environment_path
from amemgym.families.statetrack.questioning import combo_key
from amemgym.families.statetrack.results import changed_at
from amemgym.testing.fake_endpoint import FakeEndpoint

UNUSUAL = Path(__file__).resolve().parent.parent / "fixtures" / "unusual"



def _cli(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(app, list(args))
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    return res.exit_code, res.output


def test_a_lone_surrogate_escape_in_the_file_is_refused_in_one_line(tmp_path: Path) -> None:
    text = tiny_environment_path().read_text(encoding="utf-8")
    for n, planted in enumerate((text.replace('"query": "', '"query": "\\ud800', 1),
                                 text.replace('"id": "', '"id": "u\\udfff', 1))):
        env = tmp_path / f"env{n}.json"
        env.write_text(planted, encoding="utf-8")
        for args in (["validate", "--env", str(env), "--no-judge"],
                     ["run", "--env", str(env), "--out", str(tmp_path / f"r{n}"), "--dry-run"]):
            code, out = _cli(*args)
            assert code == 2 and "lone UTF-16 surrogate" in out and "Traceback" not in out, out


def test_values_holding_a_bar_get_one_upper_bound_entry_per_combination(endpoint: FakeEndpoint,
                                                                         tmp_path: Path) -> None:
    # ("x|y", "w") and ("x", "y|w") used to share the key 0|x|y|w: one combination was never asked and its
    # period was scored with the other's answer.
    assert combo_key(0, ("x|y", "w")) != combo_key(0, ("x", "y|w"))
    assert combo_key(3, ("plain", "values")) == "3|plain|values"  # earlier runs' keys stay valid
    out = tmp_path / "run"
    code, text = _cli("run", "--env", str(UNUSUAL / "pipe_values.json"), "--out", str(out))
    assert code == 0, text
    env = load_environment(UNUSUAL / "pipe_values.json")
    for user in env.users:
        folder = json.loads((out / "manifest.json").read_text())["user_folders"][user.id]
        answers = json.loads((out / "users" / folder / "upper_bound.json").read_text())["answers"]
        needed = {(q, tuple(p.state[v] for v in qa.required_info))
                  for p in user.periods for q, qa in enumerate(user.qas)}
        assert sorted((a["question"], tuple(a["state"])) for a in answers.values()) == sorted(needed)


def test_the_probe_reads_an_exact_value_as_itself_and_a_loose_one_only_when_it_is_unambiguous() -> None:
    user = load_environment(UNUSUAL / "case_values.json").users[0]  # a: High, high, hi gh; b: b-1, b_1, b 1
    qa = user.qas[0]
    assert parse_probe(json.dumps({"a": "High", "b": "b_1"}), user, qa) == {"a": "High", "b": "b_1"}
    assert parse_probe(json.dumps({"a": "high", "b": "b 1"}), user, qa) == {"a": "high", "b": "b 1"}
    # Loose spellings that fit several values are no value, never the last one listed.
    assert parse_probe(json.dumps({"a": "HIGH", "b": "B-1."}), user, qa) == {"a": None, "b": None}
    assert parse_probe(json.dumps({"a": "Hi Gh"}), user, qa)["a"] == "hi gh"  # one value spells hi_gh loosely


def test_off_policy_refuses_a_source_played_on_other_data(endpoint: FakeEndpoint, tmp_path: Path) -> None:
    source = tmp_path / "a"
    code, text = _cli("run", "--env", str(UNUSUAL / "off_A.json"), "--out", str(source))
    assert code == 0, text
    # Same user ids and session counts, other states and openings: every replayed fact would be wrong.
    code, text = _cli("run", "--env", str(UNUSUAL / "off_B.json"), "--off-policy", str(source),
                      "--out", str(tmp_path / "b"))
    assert code == 2 and "played on other data" in " ".join(text.split()), text
    assert not (tmp_path / "b").exists()
    code, text = _cli("run", "--env", str(UNUSUAL / "off_A.json"), "--off-policy", str(source),
                      "--out", str(tmp_path / "c"))
    assert code == 0, text  # its own environment replays


def test_another_limit_on_a_statetrack_run_says_why_it_is_refused(endpoint: FakeEndpoint, tmp_path: Path) -> None:
    out = tmp_path / "run"
    gen = tmp_path / "env"
    code, text = _cli("generate", "--config", "tiny", "--users", "3", "--out", str(gen))
    assert code == 0, text
    code, text = _cli("run", "--env", str(gen / "data.json"), "--limit", "1", "--out", str(out))
    assert code == 0, text
    code, text = _cli("run", "--env", str(gen / "data.json"), "--limit", "2", "--out", str(out))
    assert code == 2 and "another --limit is another run" in " ".join(text.split()), text


def test_an_update_that_keeps_its_value_is_no_change(tmp_path: Path) -> None:
    env = load_environment(UNUSUAL / "noop_update.json")
    user = env.users[0]
    period = next(p for p, per in enumerate(user.periods) if any(u.old == u.new for u in per.updates.values()))
    var = next(v for v, u in user.periods[period].updates.items() if u.old == u.new)
    assert var not in user.periods[period].changes
    assert changed_at(user, period, var) < period  # the latest real change, not the no-op
    code, text = _cli("validate", "--env", str(UNUSUAL / "noop_update.json"), "--no-judge")
    assert f"{var} -> {var}" not in text and f"{user.periods[period].updates[var].old} ->" not in text, text


def _planted(tmp_path: Path, name: str, edit: object) -> Path:
    data = json.loads(tiny_environment_path().read_text(encoding="utf-8"))
    edit(data)  # type: ignore[operator]
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _users(data: dict) -> list[dict]:
    return data if isinstance(data, list) else data["users"]  # type: ignore[return-value]


def test_files_the_scoring_could_not_read_right_are_refused(tmp_path: Path) -> None:
    """Found by probing: schema values "low" and "low " (the probe trims a reply, so the exact value read as the
    other), a variable named twice in required_info (one probe item, where the rates count two), and a session
    dated before the one it follows (the agent is told the time goes backwards)."""

    def spaced(data: dict) -> None:
        user = _users(data)[0]
        var = next(iter(user["state_schema"]))
        user["state_schema"][var].append(user["state_schema"][var][0] + " ")

    def twice(data: dict) -> None:
        qa = _users(data)[0]["qas"][0]
        qa["required_info"] = [*qa["required_info"], qa["required_info"][0]]

    def backwards(data: dict) -> None:
        sessions = [s for p in _users(data)[0]["periods"] for s in p["sessions"]]
        sessions[-1]["session_time"] = "1999-01-01 00:00"

    for name, edit, said in (("spaced", spaced, "differ only in leading or trailing spaces"),
                             ("twice", twice, "names a variable more than once"),
                             ("backwards", backwards, "1999-01-01 00:00 is before")):
        env = _planted(tmp_path, name, edit)
        for args in (["validate", "--env", str(env), "--no-judge"],
                     ["run", "--env", str(env), "--out", str(tmp_path / f"r-{name}"), "--dry-run"]):
            code, out = _cli(*args)
            assert code == 2 and said in out and "Traceback" not in out, (name, out)


def test_the_probe_takes_a_value_spelled_exactly_before_trimming_it() -> None:
    from amemgym.families.statetrack.data.model import QA

    user = load_environment(UNUSUAL / "case_values.json").users[0]
    qa = QA.model_validate({**user.qas[0].model_dump(), "required_info": ["a"]})
    spaced = user.model_copy(update={"state_schema": {**user.state_schema, "a": [" padded", "plain"]}})
    assert parse_probe(json.dumps({"a": " padded"}), spaced, qa) == {"a": " padded"}
    assert parse_probe(json.dumps({"a": "plain  "}), spaced, qa) == {"a": "plain"}


def test_a_played_period_with_neither_evaluation_nor_snapshot_says_what_to_do(endpoint: FakeEndpoint,
                                                                              tmp_path: Path) -> None:
    """Found by probing: the resume said "re-run the same command" forever, naming a raw dict and not the file."""
    import shutil

    out = tmp_path / "run"
    code, text = _cli("run", "--config", "tiny", "--out", str(out), "--limit", "1")
    assert code == 0, text
    user = next((out / "users").iterdir())
    (user / "eval" / "period_00.json").unlink()
    shutil.rmtree(user / "snapshots", ignore_errors=True)
    code, text = _cli("run", "--config", "tiny", "--out", str(out), "--limit", "1")
    assert code != 0 and "neither its evaluation nor its snapshot" in text and "delete" in text, text
