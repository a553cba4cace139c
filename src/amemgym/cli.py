"""The ``amemgym`` command line. Every command turns an amemgym error into one line and an exit code.

Commands live in ``amemgym.commands.<name>`` modules, each with ``register(app)``.
"""

from __future__ import annotations

import importlib
import sys

import typer
import typer.main


def _new_app() -> typer.Typer:
    # Plain help (no rich_markup_mode): rich-formatted help imports markdown-it and typer.rich_utils, about
    # half of what `amemgym run --help` costs. Typer 0.29 builds a pydantic adapter for every parameter of
    # every command at start-up, so pyproject.toml keeps typer below it.
    return typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                       rich_markup_mode=None,
                       help="amemgym: measure and improve the memory of LLM assistants in long conversations.")


app = _new_app()

#: Command modules under amemgym.commands, registered in this order (the order of ``--help``).
COMMAND_MODULES: tuple[str, ...] = (
    "info", "run", "generate", "check_agent", "report", "validate", "export", "evolve",
)


def _register_commands() -> None:
    for name in COMMAND_MODULES:
        importlib.import_module(f"{__package__}.commands.{name}").register(app)


_register_commands()


def _only() -> None:
    """(The group's callback in :func:`app_for`: there is nothing to do before the command.)"""


def app_for(args: list[str]) -> typer.Typer:
    """The app that runs the command line ``args``: :data:`app` itself, or one holding only the command
    that ``args`` names.

    Typer turns every command of an app into a click command on each invocation (about 30 ms for all of
    them); a command line that names its command needs only that one, and parses and prints the same.
    """
    name = args[0] if args else ""
    for info in app.registered_commands:
        assert info.callback is not None
        if (info.name or typer.main.get_command_name(info.callback.__name__)) == name:
            one = _new_app()
            # A callback keeps it a group (of one command invoked by name), as typer would otherwise make
            # the app that command itself.
            one.callback()(_only)
            one.registered_commands = [info]
            return one
    return app


def main() -> None:
    """Console-script entry point."""
    from .fastexit import exit_now

    try:
        app_for(sys.argv[1:])()
    except SystemExit as done:
        exit_now(done.code)
        raise
