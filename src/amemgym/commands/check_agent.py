"""``amemgym check-agent``: run the conformance checker on an agent."""

from __future__ import annotations

from typing import Annotated

import typer

from ..agents.checker import Limits, check_agent_isolated
from ..cli_common import ConfigOpt, SetOpt, handled, out
from ..config import load_config
from ..llm.client import register_keys


def register(app: typer.Typer) -> None:
    """Add the ``check-agent`` command to ``app``."""

    @app.command("check-agent")
    @handled
    def check_agent_command(
        agent: Annotated[str, typer.Argument(help="Agent name (awe-2-4-30), module:factory, or config file.")],
        config: ConfigOpt = None,
        set_: SetOpt = None,
    ) -> None:
        """Check that an agent honours the MemoryAgent contract (uses a scripted fake LLM; no endpoint needed).

        Each call into a plug-in is held to run.agent_call_timeout, and its import and factory to
        run.agent_factory_timeout (settings, as in a run).
        """
        cfg = load_config(config, set_)
        register_keys(cfg.llm)  # no client is made here, but the plug-in's code may print or raise with a key
        report = check_agent_isolated(agent, Limits.of(cfg))
        for line in report.lines():
            out.print(line, highlight=False, markup=False)
        if not report.passed:
            raise typer.Exit(1)
