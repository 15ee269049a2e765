"""Shell text that cannot run anything else: ``#`` comments that stay one line, single shell words
(:func:`quote`), constant fragments (:class:`Raw`) and commands split over lines."""

from __future__ import annotations

import shlex
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from studio.core.errors import StudioError
from studio.io.export.checks.safety import first_unsafe_char

_BREAKS = {"\n", "\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"}


def one_line(text: str) -> str:
    """``text`` with every line break and control character shown as an escape, so it can sit
    inside a ``#`` comment (shell or YAML) without ending it."""
    text = str(text)
    if text.isascii() and text.isprintable():
        return text
    out = []
    for ch in text:
        if ch in _BREAKS or unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp", "Cs"):
            out.append(ch.encode("unicode_escape").decode("ascii"))
        else:
            out.append(ch)
    return "".join(out)


def comment(lines: Iterable[str]) -> str:
    """A ``#`` comment block, one line per entry (user text made single-line first)."""
    return "".join(f"# {one_line(line)}".rstrip() + "\n" for line in lines)


def quote(value: object) -> str:
    """One literal shell word (``shlex.quote``); ``$()``, backticks, spaces and newlines stay text.

    Raises
    ------
    StudioError
        The value holds a bidirectional-control, format or control character other than a line
        feed or tab: quoted or not, it would make the line read differently from what runs.
    """
    text = str(value)
    plain = text.isascii() and text.replace("\n", "").replace("\t", "").isprintable()
    bad = None if plain else first_unsafe_char(text.replace("\n", "").replace("\t", ""))
    if bad is not None:
        raise StudioError(f"'{one_line(text)}' holds {bad}, which is not written into a launch line")
    return shlex.quote(text)


@dataclass(frozen=True)
class Raw:
    """A shell fragment written as is (an environment reference such as ``"$NODE_RANK"``).

    Only the exporters create these, from constant text; user values are never ``Raw``.
    """

    text: str


Word = str | int | float | Raw


def word(w: Word) -> str:
    """Render one word: ``Raw`` as is, anything else quoted."""
    if isinstance(w, Raw):
        return w.text
    if isinstance(w, bool):
        raise TypeError("booleans are written as flags, not words")
    return quote(w)


def shell_command(groups: Sequence[Sequence[Word]], env: Sequence[tuple[str, Word]] = ()) -> str:
    """A command split over lines: each group (a program, or a flag with its values) on its own
    line joined by ``\\``; ``env`` assignments go in front of the program."""
    prefix = "".join(f"{k}={word(v)} " for k, v in env)
    lines = [" ".join(word(w) for w in g) for g in groups if g]
    return prefix + " \\\n    ".join(lines) + "\n"


def flag_groups(flags: Sequence[tuple[str, object]]) -> list[list[Word]]:
    """``(flag, value)`` pairs as command groups: ``True`` → the bare flag, ``None`` skipped,
    a list → the flag followed by each value."""
    out: list[list[Word]] = []
    for name, value in flags:
        if value is None or value is False:
            continue
        if value is True:
            out.append([name])
        elif isinstance(value, (list, tuple)):
            out.append([name, *value])
        else:
            out.append([name, value])  # type: ignore[list-item]  # exporters pass str, int, float or Raw
    return out
