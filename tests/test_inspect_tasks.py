"""Inspect AI tasks score memory exactly as ``amemgym run`` does (same fake endpoint, same numbers)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

pytest.importorskip("inspect_ai")
pytest.importorskip("openai")  # Inspect's OpenAI-compatible provider talks to the fake endpoint through it

from inspect_ai import eval as inspect_eval  # noqa: E402

from amemgym.cli import app  # noqa: E402
from amemgym.inspect_tasks import _schema, amemgym_memory, score_keys  # noqa: E402
from amemgym.testing.fake_endpoint import FakeEndpoint  # noqa: E402


def test_schemas_inspect_cannot_hold_exactly_are_left_out() -> None:
    simple = {"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"],
              "additionalProperties": False}
    assert _schema(simple) is not None
    assert _schema({"$defs": {"a": {"type": "string"}}, "$ref": "#/$defs/a"}) is None
    assert _schema({"type": "array", "items": {"type": "string"}, "minItems": 2}) is None
    assert _schema(None) is None


def test_inspect_eval_scores_like_amemgym_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with FakeEndpoint() as ep:
        monkeypatch.setenv("OPENAI_BASE_URL", ep.base_url)
        monkeypatch.setenv("FAKE_BASE_URL", ep.base_url)
        monkeypatch.setenv("FAKE_API_KEY", "not-a-real-key")
        monkeypatch.setenv("INSPECT_LOG_DIR", str(tmp_path / "logs"))
        res = CliRunner().invoke(app, ["run", "--agent", "awi", "--out", str(tmp_path / "run")])
        assert res.exit_code == 0, res.output
        logs = inspect_eval(amemgym_memory(agent="awi", out=str(tmp_path / "inspect")),
                            model="openai-api/fake/fake-model", log_dir=str(tmp_path / "logs"), display="none")
    log = logs[0]
    assert log.status == "success", log.error
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    per_user = metrics["per_user"]
    samples = {str(s.id): s for s in log.samples or []}
    assert set(samples) == set(per_user) and len(samples) == 2
    for user, cells in per_user.items():
        got = next(iter(samples[user].scores.values())).value
        assert isinstance(got["overall"], float)
        for key in score_keys():
            xs = [c[key] for c in cells.values() if c[key] is not None]
            want = sum(xs) / len(xs) if xs else None
            assert got[key] == pytest.approx(want), (user, key)
    headline = log.results.scores[0].metrics
    for key in score_keys():
        want = metrics["overall"][key]["mean"]
        if want is None:
            assert headline[key].value is None or headline[key].value != headline[key].value
        else:
            assert headline[key].value == pytest.approx(want), key
    # The fake model's upper bound is near random: amemgym run flags it, and so does the task's summary.
    assert "upper bound near random" in metrics["overall"]["flags"]
    assert headline["degenerate"].value == 1
    for user, sample in samples.items():
        own = json.loads((tmp_path / "inspect" / user / "metrics.json").read_text())["overall"]["flags"]
        explanation = next(iter(sample.scores.values())).explanation or ""
        assert ("DEGENERATE" in explanation) == bool(own), (user, explanation)
    # The per-user run directories are ordinary amemgym runs of the same conversations.
    for user in per_user:
        ours = (tmp_path / "run" / "users" / user / "sessions.jsonl").read_text()
        theirs = (tmp_path / "inspect" / user / "users" / user / "sessions.jsonl").read_text()
        assert [json.loads(x)["messages"] for x in theirs.splitlines()] == \
               [json.loads(x)["messages"] for x in ours.splitlines()]


def test_a_user_whose_calls_failed_errs_instead_of_scoring_zero(tmp_path: Path) -> None:
    """Found by probing: every call failed, yet the eval said success and scored 0.000 with a random baseline of 0.
    The solver now fails such a sample (an eval of it is not run here: Inspect's handling of a failed sample
    waits on its own retries)."""
    from amemgym.errors import RunError
    from amemgym.inspect_tasks import refuse_unfinished

    failure = {"user": "u1", "stage": "evaluation", "error": "agent call failed after 6 attempts: http_503"}
    with pytest.raises(RunError, match=r"1 failure\(s\) \(first: agent call failed.*re-run the eval to resume it"):
        refuse_unfinished("u1", [failure], {"complete": False}, tmp_path)
    with pytest.raises(RunError, match="the episode is incomplete"):
        refuse_unfinished("u1", [], {"complete": False}, tmp_path)
    refuse_unfinished("u1", [], {"complete": True}, tmp_path)  # a finished user is scored as before


def test_the_task_is_found_by_its_registry_name(tmp_path: Path) -> None:
    from inspect_ai._util.registry import registry_lookup

    import amemgym.inspect_tasks  # noqa: F401  (what the inspect_ai entry point imports)

    assert registry_lookup("task", "amemgym/amemgym_memory") is not None


def test_inspect_eval_command_finds_the_task_through_the_entry_point(tmp_path: Path) -> None:
    import os
    import shutil
    import subprocess
    import sys

    inspect_cli = shutil.which("inspect") or str(Path(sys.executable).parent / "inspect")
    if not Path(inspect_cli).exists():
        pytest.skip("the inspect command is not installed")
    # The entry point pyproject.toml declares, as an installed distribution would carry it.
    dist = tmp_path / "site" / "amemgym_entry-0.0.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: amemgym-entry\nVersion: 0.0.0\n")
    (dist / "entry_points.txt").write_text("[inspect_ai]\namemgym = amemgym.inspect_tasks\n")
    src = str(Path(__file__).resolve().parents[1] / "src")
    with FakeEndpoint() as ep:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, str(dist.parent)]), "FAKE_BASE_URL": ep.base_url,
               "FAKE_API_KEY": "x", "OPENAI_BASE_URL": ep.base_url, "INSPECT_LOG_DIR": str(tmp_path / "logs")}
        res = subprocess.run([inspect_cli, "eval", "amemgym/amemgym_memory", "--model", "openai-api/fake/fake-model",
                              "-T", "limit_users=1", "-T", f"out={tmp_path / 'out'}", "--display", "plain"],
                             env=env, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "memory_score" in res.stdout and "overall" in res.stdout
    assert len(list((tmp_path / "out").iterdir())) == 1  # one user's run directory


def test_a_budget_file_is_one_sample_per_episode_scored_like_amemgym_run(monkeypatch: pytest.MonkeyPatch,
                                                                         tmp_path: Path) -> None:
    from amemgym.testing.budget import BudgetScript, write_episodes

    episodes = write_episodes(tmp_path / "env", (("lite", "cities", 0), ("lite", "films", 0)))
    script = BudgetScript(episodes, wrong_domains=("films",))
    with FakeEndpoint(responder=script.body_reply) as ep:
        monkeypatch.setenv("OPENAI_BASE_URL", ep.base_url)
        # A service name of its own: Inspect keeps a model per name, and another test's endpoint is gone.
        monkeypatch.setenv("FAKEBUDGET_BASE_URL", ep.base_url)
        monkeypatch.setenv("FAKEBUDGET_API_KEY", "not-a-real-key")
        res = CliRunner().invoke(app, ["run", "--env", str(tmp_path / "env"), "--out", str(tmp_path / "run"),
                                       "--set", "budget.tools=text"])
        assert res.exit_code == 0, res.output
        logs = inspect_eval(amemgym_memory(env=str(tmp_path / "env"), out=str(tmp_path / "inspect"),
                                           config=None),
                            model="openai-api/fakebudget/fake-model", log_dir=str(tmp_path / "logs"), display="none",
                            task_args={})
    log = logs[0]
    assert log.status == "success", log.error
    samples = {str(s.id): next(iter(s.scores.values())).value for s in log.samples or []}
    assert set(samples) == {"cities/seed0", "films/seed0"}
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    for unit, got in samples.items():
        assert got["composite"] == pytest.approx(metrics["per_unit"][unit]["composite"])
    assert samples["cities/seed0"]["composite"] > samples["films/seed0"]["composite"]
    headline = log.results.scores[0].metrics
    assert headline["composite"].value == pytest.approx(metrics["groups"]["lite"]["composite"]["mean"])
