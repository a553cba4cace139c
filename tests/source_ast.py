"""Reading the package's source for the layout and import tests: ``ast.parse`` safe from a CPython 3.11 bug,
and the modules an import statement names.

On 3.11 (python/cpython#106905, fixed in 3.12) the parser keeps its depth count in state shared by every
parse. A garbage collection during a parse can run a finaliser that parses too: an asyncio task left by an
earlier test logs "exception was never retrieved", and formatting that traceback parses its source line.
The outer parse then fails with ``SystemError: AST constructor recursion depth mismatch``. Pausing the
collector while parsing keeps finalisers out of the parse (they run at the next collection instead).
"""

from __future__ import annotations

import ast
import gc
from pathlib import Path


def parse(source: str, filename: str = "<unknown>") -> ast.Module:
    """The module ``source`` parses to, with no garbage collection while it is parsed."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return ast.parse(source, filename)
    finally:
        if was_enabled:
            gc.enable()


def module_name(path: Path, root: Path) -> str:
    """The dotted name of the module at ``path``, ``root`` being the folder its top package sits in."""
    return ".".join(path.relative_to(root).with_suffix("").parts).removesuffix(".__init__")


def named_modules(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> list[str]:
    """The modules an import statement in ``module`` names, relative imports resolved (``from a import b``
    names ``a`` first, then ``a.b``, which may be a module or a name in ``a``)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    base = node.module or ""
    if node.level:
        parts = (module if is_package else module.rsplit(".", 1)[0]).split(".")
        base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
    return [base, *(f"{base}.{a.name}" for a in node.names)]
