"""Model output (and any input file) is data: nothing in the package can execute or unpickle text.

A cheap static guard over the syntax tree of every module in ``src/amemgym``. The other half of the
untrusted-text story, the HTML report escaping hostile model output, is tested end to end by
``tests/report/test_report_runs.py::test_report_writes_self_contained_html_and_figures`` (script-closing tags and
``onerror`` images in replies and memories survive only escaped) and ``tests/report/test_report_browser.py`` (the
page in headless Chromium runs no injected script).
"""

from __future__ import annotations

import ast
from pathlib import Path

from source_ast import parse

SRC = Path(__file__).resolve().parent.parent / "src" / "amemgym"

#: Builtins that run or compile code from a string.
CODE_BUILTINS = {"eval", "exec", "compile", "__import__"}
#: module.function calls that turn bytes or text into code or arbitrary objects.
CODE_CALLS = {("pickle", "loads"), ("pickle", "load"), ("marshal", "loads"), ("marshal", "load"),
              ("dill", "loads"), ("cloudpickle", "loads"), ("yaml", "load"), ("yaml", "unsafe_load"),
              ("yaml", "full_load"), ("os", "system"), ("os", "popen")}
CODE_MODULES = {"pickle", "marshal", "dill", "cloudpickle", "shelve"}
#: PyYAML loaders that can build arbitrary objects (only SafeLoader and CSafeLoader may be named).
UNSAFE_YAML_LOADERS = {"Loader", "UnsafeLoader", "FullLoader", "CLoader", "CUnsafeLoader", "CFullLoader"}


def violations(source: str, name: str) -> list[str]:
    """Places in ``source`` that could execute or deserialise code."""
    found = []
    for node in ast.walk(parse(source, name)):
        where = f"{name}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id in CODE_BUILTINS:
                found.append(f"{where}: {func.id}()")
            if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) \
                    and (func.value.id, func.attr) in CODE_CALLS:
                found.append(f"{where}: {func.value.id}.{func.attr}()")
            if any(k.arg == "shell" and not (isinstance(k.value, ast.Constant) and k.value.value is False)
                   for k in node.keywords):
                found.append(f"{where}: shell=")
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "yaml" \
                and node.attr in UNSAFE_YAML_LOADERS:
            found.append(f"{where}: yaml.{node.attr}")
        elif isinstance(node, ast.Import):
            found += [f"{where}: import {a.name}" for a in node.names if a.name.split(".")[0] in CODE_MODULES]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in CODE_MODULES:
            found.append(f"{where}: from {node.module} import")
    return found


def test_no_module_can_execute_or_unpickle_text() -> None:
    files = sorted(SRC.rglob("*.py"))
    assert len(files) > 50  # the scan really covers the package
    found = [v for path in files for v in violations(path.read_text(encoding="utf-8"), str(path.relative_to(SRC)))]
    assert found == []


def test_the_guard_catches_each_pattern() -> None:
    planted = ("import pickle\nfrom marshal import loads\neval(reply)\nexec(reply)\npickle.loads(b)\n"
               "yaml.load(t)\nsubprocess.run(cmd, shell=True)\nos.system(reply)\nyaml.CLoader(t).get_single_data()\n"
               "loader = getattr(yaml, 'x', yaml.UnsafeLoader)\n")
    assert len(violations(planted, "planted.py")) == 10
    assert violations("yaml.safe_load(t)\njson.loads(t)\nsubprocess.run(cmd, shell=False)\n"
                      "getattr(yaml, 'CSafeLoader', yaml.SafeLoader)(t).get_single_data()\n", "ok.py") == []
