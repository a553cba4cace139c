"""The layout shows the architecture: the shared packages never reach into the statetrack family, and the
statetrack modules live only in their family's folder (no leftover module at an old path)."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
PKG = SRC / "amemgym"


def imported_modules(path: Path) -> set[str]:
    """Every module ``path`` imports, relative imports resolved against its package."""
    package = ".".join(path.relative_to(SRC).with_suffix("").parts)
    if path.name != "__init__.py":
        package = package.rsplit(".", 1)[0]
    else:
        package = package.removesuffix(".__init__")
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
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
