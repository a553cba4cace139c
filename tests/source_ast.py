"""``ast.parse`` for the tests that read the package's source, safe from a CPython 3.11 bug.

On 3.11 (python/cpython#106905, fixed in 3.12) the parser keeps its depth count in state shared by every
parse. A garbage collection during a parse can run a finaliser that parses too: an asyncio task left by an
earlier test logs "exception was never retrieved", and formatting that traceback parses its source line.
The outer parse then fails with ``SystemError: AST constructor recursion depth mismatch``. Pausing the
collector while parsing keeps finalisers out of the parse (they run at the next collection instead).
"""

from __future__ import annotations

import ast
import gc


def parse(source: str, filename: str = "<unknown>") -> ast.Module:
    """The module ``source`` parses to, with no garbage collection while it is parsed."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return ast.parse(source, filename)
    finally:
        if was_enabled:
            gc.enable()
