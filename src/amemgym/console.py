"""The consoles amemgym prints to: rich consoles whose output is scrubbed of API keys."""

from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import Iterator
from typing import Any, TextIO

from rich.console import Console
from rich.text import Text

from .redact import redact_content

__all__ = ["new_console", "scrub_standard_streams", "scrubbed_output", "styled"]

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


class _ScrubbedStream:
    """A text stream that passes what is written to ``stream`` scrubbed of API keys (:func:`redact_content`), a
    line at a time: ``print`` writes each of its arguments apart, so a key printed in pieces is whole only once
    its line is. A line still open is written (scrubbed) at each ``flush``. Everything else is ``stream``'s."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._open = ""

    def write(self, text: str) -> int:
        done, newline, self._open = (self._open + text).rpartition("\n")
        if newline:
            self._stream.write(redact_content(done + newline))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if self._open:
            self._stream.write(redact_content(self._open))
            self._open = ""
        self._stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def scrub_standard_streams() -> tuple[TextIO, TextIO]:
    """From now on, what anything in this process prints to ``sys.stdout`` or ``sys.stderr`` (a plug-in's ``print``,
    a log record, a warning) is scrubbed of API keys like a console's output; the streams replaced are returned.
    Writes made at the file descriptor (native code, a subprocess) are not scrubbed."""
    saved = sys.stdout, sys.stderr
    if not isinstance(sys.stdout, _ScrubbedStream):
        sys.stdout = _ScrubbedStream(sys.stdout)  # type: ignore[assignment]
    if not isinstance(sys.stderr, _ScrubbedStream):
        sys.stderr = _ScrubbedStream(sys.stderr)  # type: ignore[assignment]
    return saved


@contextlib.contextmanager
def scrubbed_output() -> Iterator[None]:
    """:func:`scrub_standard_streams` while inside; the streams are put back (their open lines written) after."""
    saved = scrub_standard_streams()
    try:
        yield
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):  # a closed or broken stream has nothing left to show
                stream.flush()
        sys.stdout, sys.stderr = saved
