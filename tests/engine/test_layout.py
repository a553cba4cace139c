"""The layout shows the architecture: the shared packages never reach into the statetrack family, and the
statetrack modules live only in their family's folder (no leftover module at an old path)."""

from __future__ import annotations

import ast
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from source_ast import module_name, named_modules, parse

SRC = Path(__file__).resolve().parents[2] / "src"
PKG = SRC / "amemgym"


def imported_modules(path: Path) -> set[str]:
    """Every module ``path`` imports, relative imports resolved against its package."""
    module, is_package = module_name(path, SRC), path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.update(named_modules(node, module, is_package))
    return found


@pytest.mark.parametrize("folder", ["engine", "scoring", "families/budget", "llm", "records", "agents"])
def test_shared_packages_and_other_families_never_import_the_statetrack_family(folder: str) -> None:
    offenders = {
        f"{path.relative_to(PKG)}: {name}"
        for path in (PKG / folder).rglob("*.py")
        for name in imported_modules(path)
        if name == "amemgym.families.statetrack" or name.startswith("amemgym.families.statetrack.")
    }
    assert not offenders, sorted(offenders)


def test_the_resolver_sees_relative_imports_of_the_family() -> None:
    # The check above would pass vacuously if relative imports were not resolved: the family's own adapter
    # imports its modules relatively, and they must be seen.
    assert "amemgym.families.statetrack.options" in imported_modules(PKG / "families/statetrack/family.py")


@pytest.mark.parametrize("old", [
    "amemgym.data", "amemgym.generate", "amemgym.simulate", "amemgym.validity", "amemgym.compat",
    "amemgym.scoring.asking", "amemgym.run.engine", "amemgym.run.episode", "amemgym.run.driver",
    "amemgym.run.command", "amemgym.run.layout", "amemgym.run.flags", "amemgym.run.lock",
    "amemgym.run.progress", "amemgym.run.trials", "amemgym.run.processes", "amemgym.run.ray_executor", "amemgym.run",
])
def test_no_module_is_left_at_an_old_path(old: str) -> None:
    try:
        spec = importlib.util.find_spec(old)
    except ModuleNotFoundError:  # its parent package is gone too (``amemgym.run``)
        return
    # A folder left holding only __pycache__ after a checkout is a namespace package with no origin: no module.
    assert spec is None or spec.origin is None, f"{old} still exists; the family's module lives in families/"


def test_the_original_entry_paths_still_import() -> None:
    for name in ("overall", "upperbound", "random", "diagnosis"):
        assert importlib.util.find_spec(f"amemgym.eval.{name}") is not None


def test_scoring_registers_no_metric_of_its_own() -> None:
    # The shared scoring package is the registry and the interval helpers; every state-tracking metric (the
    # scores, failures, headline, display order) registers from the family. Importing every scoring module
    # alone, in a fresh interpreter, must leave the registry empty and the family unimported.
    modules = sorted(".".join(p.relative_to(SRC).with_suffix("").parts).removesuffix(".__init__")
                     for p in (PKG / "scoring").rglob("*.py"))
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        "from amemgym.scoring.registry import registered, unit_metrics\n"
        "print(len(registered()), len(unit_metrics('statetrack')),"
        " any(m.startswith('amemgym.families') for m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(SRC)}).stdout.split()
    assert out == ["0", "0", "False"], out


def test_the_family_registers_the_statetrack_metrics_in_their_order() -> None:
    from amemgym.families.statetrack import metrics
    from amemgym.scoring.registry import headline, in_display_order, registered

    assert headline().name == metrics.HEADLINE == "memory_score"
    builtins = [m.name for m in registered() if m.fn.__module__ == metrics.__name__ or m.group]
    assert builtins[:4] == ["overall", "random", "upper_bound", "memory_score"]
    assert [m.name for m in in_display_order()][:4] == ["overall", "upper_bound", "random", "memory_score"]
    assert {m.name for m in registered() if m.group == metrics.FAILURE_GROUP} == {
        "write_rate", "read_rate", "utilization_rate"}


# ---- no family module writes into a run directory --------------------------------------------------------
#: The file writers of ``amemgym.storage``: a family hands its records to the engine's UnitWriter instead.
STORAGE_WRITERS = {"atomic_write_json", "atomic_write_text", "atomic_write_bytes", "append_jsonl", "append_text",
                   "write_output_text", "write_output_json"}
#: Method calls that change files in place (``open`` is checked by its mode).
FILE_CHANGES = {"write_text", "write_bytes", "rename", "unlink", "rmtree", "remove", "rmdir"}
#: The family modules that write files, none of them into a run directory being played, and what they write.
WRITES_OUTSIDE_RUNS = {
    "families/budget/commands.py": "the --json summary of `generate`, at a path the user names",
    "families/budget/export.py": "an export file the user names",
    "families/budget/gym_env.py": "removes the Gym environment's own temporary work folder",
    "families/budget/io.py": "generated environment files",
    "families/statetrack/family.py": "generation and validity reports and report pages, at paths the user names",
    "families/statetrack/data/io.py": "environment files",
    "families/statetrack/generate/llm/pipeline.py": "generation outputs and their resume fingerprints",
    "families/statetrack/compat/flags.py": "empties the original tools' --output_dir on --reset",
    "families/statetrack/compat/original_layout.py": "the original release's output folder, and the run directory "
                                                      "an off-policy import converts before any run plays in it",
    "families/statetrack/compat/random.py": "the original random baseline's output files",
    "families/statetrack/compat/upperbound.py": "the original upper-bound tool's output files",
}


def file_writes(path: Path) -> list[str]:
    """What ``path`` does that writes a file: storage writers it imports, opens for writing, in-place changes."""
    found = []
    for node in ast.walk(parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[-1] == "storage":
            found += [f"imports {a.name}" for a in node.names if a.name in STORAGE_WRITERS]
        elif isinstance(node, ast.Call):
            fn = node.func
            name = fn.attr if isinstance(fn, ast.Attribute) else fn.id if isinstance(fn, ast.Name) else ""
            if name == "open":
                modes = [a.value for a in [*node.args, *(k.value for k in node.keywords if k.arg == "mode")]
                         if isinstance(a, ast.Constant) and isinstance(a.value, str)]
                # open(path, mode) takes the mode second; Path.open(mode) first.
                if any(set(m) & set("wax+") and set(m) <= set("rwaxbt+") for m in modes):
                    found.append(f"open(..., {modes!r})")
            elif name in FILE_CHANGES:
                found.append(f"{name}()")
    return found


def test_no_family_module_writes_into_a_run_directory() -> None:
    # The rule: a family module never writes a file of a run directory itself. Its records (statetrack's
    # session lines, checkpoints, snapshots, evaluations, traces; a unit's record and checkpoint) go to the
    # engine (UnitWriter, Checkpoint, UnitRunDir), which owns paths, atomic writes, fsync and commit order.
    # The only family modules that write files at all are listed with what they write, none a run directory
    # being played; a new writer must either go through the engine or be added here with its reason.
    # Self-evolution writes its cycles into the run directory from inside an episode: it is held to the rule too.
    modules = sorted([*(PKG / "families").rglob("*.py"), *(PKG / "evolve").rglob("*.py")])
    writers = {str(p.relative_to(PKG)): file_writes(p) for p in modules}
    offenders = {m: w for m, w in writers.items() if w and m not in WRITES_OUTSIDE_RUNS}
    assert not offenders, offenders
    stale = [m for m in WRITES_OUTSIDE_RUNS if not writers.get(m)]
    assert not stale, f"listed but writing nothing (drop them): {stale}"


def test_the_write_check_sees_each_kind_of_write(tmp_path: Path) -> None:
    # It would pass vacuously if it missed a kind of write; each of these must be caught.
    cases = {
        "from ...storage import append_jsonl": ["imports append_jsonl"],
        "open(p, 'a')": ["open(..., ['a'])"],
        "p.open(mode='wb')": ["open(..., ['wb'])"],
        "p.write_text('x')": ["write_text()"],
        "p.rename(q)": ["rename()"],
        "open(p, 'rb')": [],
        "'a'.replace('a', 'b')": [],
    }
    for code, want in cases.items():
        f = tmp_path / "m.py"
        f.write_text(code + "\n")
        assert file_writes(f) == want, code
