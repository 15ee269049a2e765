"""Text on its way to a terminal: terminal escapes and bidirectional controls written as escapes.

A project, node, model or profile name comes from a file anyone can write. Printed raw, an ESC
sequence in it recolours or clears the terminal, moves the cursor or sets the window title, and a
right-to-left override (U+202E) makes a line read differently from what it says. The command line
writes everything through :class:`TerminalText`, which writes each such character as a ``\\uXXXX``
escape (valid inside JSON strings too, so ``--json`` output stays JSON). Line feeds and tabs pass.

Only the standard library is imported here: the command line installs it before any command runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any, TextIO

from studio.core.shown_text import terminal_safe  # the stream's one rule; stdlib only


class TerminalText:
    """A text stream that writes :func:`terminal_safe` text to ``stream`` (everything else, such
    as ``fileno`` or ``isatty``, is the stream's own)."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    @property
    def wrapped(self) -> TextIO:
        """The stream written to."""
        return self._stream

    def write(self, text: str) -> int:
        self._stream.write(terminal_safe(text))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)
