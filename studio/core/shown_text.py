"""Text from a file on its way to a reader: terminal escapes, bidirectional controls and (in a
table cell) line breaks written as escapes, so a name cannot recolour a terminal, reorder a line or
forge a row. Used by the terminal stream (:mod:`studio.terminal`), the command line's tables and
the report's HTML cells. Only the standard library is imported here.
"""

from __future__ import annotations

import re
import unicodedata

#: Characters that are always safe (printable ASCII, line feed, tab): the fast path.
_PLAIN = re.compile(r"[\t\n\x20-\x7e]*")
#: Every other character: looked at one by one (most of them, such as "×" or "µ", pass).
_OTHER = re.compile(r"[^\t\n\x20-\x7e]")
#: Unicode categories written as escapes: controls (C0, C1, DEL), format characters (bidirectional
#: controls, zero-width characters), line/paragraph separators and lone surrogates.
UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})


def _escape(ch: str) -> str:
    code = ord(ch)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000  # a UTF-16 surrogate pair, as JSON writes characters beyond the BMP
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def terminal_safe(text: str) -> str:
    """``text`` with every unsafe character but line feed and tab written as ``\\uXXXX``."""
    if _PLAIN.fullmatch(text):
        return text
    return _OTHER.sub(_escaped_if_unsafe, text)


def _escaped_if_unsafe(match: re.Match[str]) -> str:
    ch = match.group()
    return _escape(ch) if unicodedata.category(ch) in UNSAFE_CATEGORIES else ch


#: What :func:`one_line` looks at: every character but printable ASCII.
_NOT_PRINTABLE = re.compile(r"[^\x20-\x7e]")


def one_line(text: str) -> str:
    """``text`` as one table cell: like :func:`terminal_safe`, and line feeds and tabs written as
    ``\\n`` / ``\\t`` too, so a name from a file cannot start a line of its own (a forged
    ``fits  yes`` row) or shift the columns after it."""
    if _PLAIN_CELL.fullmatch(text):
        return text
    return _NOT_PRINTABLE.sub(_cell_char, text)


_PLAIN_CELL = re.compile(r"[\x20-\x7e]*")
_CELL_ESCAPES = {"\n": "\\n", "\t": "\\t"}


def _cell_char(match: re.Match[str]) -> str:
    ch = match.group()
    if ch in _CELL_ESCAPES:
        return _CELL_ESCAPES[ch]
    return _escape(ch) if unicodedata.category(ch) in UNSAFE_CATEGORIES else ch
