"""Read a request-length histogram (``--isl-histogram`` / ``--osl-histogram``) from CSV or JSON.

Accepted shapes (weights are relative; equal lengths are added up):

* **CSV / text**: one ``length,weight`` pair per line (comma, semicolon, tab or spaces between),
  or one ``length`` per line (a length seen once: a raw dump of observed lengths). Blank lines and
  lines starting with ``#`` are skipped; a first line that is not numbers is a header.
* **JSON** (a file ending in ``.json``, or text starting with ``[`` or ``{``): a list of
  ``[length, weight]`` pairs or of ``{"length": L, "weight": W}`` objects, or an object
  ``{"histogram": <that list>}``.

Every problem is a :class:`~studio.core.errors.StudioError` naming the file, the line (CSV) or
entry (JSON) and what is allowed.
"""

from __future__ import annotations

import math
import re
from os import PathLike
from pathlib import Path

from studio.core.errors import StudioError
from studio.core.workload import MAX_HISTOGRAM_WEIGHT, LengthDistribution
from studio.io.safe import loads_json_limited, read_text_limited

#: Largest histogram file read (a dump of a million observed lengths fits).
MAX_BYTES = 16 * 1024 * 1024
#: Lengths accepted (tokens), as :class:`~studio.core.workload.LengthDistribution` allows.
MAX_LENGTH = 10_000_000
#: Distinct lengths accepted.
MAX_BINS = 100_000
#: Largest weight of one entry, as :class:`~studio.core.workload.LengthDistribution` allows.
MAX_WEIGHT = MAX_HISTOGRAM_WEIGHT
#: Longest CSV line: "length,weight" with room for a comment; a longer line is not a histogram's.
MAX_LINE = 200

_SPLIT = re.compile(r"[,;\t ]+")
_LEAD = re.compile(r"[\ufeff \t\r\n]*")
_ALLOWED = ("each entry is a length in tokens (a whole number 1..10000000) and an optional weight "
            f"from 0 to {MAX_WEIGHT:.0e}")


def _as_float(value: object) -> float | None:
    """``value`` as a float, or None when it is not a number (or one past a float's range)."""
    try:
        return float(value)  # type: ignore[arg-type]  # any value; what float refuses is None
    except (TypeError, ValueError, OverflowError):
        return None


def _string(value: object, what: str, where: str) -> StudioError:
    return StudioError(f"{where}: {what} {_show(value)} is a string; write the number without quotes "
                       f"({_ALLOWED})")


def _show(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:30]}... ({len(text):,} characters)"


def _token(text: str) -> str:
    """A number as written in the file, for a message (a 400-digit one read as ``inf`` otherwise)."""
    return text if len(text) <= 40 else f"{text[:20]}... ({len(text):,} characters)"


def _length(value: object, where: str, shown: str | None = None) -> int:
    number = _as_float(value)
    if number is None:
        raise StudioError(f"{where}: length {shown or _show(value)} is not a number; {_ALLOWED}")
    if not (math.isfinite(number) and number == int(number) and 1 <= number <= MAX_LENGTH):
        raise StudioError(f"{where}: length {shown or _show(value)} is not a whole number of tokens in 1..{MAX_LENGTH}")
    return int(number)


def _weight(value: object, where: str, shown: str | None = None) -> float:
    number = None if isinstance(value, bool) else _as_float(value)
    if number is None:
        raise StudioError(f"{where}: weight {shown or _show(value)} is not a number; {_ALLOWED}")
    if not 0 <= number <= MAX_WEIGHT:  # NaN and ±inf fail this too
        raise StudioError(f"{where}: weight {shown or _show(value)} must be a number from 0 to {MAX_WEIGHT:.0e} "
                          "(weights are relative; scale them down)")
    return number


class _Totals:
    """Weights added up by length as the entries are read (never a list of every entry), at most
    :data:`MAX_BINS` distinct lengths."""

    def __init__(self) -> None:
        self.by_length: dict[int, float] = {}
        self.entries = 0

    def add(self, length: int, weight: float, where: str) -> None:
        totals = self.by_length
        if length not in totals and len(totals) >= MAX_BINS:
            raise StudioError(f"{where}: more than {MAX_BINS:,} distinct lengths; at most {MAX_BINS:,} are allowed")
        totals[length] = totals.get(length, 0.0) + weight
        self.entries += 1


def _lines(text: str):
    """(number, line) of ``text``, one at a time (a 16 MiB file is not copied into a list)."""
    pos, number, size = 0, 0, len(text)
    while pos < size:
        end = text.find("\n", pos)
        if end < 0:
            end = size
        number += 1
        yield number, text[pos:end] if end - pos <= MAX_LINE + 2 else text[pos:pos + MAX_LINE + 2]
        pos = end + 1


def _from_csv(text: str, totals: _Totals) -> None:
    seen_data = False
    for number, raw in _lines(text):
        where = f"line {number}"
        if len(raw) > MAX_LINE + 1:
            raise StudioError(f"{where}: longer than {MAX_LINE} characters; {_ALLOWED} (\"length,weight\" per line)")
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        cells = [c for c in _SPLIT.split(line) if c]
        if not seen_data and not _is_number(cells[0]):
            seen_data = True  # a header such as "length,weight"
            continue
        seen_data = True
        if len(cells) > 2:
            raise StudioError(f"{where}: {len(cells)} values; {_ALLOWED} (\"length,weight\" or \"length\")")
        weight = _weight(cells[1], where) if len(cells) == 2 else 1.0
        totals.add(_length(cells[0], where), weight, where)


def _is_number(text: str) -> bool:
    return _as_float(text) is not None


_NUM = r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?"
#: One entry of a JSON list of ``[length, weight]`` pairs, ``[length]`` or bare lengths, then the
#: comma or the closing bracket after it.
_ENTRY = re.compile(rf"\s*(?:\[\s*({_NUM})\s*(?:,\s*({_NUM})\s*)?\]|({_NUM}))\s*(,|\])")
_OPEN = re.compile(r"[\ufeff \t\r\n]*\[")


def _number(token: str) -> float | int:
    """A JSON number token as Python reads it; a long one as a float (a 5,000-digit integer is past
    ``int``'s own limit, and past a float's range it is infinite, which the checks refuse)."""
    return int(token) if len(token) <= 18 and token.lstrip("-").isdigit() else float(token)


def _json_list_streamed(text: str, totals: _Totals) -> bool:
    """Read a JSON list of pairs or numbers entry by entry, without building it as Python
    objects (a 16 MiB list of ``[length, weight]`` pairs took 16x its size that way). Returns
    False, having added nothing, when the text is any other JSON (objects, strings, nesting): the
    caller then parses it in full, for the exact message."""
    start = _OPEN.match(text)
    if start is None:
        return False
    pos, i, rows = start.end(), 0, _Totals()
    size = len(text)
    while True:
        m = _ENTRY.match(text, pos)
        if m is None:
            return False
        i += 1
        where = f"entry {i}"
        length, weight = (m.group(1), m.group(2)) if m.group(3) is None else (m.group(3), None)
        rows.add(_length(_number(length), where, _token(length)),
                 _weight(_number(weight), where, _token(weight)) if weight else 1.0, where)
        pos = m.end()
        if m.group(4) == "]":
            break
        if pos >= size:
            return False
    if text[pos:].strip():
        return False
    totals.by_length, totals.entries = rows.by_length, rows.entries
    return True


def _from_json(text: str, source: str, totals: _Totals) -> None:
    if _json_list_streamed(text, totals):
        return
    data = loads_json_limited(text, source, what="length histogram")
    if isinstance(data, dict):
        if "histogram" not in data:
            raise StudioError("a JSON object needs a 'histogram' list of [length, weight] pairs", source)
        data = data["histogram"]
    if not isinstance(data, list):
        raise StudioError("expected a list of [length, weight] pairs or {\"length\", \"weight\"} objects", source)
    for i, entry in enumerate(data, start=1):
        where = f"entry {i}"
        if isinstance(entry, dict):
            if "length" not in entry:
                raise StudioError(f"{where}: an object needs 'length' (and optionally 'weight')", source)
            unknown = set(entry) - {"length", "weight"}
            if unknown:
                raise StudioError(f"{where}: unknown key(s) {sorted(unknown)[:5]}; allowed: length, weight", source)
            length, weight = entry["length"], entry.get("weight", 1.0)
        elif isinstance(entry, list) and len(entry) in (1, 2):
            length, weight = entry[0], (entry[1] if len(entry) == 2 else 1.0)
        elif isinstance(entry, (int, float)) and not isinstance(entry, bool):
            length, weight = entry, 1.0
        else:
            raise StudioError(f"{where}: {_show(entry)} is not a [length, weight] pair; {_ALLOWED}", source)
        if isinstance(length, str):
            raise _string(length, "length", where)
        if isinstance(weight, str):
            raise _string(weight, "weight", where)
        if isinstance(length, bool):
            raise StudioError(f"{where}: length {length!r} is not a number; {_ALLOWED}", source)
        totals.add(_length(length, where), _weight(weight, where), where)


def parse_histogram(text: str, source: str, json_format: bool | None = None) -> tuple[tuple[int, float], ...]:
    """``(length, weight)`` pairs of a histogram given as text, sorted by length.

    CSV text is read line by line and the weights are added up by length as they are read, so
    memory stays a small multiple of the file (``tests/robustness/test_hostile_wave3.py``).

    Parameters
    ----------
    text:
        The file's content.
    source:
        The file name, for messages.
    json_format:
        Force JSON (True) or CSV (False); None guesses from the first character.

    Raises
    ------
    StudioError
        Malformed entries, a CSV line over :data:`MAX_LINE` characters, lengths outside
        1..10,000,000, weights that are strings (JSON), negative, non-finite or above
        :data:`MAX_WEIGHT`, more than :data:`MAX_BINS` distinct lengths, an empty histogram or one
        whose weights add up to 0.
    """
    if json_format is None:
        start = _LEAD.match(text)
        json_format = text[start.end() if start else 0:][:1] in ("[", "{")
    totals = _Totals()
    try:
        if json_format:
            _from_json(text, source, totals)
        else:
            _from_csv(text, totals)
    except StudioError as exc:
        if exc.source:
            raise
        raise StudioError(exc.message, source) from None
    if not totals.entries:
        raise StudioError("no lengths found; " + _ALLOWED, source)
    if sum(totals.by_length.values()) <= 0:
        raise StudioError("the weights add up to 0; at least one length needs a weight > 0", source)
    heavy = next(((n, w) for n, w in totals.by_length.items() if w > MAX_WEIGHT), None)
    if heavy is not None:
        raise StudioError(f"the weights of length {heavy[0]} add up to {heavy[1]:.3g}, above {MAX_WEIGHT:.0e} "
                          "(weights are relative; scale them down)", source)
    return tuple(sorted(totals.by_length.items()))


def load_histogram(path: str | PathLike[str]) -> LengthDistribution:
    """The :class:`LengthDistribution` of kind ``histogram`` read from ``path`` (CSV or JSON).

    Raises
    ------
    StudioError
        Missing or oversized file, or any problem :func:`parse_histogram` names.
    """
    p = Path(path)
    text = read_text_limited(p, MAX_BYTES, "length histogram")
    is_json = True if p.suffix.lower() == ".json" else None
    pairs = parse_histogram(text, str(p), json_format=is_json)
    return LengthDistribution(kind="histogram", histogram=pairs)
