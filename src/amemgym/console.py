"""The consoles amemgym prints to: rich consoles whose output is scrubbed of API keys."""

from __future__ import annotations

import re
from typing import Any

from rich.console import Console
from rich.text import Text

from .redact import redact_content

__all__ = ["new_console", "styled"]

#: Control characters but tab and newline, C1 ones included (0x9b starts a control sequence on some terminals).
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _shown(text: str) -> str:
    """``text`` scrubbed of API keys and of control characters: a reply, a model name or an error a server sent
    may hold escape sequences, which on a terminal move the cursor and erase or rewrite lines already printed."""
    return _CONTROL.sub("", redact_content(text))


def new_console(**options: Any) -> Console:
    """A rich ``Console`` whose output is scrubbed of API keys (:func:`amemgym.redact.redact_content`).

    Every console amemgym prints to is made here, so a key a server echoed (in a model name, a reply) never
    reaches the terminal or a captured log, and so is every control character a server may have sent. Markup
    is off: the text printed carries paths, names and replies that may hold brackets (``--out "runs/a[/b]"``),
    which markup would swallow or fail on. Colour is asked for with :func:`styled`.
    """
    class _RedactingConsole(Console):
        # Each text is scrubbed before it is laid out (a key wrapped over two lines or cut at a table cell's
        # width would no longer match), and the rendered output once more.
        def render_str(self, text: str, **options: Any) -> Text:
            return super().render_str(_shown(text), **options)

        def _render_buffer(self, buffer: Any) -> str:
            return redact_content(super()._render_buffer(buffer))

    options.setdefault("markup", False)
    return _RedactingConsole(**options)


def styled(style: str, head: str, rest: str = "") -> Text:
    """``head`` in ``style`` followed by ``rest`` as it is: a coloured label before text that is never parsed."""
    return Text.assemble((_shown(head), style), _shown(rest))
