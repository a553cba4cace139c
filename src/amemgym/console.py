"""The consoles amemgym prints to: rich consoles whose output is scrubbed of API keys."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from .redact import redact_content

__all__ = ["new_console"]


def new_console(**options: Any) -> Console:
    """A rich ``Console`` whose output is scrubbed of API keys (:func:`amemgym.redact.redact_content`).

    Every console amemgym prints to is made here, so a key a server echoed (in a model name, a reply) never
    reaches the terminal or a captured log.
    """
    class _RedactingConsole(Console):
        def _render_buffer(self, buffer: Any) -> str:
            return redact_content(super()._render_buffer(buffer))

    return _RedactingConsole(**options)
