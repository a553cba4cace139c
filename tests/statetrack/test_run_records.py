"""Every file of a run directory has a typed, versioned model; readers refuse what does not fit, in one line.

A run made with the fake endpoint is checked file by file against :mod:`amemgym.records`. Copies of it are
damaged (wrong type, truncated JSON, wrong shape, unknown format version) and then read by ``run``
(resume), ``report``, ``leaderboard`` and ``export``: each must exit 2 with one line naming the file and
the field. A copy rewritten in the unversioned layout of earlier releases must still be read (migrated).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from amemgym.cli import app
from amemgym.engine.journal import fold
from amemgym.records import (
    RUN_FORMAT_VERSION,
    EvaluationRecord,
    FailuresFile,
    Manifest,
    Metrics,
    RunFile,
    SessionRecord,
    Snapshot,
    State,
    UpperBoundRecord,
    UsageFile,
    parse_record,
)
from amemgym.testing.fake_endpoint import FakeEndpoint
from conftest import finished_run

FIXTURE = Path(__file__).parents[1] / "fixtures" / "original_shape.json"
USER = "users/u-0001"


@pytest.fixture(autouse=True)
def _env(module_endpoint: FakeEndpoint, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", module_endpoint.base_url)


@pytest.fixture(scope="module")
def finished(module_endpoint: FakeEndpoint, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return finished_run(module_endpoint, tmp_path_factory.mktemp("records"))


@pytest.fixture
def run(finished: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "run"
    shutil.copytree(finished, copy)
    return copy


MODELS: dict[str, type[RunFile]] = {
    "manifest.json": Manifest, "metrics.json": Metrics, "usage.json": UsageFile, "failures.json": FailuresFile,
    "upper_bound.json": UpperBoundRecord,
}


def model_of(path: Path) -> type[RunFile] | None:
    if path.name in MODELS:
        return MODELS[path.name]
    if path.parent.name == "eval":
        return EvaluationRecord
    if path.parent.name == "snapshots":
        return Snapshot
    return None


def test_every_run_file_is_versioned_and_fits_its_model(finished: Path) -> None:
    checked = set()
    for path in sorted(finished.rglob("*.json*")):
        if path.name == "sessions.jsonl":
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
                raw = json.loads(line)
                assert raw["format_version"] == RUN_FORMAT_VERSION
                parse_record(raw, SessionRecord, f"{path}:{n}")
            checked.add("sessions.jsonl")
            continue
        if path.name == "state.jsonl":  # the checkpoint journal: its folded record
            raw = fold(path)
            assert raw["format_version"] == RUN_FORMAT_VERSION
            parse_record(raw, State, str(path))
            checked.add("State")
            continue
        model = model_of(path)
        if model is None:
            continue
        raw = json.loads(path.read_text(encoding="utf-8"))
        assert raw["format_version"] == RUN_FORMAT_VERSION, path
        parse_record(raw, model, str(path))
        checked.add(model.__name__)
    assert checked == {"sessions.jsonl", "Manifest", "Metrics", "UsageFile", "FailuresFile", "State",
                       "UpperBoundRecord", "EvaluationRecord", "Snapshot"}


def invoke(args: list[str]) -> Any:
    result = CliRunner().invoke(app, args)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    return result


def refused(args: list[str], *needles: str) -> str:
    result = invoke(args)
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 2, result.output
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def edit(path: Path, change: Any) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data), encoding="utf-8")


def commands(run: Path, tmp_path: Path) -> dict[str, list[str]]:
    return {
        "run": ["run", "--env", str(FIXTURE), "--out", str(run)],
        "report": ["report", str(run), "--out", str(tmp_path / "r.html")],
        "leaderboard": ["leaderboard", str(run)],
        "export": ["export", str(run), "--out", str(tmp_path / "x.jsonl"), "--with-evaluation"],
    }


def _bad_score(d: dict[str, Any]) -> None:
    d["questions"][0]["score"] = "high"


@pytest.mark.parametrize("command", ["run", "report", "export"])
def test_a_wrong_typed_evaluation_names_file_and_field(run: Path, tmp_path: Path, command: str) -> None:
    edit(run / USER / "eval/period_01.json", _bad_score)
    refused(commands(run, tmp_path)[command], "period_01.json", "questions[0].score")


@pytest.mark.parametrize("command", ["run", "report", "export"])
def test_a_truncated_evaluation_is_one_line(run: Path, tmp_path: Path, command: str) -> None:
    path = run / USER / "eval/period_00.json"
    path.write_bytes(path.read_bytes()[:100])
    refused(commands(run, tmp_path)[command], "period_00.json", "truncated or not JSON")


def test_a_truncated_checkpoint_stops_resume_in_one_line(run: Path, tmp_path: Path) -> None:
    # No complete line at all: the journal's first line is written by atomic replace, so no kill leaves this.
    path = run / USER / "state.jsonl"
    path.write_bytes(path.read_bytes()[:20])
    refused(commands(run, tmp_path)["run"], "state.jsonl", "truncated")


def test_a_wrong_shaped_checkpoint_names_the_field(run: Path, tmp_path: Path) -> None:
    with (run / USER / "state.jsonl").open("a", encoding="utf-8") as fh:
        fh.write(json.dumps({"changes": [["set", ["period"], -1]]}) + "\n")
    refused(commands(run, tmp_path)["run"], "state.jsonl", "period")


def test_a_broken_line_inside_the_checkpoint_journal_names_the_line(run: Path, tmp_path: Path) -> None:
    with (run / USER / "state.jsonl").open("a", encoding="utf-8") as fh:
        fh.write("{not json\n")
    refused(commands(run, tmp_path)["run"], "state.jsonl line", "broken checkpoint journal")


def test_a_wrong_shaped_upper_bound_names_the_field(run: Path, tmp_path: Path) -> None:
    def drop(d: dict[str, Any]) -> None:
        first = next(iter(d["answers"].values()))
        del first["score"]

    edit(run / USER / "upper_bound.json", drop)
    refused(commands(run, tmp_path)["run"], "upper_bound.json", "score", "required field is missing")


@pytest.mark.parametrize("command", ["report", "leaderboard", "export"])
def test_a_wrong_shaped_manifest_or_metrics_names_the_field(run: Path, tmp_path: Path, command: str) -> None:
    name, needle = ("metrics.json", "overall.memory_score") if command != "export" else ("manifest.json", "users")
    if command == "export":
        edit(run / name, lambda d: d.update(users="u-0001"))
    else:
        edit(run / name, lambda d: d["overall"].pop("memory_score"))
    refused(commands(run, tmp_path)[command], name, needle)


@pytest.mark.parametrize(("field", "value", "needle"), [
    ("complete", "yes", "valid boolean"), ("mean", float("nan"), "finite number")])
def test_metrics_complete_is_a_boolean_and_a_mean_is_a_finite_number(run: Path, tmp_path: Path, field: str,
                                                                     value: Any, needle: str) -> None:
    def change(d: dict[str, Any]) -> None:
        if field == "complete":
            d["complete"] = value
        else:
            d["overall"]["overall"]["mean"] = value

    edit(run / "metrics.json", change)
    refused(commands(run, tmp_path)["report"], "metrics.json", needle,
            "complete" if field == "complete" else "overall.overall.mean")


def test_a_session_record_of_the_wrong_shape_names_line_and_field(run: Path, tmp_path: Path) -> None:
    path = run / USER / "sessions.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    rec = json.loads(lines[1])
    rec["messages"] = [{"role": "user"}]
    lines[1] = json.dumps(rec)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    refused(commands(run, tmp_path)["export"], "sessions.jsonl record 2", "messages[0].content")


@pytest.mark.parametrize("command", ["run", "report", "export"])
def test_another_format_version_is_refused_and_says_so(run: Path, tmp_path: Path, command: str) -> None:
    edit(run / "manifest.json", lambda d: d.update(format_version=RUN_FORMAT_VERSION + 1))
    if command == "report":
        edit(run / "metrics.json", lambda d: d.update(format_version=RUN_FORMAT_VERSION + 1))
    line = refused(commands(run, tmp_path)[command], f"format_version {RUN_FORMAT_VERSION + 1}", "refused")
    assert ".json" in line


def unversion(run: Path) -> None:
    """Rewrite a run as releases before versioning wrote it: no format_version, unwrapped lists and maps."""
    for path in run.rglob("*.json"):
        raw = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(raw, dict) or "format_version" not in raw:
            continue
        raw.pop("format_version")
        if path.name == "failures.json":
            raw = raw["failures"]
        elif path.name == "upper_bound.json":
            raw = raw["answers"]
        elif path.parent.name == "snapshots":
            raw = raw["snapshot"]
        path.write_text(json.dumps(raw), encoding="utf-8")
    for path in run.rglob("state.jsonl"):  # earlier releases kept the whole checkpoint in state.json
        raw = fold(path)
        raw.pop("format_version")
        (path.parent / "state.json").write_text(json.dumps(raw), encoding="utf-8")
        path.unlink()
    for path in run.rglob("sessions.jsonl"):
        recs = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        for r in recs:
            r.pop("format_version")
            r.pop("models", None)
        path.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")


def test_an_unversioned_run_of_an_earlier_release_is_migrated_not_refused(
    run: Path, finished: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    unversion(run)
    cmds = commands(run, tmp_path)
    for name in ("report", "export"):
        result = invoke(cmds[name])
        assert result.exit_code == 0, result.output
    assert any("migrated" in r.getMessage() and "format 1" in r.getMessage() for r in caplog.records)
    ours = [json.loads(line) for line in (tmp_path / "x.jsonl").read_text(encoding="utf-8").splitlines()]
    invoke(["export", str(finished), "--out", str(tmp_path / "ref.jsonl"), "--with-evaluation"])
    ref = [json.loads(line) for line in (tmp_path / "ref.jsonl").read_text(encoding="utf-8").splitlines()]
    assert ours == ref
    # Resuming the finished, unversioned run recomputes the same numbers.
    result = invoke(cmds["run"])
    assert result.exit_code == 0, result.output
    before = json.loads((finished / "metrics.json").read_text(encoding="utf-8"))
    after = json.loads((run / "metrics.json").read_text(encoding="utf-8"))
    assert after["overall"] == before["overall"] and after["format_version"] == RUN_FORMAT_VERSION


async def test_new_run_writes_its_manifest_before_any_other_file(
    original_env_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A new run writes its manifest in a thread while the first calls are out; a slow disk must not let a
    # session, checkpoint, upper bound or evaluation land first (a directory without its manifest is no run).
    import time

    from amemgym.agents import resolve_agent
    from amemgym.config import load_config
    from amemgym.engine.rundir import UnitRunDir
    from amemgym.families.statetrack.data import load_environment
    from amemgym.families.statetrack.runner import Runner
    from amemgym.testing.run_script import RunScript
    from amemgym.testing.scripted_model import scripted_client

    slow = UnitRunDir.write_manifest

    def write_manifest(self: Any, manifest: Any, record: Any) -> Any:
        time.sleep(0.3)
        return slow(self, manifest, record)

    monkeypatch.setattr(UnitRunDir, "write_manifest", write_manifest)
    env = load_environment(original_env_path)
    llm = scripted_client(RunScript(env.users[0]), cache=tmp_path / "cache.sqlite")
    rundir = tmp_path / "run"
    outcome = await Runner(env, resolve_agent("native"), rundir, load_config("tiny"), llm).run(
        user_ids=[env.users[0].id])
    assert not outcome.failures
    manifest_at = (rundir / "manifest.json").stat().st_mtime_ns
    others = [p for p in rundir.rglob("*") if p.is_file() and p.name not in ("manifest.json", ".amemgym.lock")]
    assert any(p.name == "sessions.jsonl" for p in others) and any(p.name == "upper_bound.json" for p in others)
    assert all(p.stat().st_mtime_ns >= manifest_at for p in others), [p.name for p in others]


@pytest.mark.parametrize("command", ["report", "export", "audit-sim"])
def test_a_garbled_session_line_before_others_is_refused_naming_the_line(
        run: Path, tmp_path: Path, command: str) -> None:
    path = run / USER / "sessions.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[1] = "garbage{"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    args = {**commands(run, tmp_path), "audit-sim": ["audit-sim", str(run), "--env", str(FIXTURE)]}[command]
    refused(args, "sessions.jsonl line 2", "damaged")


def test_audit_sim_on_another_environment_is_refused_and_writes_nothing(run: Path) -> None:
    from amemgym.families.statetrack.generate.procedural import tiny_environment_path

    refused(["audit-sim", str(run), "--env", str(tiny_environment_path())], "does not match the run", "sha256")
    assert not (run / "sim_audit.json").exists()


def _cut_sessions(run: Path, keep: int) -> None:
    path = run / USER / "sessions.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(lines[:keep]), encoding="utf-8")


@pytest.mark.parametrize("damage", ["user folder", "sessions cut", "evaluation"])
def test_export_refuses_a_run_missing_records_its_manifest_plans(run: Path, tmp_path: Path, damage: str) -> None:
    if damage == "user folder":
        shutil.rmtree(run / USER)
        needle = "the manifest plans user"
    elif damage == "sessions cut":
        _cut_sessions(run, 1)
        needle = "sessions.jsonl"
    else:
        (run / USER / "eval/period_01.json").unlink()
        needle = "period_01.json: missing"
    refused(commands(run, tmp_path)["export"], needle)
    assert not (tmp_path / "x.jsonl").exists()


@pytest.mark.parametrize("keep", [0, 1])
def test_resume_refuses_a_checkpoint_whose_session_records_are_gone(run: Path, tmp_path: Path, keep: int) -> None:
    _cut_sessions(run, keep)
    refused(commands(run, tmp_path)["run"], "sessions.jsonl", "were played but are not recorded", "delete")


@pytest.mark.parametrize("command", ["report", "export", "run"])
def test_manifest_periods_that_differ_from_the_run_are_refused(run: Path, tmp_path: Path, command: str) -> None:
    edit(run / "manifest.json", lambda d: d.update(periods=10**30))
    refused(commands(run, tmp_path)[command], "manifest.json", "periods is")


def test_export_of_damaged_metrics_says_damaged_not_unfinished(run: Path, tmp_path: Path) -> None:
    path = run / "metrics.json"
    path.write_bytes(path.read_bytes()[:50])
    line = refused(commands(run, tmp_path)["export"], "metrics.json", "truncated or not JSON")
    assert "not finished" not in line


def test_export_of_a_trials_directory_names_one_trial(run: Path, tmp_path: Path) -> None:
    trials = tmp_path / "trials"
    shutil.copytree(run, trials / "trial_1")
    shutil.copytree(run, trials / "trial_2")
    refused(["export", str(trials), "--out", str(tmp_path / "x.jsonl")], "--trials output", "trial_1")


def _question_999(d: dict[str, Any]) -> None:
    d["questions"][0]["question"] = 999


def test_an_out_of_range_question_is_refused_on_resume_naming_the_file(run: Path, tmp_path: Path) -> None:
    edit(run / USER / "eval/period_00.json", _question_999)
    (run / "metrics.json").unlink()
    refused(commands(run, tmp_path)["run"], "period_00.json", "questions[0].question is 999")


@pytest.mark.parametrize("command", ["report", "leaderboard", "compare"])
def test_an_out_of_range_question_in_a_trial_is_refused_or_not_boarded(
        run: Path, tmp_path: Path, command: str) -> None:
    trials = tmp_path / "trials"
    shutil.copytree(run, trials / "trial_1")
    shutil.copytree(run, trials / "trial_2")
    manifest = json.loads((trials / "trial_2" / "manifest.json").read_text())
    manifest["config"]["run"]["seed"] += 1  # a trial of its own (readers refuse two trials of one seed)
    (trials / "trial_2" / "manifest.json").write_text(json.dumps(manifest))
    edit(trials / "trial_2" / USER / "eval/period_00.json", _question_999)
    args = {"report": ["report", str(trials), "--out", str(tmp_path / "r.html")],
            "leaderboard": ["leaderboard", str(trials), str(run)],
            "compare": ["compare", str(trials), str(run)]}[command]
    if command == "leaderboard":
        result = invoke(args)
        assert result.exit_code == 0, result.output
        assert "not boarded" in result.output and "period_00.json" in result.output
    else:
        refused(args, "period_00.json", "questions[0].question is 999")
