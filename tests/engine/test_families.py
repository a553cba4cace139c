"""The family protocol: conformance of the built-ins, resolution of files and run directories, and the
leaderboard and compare commands over budget runs (alone and mixed with statetrack runs)."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from amemgym.cli import app
from amemgym.errors import ConfigError, DataError
from amemgym.families import (
    BUILTIN,
    Board,
    NoOptions,
    OptionValue,
    check_family,
    family_for_env,
    family_for_run,
    family_names,
    family_options,
    get_family,
    group_runs,
    register_family,
    unregister_family,
)
from amemgym.families.budget.generate import build_episode
from amemgym.families.budget.io import save_episode
from amemgym.families.budget.options import GenerateOptions as BudgetGenerate
from amemgym.families.statetrack.options import GenerateOptions as StatetrackGenerate
from amemgym.families.statetrack.options import RunOptions as StatetrackRun

FIXTURES = Path(__file__).parents[1] / "fixtures"


def flat(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("name", list(BUILTIN))
def test_every_builtin_family_conforms(name: str) -> None:
    family = get_family(name)
    assert family.name == name
    assert check_family(family) == []


def test_the_checker_names_what_is_wrong() -> None:
    class Broken:
        name = "Not An Identifier"

        def owns_run(self, run_dir: Path) -> bool:
            return True

        def generate(self, request: object) -> int:  # no console parameter
            return 0

    problems = check_family(Broken())
    assert any("lowercase identifier" in p for p in problems)
    assert any("generate() lacks parameter(s) console" in p for p in problems)
    assert any("missing method validate()" in p for p in problems)
    with pytest.raises(ConfigError, match="not usable"):
        register_family(Broken())  # type: ignore[arg-type]


def test_a_family_that_claims_every_directory_fails_the_check() -> None:
    statetrack = get_family("statetrack")

    class Greedy(type(statetrack)):  # type: ignore[misc]
        name = "greedy"

        def owns_run(self, run_dir: Path) -> bool:
            return True

    assert check_family(Greedy()) == ["owns_run() claims an empty directory"]


def test_a_registered_family_is_found_and_names_must_be_unique() -> None:
    statetrack = get_family("statetrack")

    class Extra(type(statetrack)):  # type: ignore[misc]
        name = "extra"

        def owns_run(self, run_dir: Path) -> bool:
            return (run_dir / "extra.json").is_file()

    register_family(Extra())
    try:
        assert "extra" in family_names() and get_family("extra").name == "extra"
        with pytest.raises(ConfigError, match="already registered"):
            register_family(Extra())
    finally:
        unregister_family("extra")
    with pytest.raises(ConfigError, match="unknown family 'extra'"):
        get_family("extra")


def test_files_find_their_family(tmp_path: Path) -> None:
    budget_file = tmp_path / "b.json"
    save_episode(build_episode("lite", "films", 0), budget_file)
    assert family_for_env(budget_file).name == "budget"
    assert family_for_env(FIXTURES / "original_shape.json").name == "statetrack"  # no family field
    assert family_for_env(None).name == "statetrack"  # the bundled demo
    odd = tmp_path / "odd.json"
    odd.write_text(json.dumps({"family": "chess", "x": 1}))
    with pytest.raises(DataError, match="unknown family 'chess'"):
        family_for_env(odd)


def test_an_unknown_family_in_a_file_is_one_line_exit_2(tmp_path: Path) -> None:
    odd = tmp_path / "odd.json"
    odd.write_text(json.dumps({"family": "chess"}))
    res = CliRunner().invoke(app, ["validate", "--env", str(odd)])
    assert res.exit_code == 2 and "unknown family 'chess'" in flat(res.output)
    assert "Traceback" not in res.output


def test_generate_checks_the_family_against_the_registry(tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["generate", "--family", "chess", "--out", str(tmp_path / "x")])
    assert res.exit_code == 2
    assert "unknown --family 'chess' (statetrack or budget)" in flat(res.output)
    res = CliRunner().invoke(app, ["generate", "--family", "budget", "--domain", "films", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert family_for_env(tmp_path / "data.json").name == "budget"


def test_each_family_receives_only_its_own_generate_options(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}

    def keep(name: str) -> Any:
        return lambda request, console: seen.update({name: request}) or 0

    for name in ("statetrack", "budget"):
        monkeypatch.setattr(get_family(name), "generate", keep(name))
    out = str(tmp_path / "x")
    res = CliRunner().invoke(app, ["generate", "--out", out, "--users", "2", "--seed", "5", "--salt", "1"])
    assert res.exit_code == 0, res.output
    assert CliRunner().invoke(app, ["generate", "--family", "budget", "--domain", "films", "--tier", "hard",
                                    "--seed", "4", "--out", out]).exit_code == 0
    st, bu = seen["statetrack"], seen["budget"]
    assert st.options == StatetrackGenerate(users=2) and (st.seed, st.salt) == (5, 1)
    assert bu.options == BudgetGenerate(tier="hard", domain="films") and bu.seed == 4
    # Neither request carries the other family's options, at any level.
    assert not hasattr(st.options, "tier") and not hasattr(st, "tier")
    assert not hasattr(bu.options, "generator") and not hasattr(bu, "users")


@pytest.mark.parametrize(("family", "args", "message"), [
    ("budget", ["generate", "--family", "budget", "--domain", "films", "--users", "3", "--generator", "llm"],
     "--generator, --users not supported for budget-family generate"),
    ("statetrack", ["generate", "--tier", "hard", "--official"], "--tier, --official not supported for "
     "statetrack-family generate"),
    ("budget", ["validate", "--margin", "0.1", "--gate-prior"], "--margin, --gate-prior not supported for "
     "budget-family validate"),
    ("statetrack", ["validate", "--seeds", "3"], "--seeds not supported for statetrack-family validate"),
    ("budget", ["run", "--dry-run", "--json"], "--dry-run, --json not supported for budget-family runs yet"),
])
def test_an_option_of_another_family_is_refused_in_one_line(family: str, args: list[str], message: str,
                                                            original_env_path: Path, tmp_path: Path) -> None:
    episode = tmp_path / "ep" / "data.json"
    save_episode(build_episode("lite", "films", 0, 0), episode)
    if args[0] != "generate":
        args = [*args, "--env", str(episode if family == "budget" else original_env_path)]
    out = tmp_path / "out"
    res = CliRunner().invoke(app, [*args, "--out", str(out)] if args[0] != "validate" else args)
    assert res.exit_code == 2, res.output
    assert flat(res.stderr) == f"error: {message}" and not out.exists()  # stdout: the JSON error of --json


def test_a_family_without_an_options_model_takes_only_the_shared_options() -> None:
    class Bare:
        name = "bare"

    quiet = {"dry_run": OptionValue("--dry-run", False, False)}
    assert family_options(Bare(), "run", quiet) == NoOptions()  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"^--dry-run not supported for bare-family runs yet$"):
        family_options(Bare(), "run", {"dry_run": OptionValue("--dry-run", True, True)})  # type: ignore[arg-type]
    taken = family_options(get_family("statetrack"), "run", {"json": OptionValue("--json", True, True), **quiet})
    assert taken == StatetrackRun(json=True)


def test_importing_the_registry_loads_no_family() -> None:
    # A family is loaded on its first use; the registry's own helpers (folders.py) are no family.
    code = ("import sys, amemgym.families as f; f.family_names(); "
            "print([m for m in sys.modules if m.split('.')[2:3] in (['statetrack'], ['budget'])])")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "[]"


# --- budget runs on the leaderboard and in compare -------------------------------------------------------------


def budget_run(root: Path, *, agent: str, composite: float | None, tier: str = "lite", policy: str = "budget",
               domain: str = "films", seed: int = 0) -> Path:
    """A budget results.json with the fields the board and compare read (the score as the harness writes it)."""
    root.mkdir(parents=True, exist_ok=True)
    axes = {k: composite for k in ("breadth", "maintenance", "reasoning", "efficiency")}
    results = {"family": "budget", "format_version": 1, "agent": agent, "policy": policy, "store": "notes",
               "tier": tier, "domain": domain, "seed": seed, "salt": 0,
               "environment_sha256": f"sha-{tier}-{domain}-{seed}", "search_embedder_problem": None,
               "score": {**axes, "composite": composite, "abstention": 1.0, "accuracy": composite,
                         "writes_used": 10, "reference_writes": 12}}
    (root / "results.json").write_text(json.dumps(results))
    return root


def statetrack_run(tmp: Path) -> Path:
    """A real statetrack run directory: the native agent on the fixture with the scripted fake."""
    from amemgym.agents import resolve_agent
    from amemgym.config import load_config
    from amemgym.families.statetrack.data import load_environment
    from amemgym.families.statetrack.runner import Runner
    from amemgym.testing.run_script import RunScript
    from amemgym.testing.scripted_model import scripted_client

    env_path = FIXTURES / "original_shape.json"
    env = load_environment(env_path)
    llm = scripted_client(RunScript(env.users[0]), cache=tmp / "cache.sqlite", embedder=False)
    out = tmp / "st_run"
    asyncio.run(Runner(env, resolve_agent("native"), out, load_config("tiny"), llm, env_path=env_path).run())
    return out


@pytest.fixture(scope="module")
def st_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return statetrack_run(tmp_path_factory.mktemp("st"))


def test_run_directories_find_their_family(st_run: Path, tmp_path: Path) -> None:
    b = budget_run(tmp_path / "b", agent="native", composite=0.5)
    assert family_for_run(b).name == "budget"
    assert family_for_run(st_run).name == "statetrack"
    budget_run(tmp_path / "coll" / "films" / "seed0", agent="native", composite=0.5)
    assert family_for_run(tmp_path / "coll").name == "budget"  # a folder of budget runs
    assert list(group_runs([st_run, b])) == ["statetrack", "budget"]


def test_budget_board_groups_by_tier_and_protocol_and_ranks_by_composite(tmp_path: Path) -> None:
    runs = [budget_run(tmp_path / "lo", agent="weak", composite=0.40),
            budget_run(tmp_path / "hi", agent="strong", composite=0.80),
            budget_run(tmp_path / "lc", agent="native", composite=0.95, policy="long-context"),
            budget_run(tmp_path / "std", agent="strong", composite=0.99, tier="standard"),
            budget_run(tmp_path / "none", agent="broken", composite=None)]
    board = get_family("budget").leaderboard(runs)
    assert isinstance(board, Board)
    col = {c: i for i, c in enumerate(board.columns)}
    got = [(r[col["group"]], r[col["rank"]], r[col["run"]]) for r in board.rows]
    # The long-context reference (0.95) and the standard-tier run (0.99) are never ranked against lite runs.
    assert got == [("1", "1", "hi"), ("1", "2", "lo"), ("1", "-", "none"), ("2", "1", "lc"), ("3", "1", "std")]
    assert any("ranked separately" in n for n in board.notes)
    rows = list(csv.DictReader(io.StringIO(board.csv)))
    assert rows[0]["composite"] == "0.8" and rows[2]["flags"] == "no composite on 1 episode(s)"


def test_budget_ties_at_displayed_precision_share_a_rank(tmp_path: Path) -> None:
    runs = [budget_run(tmp_path / "a", agent="a", composite=0.5001),
            budget_run(tmp_path / "b", agent="b", composite=0.4999),
            budget_run(tmp_path / "c", agent="c", composite=0.3)]
    board = get_family("budget").leaderboard(runs)
    assert [r[1] for r in board.rows] == ["=1", "=1", "3"]


def test_mixed_families_get_separate_boards(st_run: Path, tmp_path: Path) -> None:
    b1 = budget_run(tmp_path / "b1", agent="native", composite=0.7)
    b2 = budget_run(tmp_path / "b2", agent="vector", composite=0.6)
    res = CliRunner().invoke(app, ["leaderboard", str(st_run), str(b1), str(b2), "--out-md", str(tmp_path / "b.md"),
                                   "--out-csv", str(tmp_path / "b.csv")])
    assert res.exit_code == 0, res.output
    text = flat(res.output)
    assert "budget family" in text and "each family is ranked on its own board" in text
    st_rows = list(csv.DictReader(io.StringIO((tmp_path / "b-statetrack.csv").read_text())))
    bu_rows = list(csv.DictReader(io.StringIO((tmp_path / "b-budget.csv").read_text())))
    assert [r["run"] for r in st_rows] == ["st_run"]
    assert [(r["run"], r["rank"]) for r in bu_rows] == [("b1", "1"), ("b2", "2")]
    md = (tmp_path / "b.md").read_text()
    assert "## statetrack family" in md and "## budget family" in md


def test_mixed_families_refuse_a_csv_target_that_is_not_a_file(st_run: Path, tmp_path: Path) -> None:
    # One CSV per family goes beside the name given; beside a FIFO (or /dev/stdout) that would litter its folder.
    b1 = budget_run(tmp_path / "b1", agent="native", composite=0.7)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    res = CliRunner().invoke(app, ["leaderboard", str(st_run), str(b1), "--out-csv", str(fifo)])
    assert res.exit_code == 2 and "must name a file" in flat(res.output), res.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b1", "pipe"]


def test_a_statetrack_only_board_keeps_its_files(st_run: Path, tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["leaderboard", str(st_run), "--out-csv", str(tmp_path / "b.csv")])
    assert res.exit_code == 0, res.output
    assert [r["run"] for r in csv.DictReader(io.StringIO((tmp_path / "b.csv").read_text()))] == ["st_run"]
    assert not (tmp_path / "b-statetrack.csv").exists()


def test_budget_compare_pairs_by_episode_not_by_order(tmp_path: Path) -> None:
    # A holds an episode B never ran, first in folder order: pairing by position would pair seed 5 with seed 0
    # and seed 0 with seed 2 (mean -0.2); pairing by episode gives +0.2 on the two shared episodes.
    budget_run(tmp_path / "a" / "x0", agent="a", composite=0.9, seed=5)  # only in A
    budget_run(tmp_path / "a" / "x1", agent="a", composite=0.5, seed=0)
    budget_run(tmp_path / "a" / "x2", agent="a", composite=0.1, seed=2)
    budget_run(tmp_path / "b" / "x0", agent="b", composite=0.7, seed=0)
    budget_run(tmp_path / "b" / "x1", agent="b", composite=0.3, seed=2)
    res = CliRunner().invoke(app, ["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--bootstrap", "500"])
    assert res.exit_code == 0, res.output
    text = flat(res.output)
    assert "shared episodes │ 2" in text
    assert "mean difference │ +0.2000" in text
    assert "0.3000 / 0.5000" in text  # composite A / B over the shared episodes
    assert "1 episode(s) of A have no scored counterpart" in text


def test_budget_compare_refuses_ambiguous_or_disjoint_sides(tmp_path: Path) -> None:
    budget_run(tmp_path / "a" / "r1", agent="a", composite=0.1)
    budget_run(tmp_path / "a" / "r2", agent="a", composite=0.2)  # the same episode twice
    budget_run(tmp_path / "b" / "r1", agent="b", composite=0.3)
    res = CliRunner().invoke(app, ["compare", str(tmp_path / "a"), str(tmp_path / "b")])
    assert res.exit_code == 2 and "was run twice" in flat(res.output)
    budget_run(tmp_path / "c" / "r1", agent="c", composite=0.3, seed=9)
    res = CliRunner().invoke(app, ["compare", str(tmp_path / "b"), str(tmp_path / "c")])
    assert res.exit_code == 2 and "share no episode" in flat(res.output)


def test_compare_never_mixes_families(st_run: Path, tmp_path: Path) -> None:
    b = budget_run(tmp_path / "b", agent="native", composite=0.7)
    res = CliRunner().invoke(app, ["compare", str(st_run), str(b)])
    assert res.exit_code == 2 and "cannot mix statetrack and budget-family runs" in flat(res.output)
    res = CliRunner().invoke(app, ["report", str(st_run), str(b), "--out", str(tmp_path / "r.html")])
    assert res.exit_code == 2 and "cannot mix" in flat(res.output)


def test_a_real_budget_run_joins_the_board(tmp_path: Path) -> None:
    from amemgym.families.budget.units import run_episode
    from amemgym.llm.client import LLMClient
    from amemgym.testing.scripted_model import ScriptedBackend

    episode = build_episode("lite", "films", 0)
    env = tmp_path / "data.json"
    save_episode(episode, env)
    llm = LLMClient(backends={"agent": ScriptedBackend(lambda req: json.dumps({"tool": "done", "args": {}}))})
    results = asyncio.run(run_episode(env, "native", tmp_path / "lazy", llm))
    res = CliRunner().invoke(app, ["leaderboard", str(tmp_path / "lazy"), "--out-csv", str(tmp_path / "b.csv")])
    assert res.exit_code == 0, res.output
    (row,) = csv.DictReader(io.StringIO((tmp_path / "b.csv").read_text()))
    assert float(row["composite"]) == pytest.approx(results["score"]["composite"])
    assert row["tier"] == "lite" and row["protocol"] == "budget/v1"


def test_a_board_too_wide_for_the_terminal_keeps_every_value_readable() -> None:
    # A captured 80-column run of `amemgym leaderboard` cut every budget column to "…"; now each row becomes
    # a field/value block instead.
    from rich.console import Console

    from amemgym.commands.report import _board_table
    from amemgym.families import Board

    columns = tuple(f"column number {i}" for i in range(12))
    board = Board(family="x", title="t", columns=columns, rows=[[f"value-{i}" for i in range(12)]], notes=[],
                  markdown="", csv="")
    console = Console(width=80, record=True)
    console.print(_board_table(board, console.width))
    text = console.export_text()
    assert all(f"column number {i}: value-{i}" in text for i in range(12))
    wide = Console(width=400, record=True)
    wide.print(_board_table(board, wide.width))
    assert "value-11" in wide.export_text() and "column number 11:" not in wide.export_text()


def test_an_episode_file_saved_with_a_byte_order_mark_keeps_its_family(tmp_path: Path) -> None:
    # Some editors save UTF-8 with a BOM; the statetrack loader reads through it, and so must family detection.
    plain, marked = tmp_path / "plain.json", tmp_path / "marked.json"
    save_episode(build_episode("lite", "films", 0), plain)
    marked.write_bytes(b"\xef\xbb\xbf" + plain.read_bytes())
    assert family_for_env(marked).name == "budget"


def test_an_episode_file_with_its_family_key_written_last_keeps_its_family(tmp_path: Path) -> None:
    # JSON objects are unordered: a tool that sorts keys (json.dump(sort_keys=True)) writes "family" after the
    # entities and events, many kilobytes in. The file is the same episode and must not be read as statetrack.
    plain, resorted = tmp_path / "plain.json", tmp_path / "sorted.json"
    save_episode(build_episode("lite", "films", 0), plain)
    raw = json.loads(plain.read_text())
    resorted.write_text(json.dumps(raw, sort_keys=True, indent=1))
    assert resorted.read_bytes().find(b'"family"') > 4096
    assert family_for_env(resorted).name == "budget"
    res = CliRunner().invoke(app, ["validate", "--env", str(resorted)])
    assert "expected a JSON list of users" not in flat(res.output)


def test_a_large_object_file_that_names_no_family_is_not_parsed_to_find_one(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    # Only a file holding the word "family" is parsed for it: a statetrack file wrapped in an object (several
    # megabytes, say) is not read into memory and parsed a second time before its own loader streams it.
    import amemgym.families as families

    wrapped = tmp_path / "wrapped.json"
    users = [{"id": f"u{i}", "pad": "x" * 500} for i in range(5000)]
    wrapped.write_text(json.dumps({"users": users}))

    def never(*args: object, **kwargs: object) -> object:
        raise AssertionError("parsed")

    monkeypatch.setattr(families.json, "loads", never)
    assert families.declared_family(wrapped) is None
