"""Mutated input files end in one clear error line (exit 2, file and field named) and never touch a finished run.

Each property mutates a valid file (environment, run config, agent config) at a random place: wrong types,
deleted or unknown fields, unicode and control characters, huge strings, duplicated list items, dropped periods,
raw byte damage. A mutation is first checked with the library loader; only the invalid ones go through the
CLI, so no example ever calls a model. Every CLI invocation points ``--out`` at one finished run directory
whose files are hashed before and after.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, event, example, given, note, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from amemgym.agents import resolve_agent
from amemgym.cli import app
from amemgym.config import load_config
from amemgym.errors import ConfigError, DataError, RunError
from amemgym.families.statetrack.data import load_environment
from amemgym.families.statetrack.generate.procedural import tiny_environment_path
from amemgym.runfiles import LOCK
from amemgym.storage import append_jsonl, atomic_write_json, read_jsonl
from amemgym.testing.fake_endpoint import FakeEndpoint

FIXTURE = Path(__file__).parent / "fixtures" / "original_shape.json"
#: Nothing listens on the discard port: a bad invocation that wrongly reached for a model fails fast.
DEAD_URL = "http://127.0.0.1:9/v1"
PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow],
                    derandomize=True)

Path_ = tuple[Any, ...]


# ---- a finished run directory that no bad invocation may damage ----------------------------------------
def digest(root: Path) -> dict[str, str]:
    # The writer lock names its last holder; that note is not part of the run's results.
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and p.name != LOCK}


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, str]]]:
    root = tmp_path_factory.mktemp("finished")
    with FakeEndpoint(seed=3) as ep, pytest.MonkeyPatch.context() as mp:
        mp.setenv("OPENAI_BASE_URL", ep.base_url)
        mp.setenv("AMEMGYM_CACHE_DIR", str(root / "cache"))
        result = CliRunner().invoke(app, ["run", "--env", str(FIXTURE), "--out", str(root / "run")])
    assert result.exit_code == 0, result.output
    assert (root / "run" / "metrics.json").exists()
    yield root / "run", digest(root / "run")


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("bad-files")


@pytest.fixture(autouse=True)
def _no_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", DEAD_URL)


def invoke_refused(args: list[str], finished: tuple[Path, dict[str, str]]) -> str:
    """Run the CLI against the finished run; it must refuse in one line with exit 2 and leave the run as it was."""
    rundir, before = finished
    result = CliRunner().invoke(app, [*args, "--out", str(rundir)])
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    assert result.exit_code == 2, result.output
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    assert digest(rundir) == before, "a refused invocation changed the finished run directory"
    return lines[0]


def assert_names_file_and_field(line: str, name: str) -> None:
    """``error: NAME: FIELD: problem`` (a syntax error names a line and column instead of a field)."""
    rest = line.removeprefix("error: ")
    assert rest.startswith(f"{name}: "), line
    detail = rest[len(name) + 2:]
    assert re.match(r"\S.*?: \S", detail) or re.search(r"\bline \d+ column \d+\b|\bbyte \d+\b|no users",
                                                            detail), line


# ---- mutation strategies over JSON-like trees ------------------------------------------------------------
TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
HUGE = st.sampled_from(["x" * 200_000, "\u00e9\u4e2d\U0001f600" * 50_000, "line\n" * 20_000])
SCALAR = st.one_of(st.none(), st.booleans(), st.integers(-(10**15), 10**15),
                   st.floats(allow_nan=False, allow_infinity=False), TEXT, HUGE,
                   st.sampled_from(["", " ", "\x00", "\u202e\u200b", "2020-13-45", "-1", "1e309", "null"]))
JUNK = st.recursive(SCALAR, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                     st.dictionaries(TEXT, inner, max_size=3)), max_leaves=6)
KINDS = ("replace", "delete", "add_key", "rename_key", "duplicate", "clear")


def paths_of(node: Any, prefix: Path_ = ()) -> list[Path_]:
    """Every path below the root of a JSON-like tree (dict keys and list indices)."""
    found: list[Path_] = []
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else []
    for key, child in items:
        found.append((*prefix, key))
        found += paths_of(child, (*prefix, key))
    return found


def at(tree: Any, path: Path_) -> Any:
    for key in path:
        tree = tree[key]
    return tree


def mutate(tree: Any, path: Path_, kind: str, value: Any, key: str) -> Any:
    """A copy of ``tree`` with one mutation at ``path``."""
    tree = copy.deepcopy(tree)
    parent, last = at(tree, path[:-1]), path[-1]
    target = parent[last]
    if kind == "replace":
        parent[last] = value
    elif kind == "delete":
        del parent[last]
    elif kind == "add_key" and isinstance(target, dict):
        target[key or "extra"] = value
    elif kind == "rename_key" and isinstance(parent, dict):
        parent[key or "renamed"] = parent.pop(last)
    elif kind == "duplicate" and isinstance(parent, list):
        parent.append(copy.deepcopy(target))
    elif kind == "duplicate" and isinstance(target, list) and target:
        target.append(copy.deepcopy(target[0]))
    elif kind == "clear" and isinstance(target, list | dict):
        target.clear()
    else:
        parent[last] = value
    return tree


@st.composite
def mutations(draw: st.DrawFn, tree: Any, paths: list[Path_]) -> Any:
    path = draw(st.sampled_from(paths))
    kind = draw(st.sampled_from(KINDS))
    note(f"{kind} at {path}")
    return mutate(tree, path, kind, draw(JUNK), draw(TEXT))


# ---- environment files -------------------------------------------------------------------------------------
def _env(path: Path) -> list[dict[str, Any]]:
    return json.loads(path.read_text(encoding="utf-8"))


ENV_BASES = {"fixture": _env(FIXTURE), "tiny": _env(tiny_environment_path())}
ENV_PATHS = {name: paths_of(tree) for name, tree in ENV_BASES.items()}


def structural(draw: st.DrawFn, base: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Whole-user edits: a second user with fewer periods, a duplicate id, or a shuffled schema."""
    data = copy.deepcopy(base)
    other = copy.deepcopy(data[0])
    edit = draw(st.sampled_from(["fewer_periods", "more_periods", "same_id", "fewer_qas", "schema_values"]))
    note(f"structural {edit}")
    if edit == "fewer_periods":
        other["id"] += "-b"
        other["periods"].pop()
    elif edit == "more_periods":
        other["id"] += "-b"
        other["periods"].append(copy.deepcopy(other["periods"][-1]))
    elif edit == "fewer_qas":
        other["id"] += "-b"
        other["qas"] = other["qas"][:1]
    elif edit == "schema_values":
        var = sorted(other["state_schema"])[0]
        other["state_schema"][var] = list(reversed(other["state_schema"][var]))[:1]
    data.append(other)
    return data


@st.composite
def bad_environments(draw: st.DrawFn) -> tuple[str, list[dict[str, Any]]]:
    name = draw(st.sampled_from(sorted(ENV_BASES)))
    base = ENV_BASES[name]
    if draw(st.integers(0, 5)) == 0:
        return name, structural(draw, base)
    return name, draw(mutations(base, ENV_PATHS[name]))


@PROPERTY
@given(case=bad_environments())
@example(case=("fixture", mutate(ENV_BASES["fixture"], (0, "user_profile", "age"), "replace", "x" * 200_000, "")))
@example(case=("tiny", mutate(ENV_BASES["tiny"], (1, "periods", 0), "delete", None, "")))
@example(case=("fixture", mutate(ENV_BASES["fixture"], (0, "state_schema"), "add_key", ["a"], "new\nline\u202e")))
def test_mutated_environment_is_refused_in_one_line(
    case: tuple[str, list[dict[str, Any]]], scratch: Path, finished: tuple[Path, dict[str, str]]
) -> None:
    _, data = case
    bad = scratch / "bad_env.json"
    bad.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    try:
        load_environment(bad)
    except DataError:
        event("refused")
    else:
        event("stayed valid")
        return  # the mutation kept the file valid; running it would call a model
    line = invoke_refused(["run", "--env", str(bad)], finished)
    assert_names_file_and_field(line, "bad_env.json")


# ---- run config files ------------------------------------------------------------------------------------
CONFIG_BASES: dict[str, dict[str, Any]] = {
    "full": {"env": {"name": "custom", "num_periods": 2, "num_rounds_init": 1, "num_rounds_update": 2},
             "llm": {"default": {"model": "fake-model", "max_concurrency": 2, "timeout_s": 5.0, "max_retries": 1},
                     "roles": {"agent": {"max_tokens": 64}, "judge": {"temperature": 0.0}}, "cache": True},
             "run": {"seed": 1, "user_concurrency": 2, "eval_max_tokens": 40, "context_window": 4096}},
    "original": {"name": "tiny", "num_user_profiles": 2, "num_periods": 2, "num_questions": 3, "seed": 5},
}
CONFIG_PATHS = {name: paths_of(tree) for name, tree in CONFIG_BASES.items()}


@st.composite
def bad_configs(draw: st.DrawFn) -> tuple[str, bytes]:
    base = draw(st.sampled_from(sorted(CONFIG_BASES)))
    suffix = draw(st.sampled_from([".yaml", ".json"]))
    tree = draw(mutations(CONFIG_BASES[base], CONFIG_PATHS[base]))
    text = (json.dumps(tree, ensure_ascii=False) if suffix == ".json"
            else yaml.safe_dump(tree, allow_unicode=True, width=10_000))
    raw = text.encode("utf-8")
    if draw(st.integers(0, 4)) == 0:  # byte damage: truncation, stray bytes, invalid UTF-8, tabs
        cut = draw(st.integers(0, len(raw)))
        raw = raw[:cut] + draw(st.sampled_from([b"", b"\xff\xfe", b"\t:", b"{[", b"\x00", b": : -"])) + raw[cut:]
        note(f"bytes damaged at {cut}")
    return suffix, raw


@PROPERTY
@given(case=bad_configs())
@example(case=(".yaml", b"run:\n  seed: [\n"))
@example(case=(".yaml", b"env:\n  name: [1]\n"))
@example(case=(".yaml", b"run:\n  seed: \xff\n"))
@example(case=(".yaml", b"llm:\n  roles:\n    agent: {bogus: 1}\n"))
def test_mutated_config_is_refused_in_one_line(
    case: tuple[str, bytes], scratch: Path, finished: tuple[Path, dict[str, str]]
) -> None:
    suffix, raw = case
    bad = scratch / f"bad_cfg{suffix}"
    bad.write_bytes(raw)
    try:
        load_config(str(bad))
    except ConfigError:
        event("refused")
    else:
        event("stayed valid")
        return
    line = invoke_refused(["run", "--env", str(FIXTURE), "--config", str(bad)], finished)
    assert_names_file_and_field(line, bad.name)


# ---- agent config files ----------------------------------------------------------------------------------
AGENT_BASES: dict[str, dict[str, Any]] = {
    "rag": {"type": "rag", "name": "my-rag", "options": {"freq": 2, "topk": 10}, "llm": {"model": "m"}},
    "awi": {"type": "awi-2-4", "llm": {"temperature": 0.0, "max_tokens": 64}},
    "native": {"type": "native", "name": "plain"},
}
AGENT_PATHS = {name: paths_of(tree) for name, tree in AGENT_BASES.items()}
AGENT_TYPES = st.sampled_from(["native", "rag-2-4-30", "awe", "awi-oracle", "bogus", "rag-1-2", "RAG", ":x",
                               ".rel:f", "json:nothing", "amemgym_nonexistent_zz:f", "a" * 100_000])


@st.composite
def bad_agents(draw: st.DrawFn) -> tuple[str, bytes]:
    base = draw(st.sampled_from(sorted(AGENT_BASES)))
    suffix = draw(st.sampled_from([".json", ".yaml"]))
    tree = draw(mutations(AGENT_BASES[base], AGENT_PATHS[base]))
    if isinstance(tree.get("type"), str) and ":" in tree["type"]:
        # A colon names a plug-in module to import; arbitrary text must not import arbitrary modules.
        tree["type"] = tree["type"].replace(":", "_")
    if draw(st.booleans()):
        tree["type"] = draw(AGENT_TYPES)
    text = (json.dumps(tree, ensure_ascii=False) if suffix == ".json"
            else yaml.safe_dump(tree, allow_unicode=True, width=10_000))
    raw = text.encode("utf-8")
    if draw(st.integers(0, 4)) == 0:
        cut = draw(st.integers(0, len(raw)))
        raw = raw[:cut] + draw(st.sampled_from([b"\xff", b"\t:", b"{[", b"\x00"])) + raw[cut:]
    return suffix, raw


@PROPERTY
@given(case=bad_agents())
@example(case=(".json", b'{"type": "native", "llm": {"bogus": 1}}'))
@example(case=(".json", b'{"type": ":x"}'))
@example(case=(".json", b'{"type": "rag", "options": {"freq": "x"}}'))
@example(case=(".yaml", b"type: rag\nname: [1, 2]\n"))
def test_mutated_agent_file_is_refused_in_one_line(
    case: tuple[str, bytes], scratch: Path, finished: tuple[Path, dict[str, str]]
) -> None:
    suffix, raw = case
    bad = scratch / f"bad_agent{suffix}"
    bad.write_bytes(raw)
    try:
        resolve_agent(str(bad))
    except ConfigError:
        event("refused")
    else:
        event("stayed valid")
        return
    line = invoke_refused(["run", "--env", str(FIXTURE), "--agent", str(bad)], finished)
    assert_names_file_and_field(line, bad.name)


# ---- a run directory of another environment, config or agent ---------------------------------------------
@pytest.mark.parametrize(("args", "what"), [
    (["--env", str(tiny_environment_path())], "environment sha256"),
    (["--env", str(FIXTURE), "--config", "tiny"], "run"),
    (["--env", str(FIXTURE), "--set", "run.seed=99"], "run"),
    (["--env", str(FIXTURE), "--agent", "rag"], "agent"),
])
def test_run_directory_of_another_run_is_refused(
    args: list[str], what: str, finished: tuple[Path, dict[str, str]]
) -> None:
    line = invoke_refused(["run", *args], finished)
    assert f"holds a run with a different {what}; refusing to mix results" in line, line


def test_unreadable_manifest_is_refused(finished: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    rundir = tmp_path / "torn"
    shutil.copytree(finished[0], rundir)
    (rundir / "manifest.json").write_text('{"protocol": {"environment', encoding="utf-8")
    line = invoke_refused(["run", "--env", str(FIXTURE)], (rundir, digest(rundir)))
    assert "truncated or not JSON" in line and "manifest.json" in line


# ---- files a kill can leave behind -------------------------------------------------------------------------
def test_interrupted_write_keeps_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "metrics.json"
    atomic_write_json(target, {"version": "old"})

    def killed(fd: int) -> None:
        raise OSError("killed before the data reached the disk")

    # fsync is the last step before the rename: failing there stands for a kill in the middle of a write.
    monkeypatch.setattr("amemgym.storage.os.fsync", killed)
    with pytest.raises(OSError, match="killed"):
        atomic_write_json(target, {"version": "new", "payload": "x" * 100_000})
    assert json.loads(target.read_text(encoding="utf-8")) == {"version": "old"}
    assert [p.name for p in tmp_path.iterdir()] == ["metrics.json"]  # no temp file left behind


def test_torn_jsonl_line_is_skipped_and_the_next_append_starts_clean(tmp_path: Path) -> None:
    path = tmp_path / "sessions.jsonl"
    append_jsonl(path, [{"session": 0}, {"session": 1}])
    with open(path, "ab") as fh:
        fh.write(b'{"session": 2, "messa')  # what a kill mid-append leaves
    assert list(read_jsonl(path)) == [{"session": 0}, {"session": 1}]
    append_jsonl(path, [{"session": 2}])
    assert list(read_jsonl(path)) == [{"session": 0}, {"session": 1}, {"session": 2}]
    assert b"messa" not in path.read_bytes()  # the torn line was cut off, not left inside the file


def test_a_broken_line_followed_by_others_is_damage_naming_the_line(tmp_path: Path) -> None:
    path = tmp_path / "sessions.jsonl"
    append_jsonl(path, [{"session": 0}])
    with open(path, "ab") as fh:
        fh.write(b"garbage{\n")
    append_jsonl(path, [{"session": 2}])
    with pytest.raises(RunError, match=r"sessions.jsonl line 2: damaged"):
        list(read_jsonl(path))


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_run_file_that_is_a_pipe_or_a_device_is_refused_instead_of_hanging(kind: str, tmp_path: Path) -> None:
    import os

    from amemgym.errors import RunError
    from amemgym.records.base import load_json_file
    from amemgym.storage import read_jsonl

    for name, read in (("manifest.json", load_json_file), ("sessions.jsonl", lambda p: list(read_jsonl(p)))):
        path = tmp_path / name
        if kind == "fifo":
            os.mkfifo(path)
        else:
            path.symlink_to("/dev/zero")
        with pytest.raises(RunError, match="not a regular file"):
            read(path)
