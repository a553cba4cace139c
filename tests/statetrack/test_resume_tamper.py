"""A checkpoint edited by hand must never steer a resumed run into other numbers with exit 0.

Each test cuts a finished run back to a moment a kill could leave (the checkpoint journal, the session records
and the files of the unplayed period as they were then), damages the checkpoint journal the way a hand edit
would, and resumes. The resumed run must either end with the files and numbers of a run never touched, saying
in one line that it dropped the bad checkpoint, or refuse in one line naming the fix.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from amemgym.cli import app
from amemgym.engine.journal import apply
from amemgym.testing.fake_endpoint import FakeEndpoint
from conftest import finished_run

FIXTURE = Path(__file__).parents[1] / "fixtures" / "original_shape.json"
USER = "users/u-0001"
#: Every number metrics.json reports over the run's users (usage and timings aside).
NUMBERS = ("overall", "random", "upper_bound", "memory_score", "memory_score_original", "failure_rates")


@pytest.fixture(autouse=True)
def _env(module_endpoint: FakeEndpoint, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", module_endpoint.base_url)
    monkeypatch.setenv("AMEMGYM_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def clean(module_endpoint: FakeEndpoint, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return finished_run(module_endpoint, tmp_path_factory.mktemp("clean"))


def _journal_lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines(keepends=True)


def _position(lines: list[str]) -> tuple[int, int]:
    value: Any = None
    for raw in lines:
        line = json.loads(raw)
        value = line["value"] if "value" in line else apply(value, line["changes"])
    return value["period"], value["session"]


def cut_back(clean: Path, tmp_path: Path, at: tuple[int, int]) -> Path:
    """A copy of ``clean`` as a kill right after the checkpoint at (period, session) ``at`` would leave it."""
    run = tmp_path / "run"
    shutil.copytree(clean, run)
    user = run / USER
    state = user / "state.jsonl"
    lines = _journal_lines(state)
    keep = next(n for n in range(1, len(lines) + 1) if _position(lines[:n]) == at)
    state.write_text("".join(lines[:keep]), encoding="utf-8")
    records = [r for r in _journal_lines(user / "sessions.jsonl") if
               (json.loads(r)["period"], json.loads(r)["session"]) < at]
    (user / "sessions.jsonl").write_text("".join(records), encoding="utf-8")
    for p in range(at[0], 3):  # the periods not finished at that moment
        for name in (f"eval/period_{p:02d}.json", f"snapshots/period_{p:02d}.json"):
            (user / name).unlink(missing_ok=True)
    (user / "trace.jsonl").unlink(missing_ok=True)
    for name in ("metrics.json", "report.html", "failures.json"):
        (run / name).unlink(missing_ok=True)
    return run


def append_line(run: Path, changes: list[list[Any]]) -> None:
    with open(run / USER / "state.jsonl", "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"changes": changes}) + "\n")


def resume(run: Path) -> Any:
    result = CliRunner().invoke(app, ["run", "--env", str(FIXTURE), "--out", str(run)])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    return result


def numbers(run: Path) -> dict[str, Any]:
    overall = json.loads((run / "metrics.json").read_text(encoding="utf-8"))["overall"]
    return {k: overall[k] for k in NUMBERS}


def snapshot(run: Path, period: int) -> Any:
    return json.loads((run / USER / f"snapshots/period_{period:02d}.json").read_text(encoding="utf-8"))


def assert_like_clean(run: Path, clean: Path, result: Any, caplog: pytest.LogCaptureFixture) -> None:
    assert result.exit_code == 0, result.output
    assert numbers(run) == numbers(clean)
    for p in range(3):
        assert snapshot(run, p) == snapshot(clean, p), p
    notes = [r.getMessage() for r in caplog.records if "state.jsonl" in r.getMessage() and "dropped" in r.getMessage()]
    assert len(notes) == 1 and "\n" not in notes[0], notes
    # The journal was rewritten without the dropped saves: a second resume has nothing to drop.
    caplog.clear()
    again = resume(run)
    assert again.exit_code == 0 and numbers(run) == numbers(clean)
    assert not [r for r in caplog.records if "dropped" in r.getMessage()]


def test_a_cut_back_run_resumes_to_the_clean_numbers(clean: Path, tmp_path: Path,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    # The harness itself: a run cut back untouched resumes to the same files and numbers, with no note.
    run = cut_back(clean, tmp_path, (2, 1))
    result = resume(run)
    assert result.exit_code == 0, result.output
    assert numbers(run) == numbers(clean)
    assert snapshot(run, 2) == snapshot(clean, 2)
    assert not [r for r in caplog.records if "dropped" in r.getMessage()]


def test_a_forged_memory_after_a_period_end_is_dropped(clean: Path, tmp_path: Path,
                                                       caplog: pytest.LogCaptureFixture) -> None:
    run = cut_back(clean, tmp_path, (2, 0))
    append_line(run, [["set", ["snapshot", "history", 0, "content"], "I have always lived on the moon."]])
    assert_like_clean(run, clean, resume(run), caplog)


def test_a_forged_memory_inside_a_period_is_dropped(clean: Path, tmp_path: Path,
                                                    caplog: pytest.LogCaptureFixture) -> None:
    run = cut_back(clean, tmp_path, (2, 1))
    append_line(run, [["set", ["snapshot", "history", 0, "content"], "I have always lived on the moon."]])
    assert_like_clean(run, clean, resume(run), caplog)


def test_a_rewound_position_is_dropped(clean: Path, tmp_path: Path,
                                       caplog: pytest.LogCaptureFixture) -> None:
    # The checkpoint now says session (2, 0) is still to play, while the memory already holds it: replaying
    # it would put the session into the memory twice.
    run = cut_back(clean, tmp_path, (2, 1))
    append_line(run, [["set", ["session"], 0]])
    assert_like_clean(run, clean, resume(run), caplog)


def test_a_position_past_the_records_is_dropped(clean: Path, tmp_path: Path,
                                                caplog: pytest.LogCaptureFixture) -> None:
    run = cut_back(clean, tmp_path, (2, 1))
    append_line(run, [["set", ["session"], 2]])
    assert_like_clean(run, clean, resume(run), caplog)


def test_a_checkpoint_forged_in_its_first_line_is_refused_in_one_line(clean: Path, tmp_path: Path) -> None:
    # Every checkpoint of the journal carries the forgery: nothing can be dropped to repair it.
    run = cut_back(clean, tmp_path, (2, 1))
    state = run / USER / "state.jsonl"
    lines = _journal_lines(state)
    first = json.loads(lines[0])
    first["value"]["snapshot"]["history"][0]["content"] = "I have always lived on the moon."
    state.write_text(json.dumps(first) + "\n" + "".join(lines[1:]), encoding="utf-8")
    result = resume(run)
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 2, result.output
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    assert "state.jsonl" in lines[0] and "delete" in lines[0], lines[0]
    assert not (run / "metrics.json").exists() or numbers(run) == numbers(clean)


def test_a_deleted_checkpoint_beside_recorded_sessions_is_refused(clean: Path, tmp_path: Path) -> None:
    # Without its checkpoint the user would be played again from its first session while its earlier periods
    # keep the evaluations of the first conversation.
    run = cut_back(clean, tmp_path, (2, 1))
    (run / USER / "state.jsonl").unlink()
    result = resume(run)
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 2, result.output
    assert len(lines) == 1 and "sessions.jsonl" in lines[0] and "delete" in lines[0], result.output


@pytest.mark.parametrize("field", ["score", "probe_correct"])
def test_a_hand_edited_evaluation_score_is_refused_naming_the_field(clean: Path, tmp_path: Path, field: str) -> None:
    # A score must be what the recorded reply earns against the environment, or the numbers are not the run's.
    run = cut_back(clean, tmp_path, (3, 0))
    path = run / USER / "eval/period_01.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    q = data["questions"][0]
    if field == "score":
        q["score"] = 1.0 - q["score"]
    else:
        name = next(iter(q["probe_correct"]))
        q["probe_correct"][name] = not q["probe_correct"][name]
    path.write_text(json.dumps(data), encoding="utf-8")
    result = resume(run)
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 2, result.output
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    assert "period_01.json" in lines[0] and f"questions[0].{field}" in lines[0], lines[0]


@pytest.mark.parametrize("field", ["score_original_rule", "ub_score", "ub_score_original_rule"])
def test_a_hand_edited_rule_or_upper_bound_score_is_refused(clean: Path, tmp_path: Path, field: str) -> None:
    # The original rule's score and the upper bound's feed the headline numbers as much as the strict score.
    run = cut_back(clean, tmp_path, (3, 0))
    path = run / USER / "eval/period_01.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    q = data["questions"][0]
    q[field] = 1.0 - q[field]
    path.write_text(json.dumps(data), encoding="utf-8")
    result = resume(run)
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 2, result.output
    assert len(lines) == 1 and f"questions[0].{field}" in lines[0], lines[0]


def test_a_hand_edited_upper_bound_file_is_refused(clean: Path, tmp_path: Path) -> None:
    run = cut_back(clean, tmp_path, (3, 0))
    path = run / USER / "upper_bound.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    key = next(iter(data["answers"]))
    data["answers"][key]["score"] = 1.0 - data["answers"][key]["score"]
    path.write_text(json.dumps(data), encoding="utf-8")
    result = resume(run)
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 2, result.output
    assert len(lines) == 1 and "upper_bound.json" in lines[0] and "score" in lines[0], lines[0]


def test_a_forged_memory_holding_a_mask_is_dropped_too(clean: Path, tmp_path: Path,
                                                       caplog: pytest.LogCaptureFixture) -> None:
    # A mask in the checkpoint is no pass: the digest is of the snapshot as written, masks included.
    run = cut_back(clean, tmp_path, (2, 1))
    append_line(run, [["set", ["snapshot", "history", 0, "content"], "my api token is [REDACTED], I live on the moon"]])
    assert_like_clean(run, clean, resume(run), caplog)


def _edit_question(run: Path, edit: Any) -> Path:
    path = run / USER / "eval/period_01.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    edit(data["questions"])
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _drop_original_choice(qs: list[dict[str, Any]]) -> None:
    del qs[0]["original_choice"]
    qs[0]["score_original_rule"] = 1.0 - qs[0]["score_original_rule"]


def _null_probe_reply(qs: list[dict[str, Any]]) -> None:
    qs[0]["probe_reply"] = None
    name = next(iter(qs[0]["probe_correct"]))
    qs[0]["probe_correct"][name] = not qs[0]["probe_correct"][name]


@pytest.mark.parametrize(("edit", "field"), [
    (lambda qs: qs[0].update(n_choices=2), "n_choices"),
    (lambda qs: qs.pop(0), "questions"),
    (lambda qs: qs.append(dict(qs[0])), "questions"),
    (lambda qs: qs[0].update(status="unparseable" if qs[0]["status"] == "ok" else "ok"), "status"),
    (_drop_original_choice, "original_choice"),
    (lambda qs: [q.update(ub_score=None) for q in qs], "ub_score"),
    (_null_probe_reply, "probe_correct"),
])
def test_other_hand_edits_of_an_evaluation_are_refused(clean: Path, tmp_path: Path, edit: Any, field: str) -> None:
    run = cut_back(clean, tmp_path, (3, 0))
    _edit_question(run, edit)
    result = resume(run)
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 2, result.output
    assert len(lines) == 1 and "period_01.json" in lines[0] and field in lines[0], lines[0]


def test_a_state_value_shaped_like_a_key_is_checked_as_written(tmp_path: Path) -> None:
    # Such a value is masked in every run file; the readers' checks compare it masked, so nothing is refused.
    shaped = "sk-proj-A1b2C3d4E5f6G7h8NNNNZZZZqwertyuiop"
    env = tmp_path / "env.json"
    env.write_text(FIXTURE.read_text(encoding="utf-8").replace("half_marathon", shaped), encoding="utf-8")
    for _ in range(2):  # the run, then a re-run that reads every file back
        result = CliRunner().invoke(app, ["run", "--env", str(env), "--out", str(tmp_path / "run")])
        assert result.exit_code == 0, result.output
    assert shaped not in "".join(p.read_text(encoding="utf-8") for p in (tmp_path / "run").rglob("*.json*"))
