"""The ``amemgym`` command line. Every command turns an amemgym error into one line and an exit code.

Commands live in ``amemgym.commands.<name>`` modules, each with ``register(app)``.
"""

from __future__ import annotations

import importlib

import typer

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
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
