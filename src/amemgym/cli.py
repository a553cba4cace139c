"""The ``amemgym`` command line. Every command turns an amemgym error into one line and an exit code.

Commands live in ``amemgym.commands.<name>`` modules, each with ``register(app)``.
"""

from __future__ import annotations

import importlib

import typer

# Plain help (no rich_markup_mode): rich-formatted help imports markdown-it and typer.rich_utils, about half
# of what `amemgym run --help` costs. Typer 0.29 builds a pydantic adapter for every parameter of every
# command at start-up, so pyproject.toml keeps typer below it.
app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False, rich_markup_mode=None,
                  help="amemgym: measure and improve the memory of LLM assistants in long conversations.")

#: Command modules under amemgym.commands, registered in this order (the order of ``--help``).
COMMAND_MODULES: tuple[str, ...] = (
    "info", "run", "generate", "check_agent", "report", "validate", "export", "evolve",
)


def _register_commands() -> None:
    for name in COMMAND_MODULES:
        importlib.import_module(f"{__package__}.commands.{name}").register(app)


_register_commands()


def main() -> None:
    """Console-script entry point."""
    from .fastexit import exit_now

    try:
        app()
    except SystemExit as done:
        exit_now(done.code)
        raise
