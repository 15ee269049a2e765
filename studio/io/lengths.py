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
from studio.core.workload import LengthDistribution
from studio.io.safe import loads_json_limited, read_text_limited

#: Largest histogram file read (a dump of a million observed lengths fits).
MAX_BYTES = 16 * 1024 * 1024
#: Lengths accepted (tokens), as :class:`~studio.core.workload.LengthDistribution` allows.
MAX_LENGTH = 10_000_000
#: Distinct lengths accepted.
MAX_BINS = 100_000

_SPLIT = re.compile(r"[,;\t ]+")
_ALLOWED = "each entry is a length in tokens (a whole number 1..10000000) and an optional weight ≥ 0"


def _length(value: object, where: str) -> int:
    try:
        number = float(value)  # type: ignore[arg-type]  # any value; what float refuses is the error below
    except (TypeError, ValueError):
        raise StudioError(f"{where}: length {value!r} is not a number; {_ALLOWED}") from None
    if not (math.isfinite(number) and number == int(number) and 1 <= number <= MAX_LENGTH):
        raise StudioError(f"{where}: length {value} is not a whole number of tokens in 1..{MAX_LENGTH}")
    return int(number)


def _weight(value: object, where: str) -> float:
    if isinstance(value, bool):
        raise StudioError(f"{where}: weight {value!r} is not a number; {_ALLOWED}")
    try:
        number = float(value)  # type: ignore[arg-type]  # any value; what float refuses is the error below
    except (TypeError, ValueError):
        raise StudioError(f"{where}: weight {value!r} is not a number; {_ALLOWED}") from None
    if not (math.isfinite(number) and number >= 0):
        raise StudioError(f"{where}: weight {value} must be a finite number ≥ 0")
    return number


def _from_csv(text: str) -> list[tuple[int, float, str]]:
    rows: list[tuple[int, float, str]] = []
    seen_data = False
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        cells = [c for c in _SPLIT.split(line) if c]
        where = f"line {number}"
        if not seen_data and not _is_number(cells[0]):
            seen_data = True  # a header such as "length,weight"
            continue
        seen_data = True
        if len(cells) > 2:
            raise StudioError(f"{where}: {len(cells)} values; {_ALLOWED} (\"length,weight\" or \"length\")")
        weight = _weight(cells[1], where) if len(cells) == 2 else 1.0
        rows.append((_length(cells[0], where), weight, where))
    return rows


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _from_json(text: str, source: str) -> list[tuple[int, float, str]]:
    data = loads_json_limited(text, source, what="length histogram")
    if isinstance(data, dict):
        if "histogram" not in data:
            raise StudioError("a JSON object needs a 'histogram' list of [length, weight] pairs", source)
        data = data["histogram"]
    if not isinstance(data, list):
        raise StudioError("expected a list of [length, weight] pairs or {\"length\", \"weight\"} objects", source)
    rows: list[tuple[int, float, str]] = []
    for i, entry in enumerate(data, start=1):
        where = f"entry {i}"
        if isinstance(entry, dict):
            if "length" not in entry:
                raise StudioError(f"{where}: an object needs 'length' (and optionally 'weight')", source)
            unknown = set(entry) - {"length", "weight"}
            if unknown:
                raise StudioError(f"{where}: unknown key(s) {sorted(unknown)}; allowed: length, weight", source)
            length, weight = entry["length"], entry.get("weight", 1.0)
        elif isinstance(entry, list) and len(entry) in (1, 2):
            length, weight = entry[0], (entry[1] if len(entry) == 2 else 1.0)
        elif isinstance(entry, (int, float)) and not isinstance(entry, bool):
            length, weight = entry, 1.0
        else:
            raise StudioError(f"{where}: {entry!r} is not a [length, weight] pair; {_ALLOWED}", source)
        if isinstance(length, bool):
            raise StudioError(f"{where}: length {length!r} is not a number; {_ALLOWED}", source)
        rows.append((_length(length, where), _weight(weight, where), where))
    return rows


def parse_histogram(text: str, source: str, json_format: bool | None = None) -> tuple[tuple[int, float], ...]:
    """``(length, weight)`` pairs of a histogram given as text, sorted by length.

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
        Malformed entries, lengths outside 1..10,000,000, negative or non-finite weights, an empty
        histogram or one whose weights add up to 0.
    """
    stripped = text.lstrip("\ufeff \t\r\n")
    if json_format is None:
        json_format = stripped[:1] in ("[", "{")
    try:
        rows = _from_json(text, source) if json_format else _from_csv(text)
    except StudioError as exc:
        if exc.source:
            raise
        raise StudioError(exc.message, source) from None
    if not rows:
        raise StudioError("no lengths found; " + _ALLOWED, source)
    totals: dict[int, float] = {}
    for length, weight, _ in rows:
        totals[length] = totals.get(length, 0.0) + weight
    if len(totals) > MAX_BINS:
        raise StudioError(f"{len(totals):,} distinct lengths; at most {MAX_BINS:,} are allowed", source)
    if sum(totals.values()) <= 0:
        raise StudioError("the weights add up to 0; at least one length needs a weight > 0", source)
    return tuple(sorted(totals.items()))


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
