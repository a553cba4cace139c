"""The consoles amemgym prints to: rich consoles whose output is scrubbed of API keys."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.text import Text

from .redact import redact_content

__all__ = ["new_console", "styled"]


def new_console(**options: Any) -> Console:
    """A rich ``Console`` whose output is scrubbed of API keys (:func:`amemgym.redact.redact_content`).

    Every console amemgym prints to is made here, so a key a server echoed (in a model name, a reply) never
    reaches the terminal or a captured log. Markup is off: the text printed carries paths, names and replies
    that may hold brackets (``--out "runs/a[/b]"``), which markup would swallow or fail on. Colour is asked for
    with :func:`styled`.
    """
    class _RedactingConsole(Console):
        # Each text is scrubbed before it is laid out (a key wrapped over two lines or cut at a table cell's
        # width would no longer match), and the rendered output once more.
        def render_str(self, text: str, **options: Any) -> Text:
            return super().render_str(redact_content(text), **options)

        def _render_buffer(self, buffer: Any) -> str:
            return redact_content(super()._render_buffer(buffer))

    options.setdefault("markup", False)
    return _RedactingConsole(**options)


def styled(style: str, head: str, rest: str = "") -> Text:
    """``head`` in ``style`` followed by ``rest`` as it is: a coloured label before text that is never parsed."""
    return Text.assemble((redact_content(head), style), redact_content(rest))
