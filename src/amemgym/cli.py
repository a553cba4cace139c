"""The ``amemgym`` command line. Every command turns an amemgym error into one line and an exit code.

Commands live in ``amemgym.commands.<name>`` modules, each with ``register(app)``.
"""

from __future__ import annotations

import importlib
import re
from typing import Any

import typer
from typer.core import TyperGroup

from .config import looks_like_key
from .redact import MASK, redact

_TOKEN = re.compile(r"[^\s()'\",]+")
#: click's usage error (recent typer releases carry their own copy of click), found through a public subclass.
_USAGE_ERROR: type[Any] = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "UsageError")


class _Commands(TyperGroup):
    """The command group. A usage error quotes what was typed, and a key pasted as a stray argument (``--set
    llm.default.api_key sk-...``, the ``=`` forgotten) would be printed back: its message is scrubbed first."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except _USAGE_ERROR as exc:
            exc.message = _TOKEN.sub(lambda m: MASK if looks_like_key(m.group(0)) else m.group(0),
                                     redact(exc.message))
            raise


app = typer.Typer(cls=_Commands, add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="amemgym: measure and improve the memory of LLM assistants in long conversations.")

#: Command modules under amemgym.commands, registered in this order (the order of ``--help``).
COMMAND_MODULES: tuple[str, ...] = (
    "info", "run", "generate", "check_agent", "report", "validate", "export", "evolve",
)

for _name in COMMAND_MODULES:
    importlib.import_module(f"{__package__}.commands.{_name}").register(app)


def main() -> None:
    """Console-script entry point."""
    app()
