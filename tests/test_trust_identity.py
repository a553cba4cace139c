"""No number may silently come from the wrong place: the wrong model, a replayed trial, or another user's folder.

Every test runs the real runner against the local fake endpoint, whose served model can be swapped between
runs behind an unchanged URL (as a vLLM, Ollama or llama.cpp checkpoint swap would).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from amemgym.agents import resolve_agent
from amemgym.cli import app
from amemgym.config import load_config
from amemgym.errors import LLMError, RunError
from amemgym.families.statetrack.data import load_environment
from amemgym.families.statetrack.driver import default_environment
from amemgym.families.statetrack.layout import RunDir, folder_clashes, user_folder
from amemgym.families.statetrack.runner import Runner
from amemgym.llm import LLMClient
from amemgym.llm.embedded_model import EMBEDDED_MODELS, embedded_identity
from amemgym.testing.fake_endpoint import FakeEndpoint
from amemgym.testing.responder import default_responder, request_kind


def model_tagged(body: dict[str, Any]) -> str:
    """The default replies, with the assistant's free-text replies naming the model the request went to."""
    text = default_responder(body)
    return f"{text} [{body.get('model')}]" if request_kind(body) == "chat" else text


@pytest.fixture
def endpoint(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeEndpoint]:
    # No model configured: the harness must learn from the server which model it is talking to.
    with FakeEndpoint(model="model-a", responder=model_tagged) as ep:
        monkeypatch.setenv("OPENAI_BASE_URL", ep.base_url)
        yield ep


def cli(*args: str) -> Any:
    return CliRunner().invoke(app, ["run", "--config", "tiny", *args])


def last_usage(rundir: Path, role: str = "total") -> dict[str, Any]:
    usage = json.loads((rundir / "usage.json").read_text())["last_invocation"]
    return usage[role]


def traces(rundir: Path) -> str:
    return "".join(p.read_text() for p in sorted((rundir / "users").glob("*/trace.jsonl")))


def sessions(rundir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for p in sorted((rundir / "users").glob("*/sessions.jsonl"))
            for line in p.read_text().splitlines()]


# ---- model identity --------------------------------------------------------------------------------------


def test_a_model_swapped_behind_the_same_url_misses_the_cache_and_answers_anew(
        endpoint: FakeEndpoint, tmp_path: Path) -> None:
    first = cli("--out", str(tmp_path / "a"))
    assert first.exit_code == 0, first.output
    assert "[model-a]" in traces(tmp_path / "a")
    endpoint.model = "model-b"
    second = cli("--out", str(tmp_path / "b"))
    assert second.exit_code == 0, second.output
    usage = last_usage(tmp_path / "b")
    # Before: 0 calls and 77 cache hits, the traces holding only model-a's text.
    assert usage["cache_hits"] == 0 and usage["calls"] == last_usage(tmp_path / "a")["calls"] > 0
    text = traces(tmp_path / "b")
    assert "[model-b]" in text and "[model-a]" not in text
    manifest = json.loads((tmp_path / "b" / "manifest.json").read_text())
    assert manifest["models"]["agent"]["served"] == "model-b"
    assert manifest["models"]["agent"]["base_url"] == endpoint.base_url
    assert {s["models"]["agent"] for s in sessions(tmp_path / "b")} == {"model-b"}


async def _run_first_user(ep: FakeEndpoint, out: Path) -> None:
    cfg = load_config("tiny")
    cfg.llm.default.base_url = ep.base_url
    env = load_environment(default_environment())
    llm = LLMClient.from_config(cfg.llm)
    try:
        await Runner(env, resolve_agent("native"), out, cfg, llm).run(user_ids=[env.users[0].id])
    finally:
        await llm.aclose()


def test_resuming_on_another_model_is_refused_unless_allowed(endpoint: FakeEndpoint, tmp_path: Path) -> None:
    out = tmp_path / "run"
    asyncio.run(_run_first_user(endpoint, out))  # an interrupted run: one user of two done, on model-a
    before = (out / "metrics.json").read_text()
    endpoint.model = "model-b"
    calls = endpoint.stats()["calls"]
    refused = cli("--out", str(out))
    assert refused.exit_code == 2, refused.output
    line = refused.output.strip()
    assert "\n" not in line and "'model-a'" in line and "'model-b'" in line and "--allow-model-change" in line
    assert (out / "metrics.json").read_text() == before and endpoint.stats()["calls"] == calls

    allowed = cli("--out", str(out), "--allow-model-change")
    assert allowed.exit_code == 0, allowed.output
    env = load_environment(default_environment())
    by_user = {u.id: {s["models"]["agent"] for s in sessions_of(out, u.id)} for u in env.users}
    assert by_user == {env.users[0].id: {"model-a"}, env.users[1].id: {"model-b"}}
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["models"]["agent"]["served"] == "model-b"
    assert {(c["role"], c["from"], c["to"]) for c in manifest["model_changes"]} >= {("agent", "model-a", "model-b")}


@pytest.mark.parametrize("workers", [1, 2])
def test_a_resume_answered_by_another_model_under_the_same_listing_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int) -> None:
    # A hosted alias moved to a new snapshot between two invocations: /models still lists the alias, so the
    # served-model pin holds, but the replies name the new snapshot.
    out = tmp_path / "run"
    with FakeEndpoint(model="snap-1", served_models=("alias",)) as ep:
        monkeypatch.setenv("OPENAI_BASE_URL", ep.base_url)
        asyncio.run(_run_first_user(ep, out))
        ep.model = "snap-2"
        refused = cli("--out", str(out), "--set", f"run.workers={workers}")
        assert refused.exit_code == 1 and "Traceback" not in refused.output, refused.output
        errors = {f["error"] for f in json.loads((out / "failures.json").read_text())["failures"]}
        assert errors and all("'snap-2'" in e and "'snap-1'" in e and "--allow-model-change" in e for e in errors)
        assert json.loads((out / "usage.json").read_text())["cumulative"]["agent"]["answered"] == "snap-1"

        allowed = cli("--out", str(out), "--set", f"run.workers={workers}", "--allow-model-change")
        assert allowed.exit_code == 0, allowed.output
        usage = json.loads((out / "usage.json").read_text())
        assert usage["cumulative"]["agent"]["answered"] == "snap-2" and usage["cumulative"]["total"]["answered"] == ""
        # The move is on record, so readers flag the run and never rank it beside runs of one model.
        manifest = json.loads((out / "manifest.json").read_text())
        assert {(c["role"], c["from"], c["to"]) for c in manifest["model_changes"]} >= {("agent", "snap-1", "snap-2")}
        board = CliRunner().invoke(app, ["leaderboard", str(out)])
        assert board.exit_code == 0 and "model changed" in " ".join(board.output.split()), board.output

        # The pin follows the allowed change: the next resume holds the run to snap-2.
        ep.model = "snap-3"
        shutil.rmtree(out / "users" / sorted(p.name for p in (out / "users").iterdir())[-1])
        again = cli("--out", str(out), "--set", f"run.workers={workers}", "--set", "llm.cache=false")
        assert again.exit_code == 1, again.output
        errors = {f["error"] for f in json.loads((out / "failures.json").read_text())["failures"]}
        assert errors and all("'snap-3'" in e and "'snap-2'" in e for e in errors)


def sessions_of(rundir: Path, user_id: str) -> list[dict[str, Any]]:
    return list(RunDir(rundir).session_records(user_id).values())


async def test_a_model_swapped_mid_run_fails_the_call_instead_of_mixing(endpoint: FakeEndpoint) -> None:
    llm = LLMClient(load_config("tiny").llm.model_copy(
        update={"default": load_config("tiny").llm.default.model_copy(update={"base_url": endpoint.base_url})}))
    try:
        await llm.chat("agent", [{"role": "user", "content": "hello"}])
        endpoint.model = "model-b"  # the server now answers as another model under the name we resolved
        with pytest.raises(LLMError, match="model-b"):
            await llm.chat("agent", [{"role": "user", "content": "hello again"}])
    finally:
        await llm.aclose()


def test_the_embedded_model_is_identified_by_its_pinned_file() -> None:
    for name, spec in EMBEDDED_MODELS.items():
        assert embedded_identity(name) == f"{name}@sha256:{spec.sha256[:16]}"
    assert len({embedded_identity(n) for n in EMBEDDED_MODELS}) == len(EMBEDDED_MODELS)


# ---- independent trials and the cache --------------------------------------------------------------------


def test_every_trial_makes_its_own_calls(endpoint: FakeEndpoint, tmp_path: Path) -> None:
    result = cli("--out", str(tmp_path / "t"), "--trials", "2")
    assert result.exit_code == 0, result.output
    one, two = (last_usage(tmp_path / "t" / f"trial_{k}", "agent") for k in (1, 2))
    # Before: trial 2 made 0 agent calls (70 cache hits), replaying trial 1.
    assert two["calls"] == one["calls"] > 0
    assert two["cache_hits"] == one["cache_hits"]
    # Every request body (its seed included) reached the server exactly once over both trials.
    assert max(endpoint.served_keys().values()) == 1
    # Re-running a trial's seed is the same sample: served from the cache.
    again = cli("--out", str(tmp_path / "again"), "--set", "run.seed=1")
    assert again.exit_code == 0, again.output
    assert last_usage(tmp_path / "again")["calls"] == 0


def test_no_cache_reaches_the_model_and_leaves_the_cache_alone(endpoint: FakeEndpoint, tmp_path: Path) -> None:
    first = cli("--out", str(tmp_path / "a"))
    assert first.exit_code == 0, first.output
    db = Path(os.environ["AMEMGYM_CACHE_DIR"]) / "responses.sqlite"
    rows = sqlite3.connect(db).execute("SELECT COUNT(*) FROM responses").fetchone()[0]
    again = cli("--out", str(tmp_path / "b"), "--no-cache")
    assert again.exit_code == 0, again.output
    assert last_usage(tmp_path / "b")["calls"] == last_usage(tmp_path / "a")["calls"] > 0
    assert sqlite3.connect(db).execute("SELECT COUNT(*) FROM responses").fetchone()[0] == rows
    cached = cli("--out", str(tmp_path / "c"))
    assert cached.exit_code == 0 and last_usage(tmp_path / "c")["calls"] == 0


# ---- storage identity ------------------------------------------------------------------------------------


def test_user_ids_that_differ_only_in_unsafe_characters_get_their_own_folders(
        endpoint: FakeEndpoint, tmp_path: Path) -> None:
    users = json.loads(default_environment().read_text())
    users[0]["id"], users[1]["id"] = "user/1", "user_1"
    env = tmp_path / "env.json"
    env.write_text(json.dumps(users))
    result = CliRunner().invoke(app, ["run", "--env", str(env), "--config", "tiny", "--out", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    folders = sorted(p.name for p in (tmp_path / "r" / "users").iterdir())
    assert len(folders) == 2 and "user_1" in folders
    metrics = json.loads((tmp_path / "r" / "metrics.json").read_text())
    assert metrics["per_user"]["user/1"] != metrics["per_user"]["user_1"]
    for uid, original in (("user/1", users[0]), ("user_1", users[1])):
        recs = sessions_of(tmp_path / "r", uid)
        assert len(recs) == sum(len(p["sessions"]) for p in original["periods"])
        assert len(list(RunDir(tmp_path / "r").sessions(uid).read_text().splitlines())) == len(recs)


def test_folder_names_are_one_to_one_and_plain_for_safe_ids() -> None:
    ids = ["user/1", "user_1", "user:1", "user 1", ".", "..", "", "a" * 300, "a" * 299 + "b", "u-0001",
           "384a6e259a424b23b9064cf46260e98d", "user_1~x"]
    names = [user_folder(i) for i in ids]
    assert len(set(names)) == len(ids)
    assert user_folder("u-0001") == "u-0001" and user_folder("user_1") == "user_1"
    assert all("/" not in n and n not in (".", "..", "") and len(n) < 200 for n in names)


async def test_ids_that_differ_only_in_case_are_refused(tmp_path: Path) -> None:
    assert folder_clashes(["Ann", "ann", "bob"]) == [("Ann", "ann")]
    users = json.loads(default_environment().read_text())
    users[0]["id"], users[1]["id"] = "Ann", "ann"
    path = tmp_path / "env.json"
    path.write_text(json.dumps(users))
    cfg = load_config("tiny")
    with pytest.raises(RunError, match="share the folder"):
        await Runner(load_environment(path), resolve_agent("native"), tmp_path / "r", cfg, LLMClient(cfg.llm)).run()


def _env_with_ids(tmp_path: Path, *ids: str) -> Path:
    users = json.loads(default_environment().read_text())
    for user, uid in zip(users, ids, strict=True):
        user["id"] = uid
    path = tmp_path / "env.json"
    path.write_text(json.dumps(users))
    return path


def _as_legacy(rundir: Path) -> None:
    """Make a run directory look as an earlier version wrote it: slug-only folders, no folder map."""
    for folder in (rundir / "users").iterdir():
        if "~" in folder.name:
            slug = folder.with_name(folder.name.split("~")[0])
            if slug.exists():  # the earlier layout had one folder for both users
                shutil.rmtree(folder)
            else:
                folder.rename(slug)
    manifest = json.loads((rundir / "manifest.json").read_text())
    del manifest["user_folders"]
    (rundir / "manifest.json").write_text(json.dumps(manifest))


def test_a_run_written_with_slug_folders_resumes_in_place(endpoint: FakeEndpoint, tmp_path: Path) -> None:
    env = _env_with_ids(tmp_path, "user:1", "u2")
    out = tmp_path / "r"
    assert cli("--env", str(env), "--out", str(out)).exit_code == 0
    before = json.loads((out / "metrics.json").read_text())["per_user"]
    _as_legacy(out)
    assert (out / "users" / "user_1").is_dir()
    again = cli("--env", str(env), "--out", str(out))
    assert again.exit_code == 0, again.output
    assert last_usage(out)["calls"] == 0  # nothing redone: the old folder was adopted
    assert (out / "users" / user_folder("user:1")).is_dir() and not (out / "users" / "user_1").exists()
    assert json.loads((out / "metrics.json").read_text())["per_user"] == before


def test_a_run_whose_users_shared_a_slug_folder_is_refused(endpoint: FakeEndpoint, tmp_path: Path) -> None:
    env = _env_with_ids(tmp_path, "user/1", "user_1")
    out = tmp_path / "r"
    assert cli("--env", str(env), "--out", str(out)).exit_code == 0
    _as_legacy(out)
    again = cli("--env", str(env), "--out", str(out))
    assert again.exit_code == 2 and "mixed" in again.output, again.output


def test_a_resume_with_another_temperature_is_refused_and_an_old_config_is_not(endpoint: FakeEndpoint,
                                                                             tmp_path: Path) -> None:
    out = tmp_path / "run"
    asyncio.run(_run_first_user(endpoint, out))  # an interrupted run: one user of two done
    calls = endpoint.stats()["calls"]
    refused = cli("--out", str(out), "--set", "llm.default.temperature=0.9")
    assert refused.exit_code == 2, refused.output
    line = " ".join(refused.output.split())
    assert any(f"{role} calls used temperature {was}, now 0.9" in line for role, was in (("agent", 0.0),
                                                                                         ("simulator", 0.2)))
    assert endpoint.stats()["calls"] == calls
    # A manifest whose config this version cannot read (another version's settings) has nothing to compare.
    path = out / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["config"]["llm"]["default"]["a_setting_from_elsewhere"] = 1
    path.write_text(json.dumps(manifest))
    assert cli("--out", str(out)).exit_code == 0
