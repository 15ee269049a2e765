"""Text output of the commands: strict JSON, numbers for tables, aligned tables and pairs."""

from __future__ import annotations

import math

from studio.core.shown_text import one_line


def json_safe(value):
    """``value`` with numpy scalars/arrays made plain and non-finite floats made ``None`` (strict
    JSON has no NaN or Infinity)."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:  # most leaves of a sweep's JSON
        return value
    if kind is float:
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):  # numpy scalar / array
        return json_safe(value.tolist())
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def print_json(value) -> None:
    """Print ``value`` as indented, strict JSON (one object, newline-terminated)."""
    print(dumps_indented(json_safe(value)))


class _NotPlain(Exception):
    """A value :func:`dumps_indented` leaves to :func:`json.dumps`."""


def dumps_indented(value) -> str:
    """``json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False)``, the same text, about
    twice as fast (the standard library indents in pure Python; a sweep's 190 kB took 10 ms).

    Plain values (``dict`` with ``str`` keys, ``list``, ``str``, ``int``, finite ``float``, ``bool``,
    ``None``, exactly those types, which is what :func:`json_safe` returns) are written here; a value
    with anything else in it (a subclass, a tuple, a non-finite float) is written by
    :func:`json.dumps` as a whole, so the text and the errors are always the standard library's.
    """
    import json
    from json.encoder import encode_basestring

    parts: list[str] = []
    append = parts.append
    float_repr, int_repr = float.__repr__, int.__repr__

    def write(o, pad: str) -> None:
        kind = type(o)
        if kind is str:
            append(encode_basestring(o))
        elif o is None:
            append("null")
        elif o is True:
            append("true")
        elif o is False:
            append("false")
        elif kind is int:
            append(int_repr(o))
        elif kind is float:
            if not math.isfinite(o):
                raise _NotPlain
            append(float_repr(o))
        elif kind is dict:
            if not o:
                append("{}")
                return
            inner, sep = pad + "  ", "{"
            for k, v in o.items():
                if type(k) is not str:
                    raise _NotPlain
                head = f"{sep}{inner}{encode_basestring(k)}: "
                sep = ","
                leaf = scalar(v)  # most values are leaves: one piece per member, no call down
                if leaf is None:
                    append(head)
                    write(v, inner)
                else:
                    append(head + leaf)
            append(pad + "}")
        elif kind is list:
            if not o:
                append("[]")
                return
            inner, sep = pad + "  ", "["
            for v in o:
                leaf = scalar(v)
                if leaf is None:
                    append(sep + inner)
                    write(v, inner)
                else:
                    append(sep + inner + leaf)
                sep = ","
            append(pad + "]")
        else:
            raise _NotPlain

    def scalar(o) -> str | None:
        """The text of a plain leaf, or None for a container (or anything else: :func:`write`
        decides)."""
        kind = type(o)
        if kind is str:
            return encode_basestring(o)
        if kind is float:
            if not math.isfinite(o):
                raise _NotPlain
            return float_repr(o)
        if kind is int:
            return int_repr(o)
        if o is None:
            return "null"
        if o is True:
            return "true"
        if o is False:
            return "false"
        return None

    try:
        write(value, "\n")
    except _NotPlain:
        return json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False)
    return "".join(parts)


def fmt(value, digits: int = 3) -> str:
    """A number for a table: thousands separators for big values, ``digits`` significant digits
    for small ones, ``-`` for missing or non-finite values."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    try:
        v = float(value)
    except (TypeError, ValueError):
        return str(value)
    from studio.core.units import figure

    return figure(v, digits)


def format_table(headers: list[str], rows: list[list[str]], right: set[int] | None = None) -> str:
    """Rows of strings as an aligned plain-text table; columns in ``right`` (default: all but the
    first) are right-aligned."""
    right = set(range(1, len(headers))) if right is None else right
    headers = [one_line(str(h)) for h in headers]
    rows = [[one_line(str(c)) for c in r] for r in rows]
    widths = [max(len(str(c)) for c in col) for col in zip(headers, *rows, strict=False)] if rows else [
        len(h) for h in headers
    ]

    def line(cells: list[str]) -> str:
        out = [
            str(c).rjust(w) if i in right else str(c).ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=False))
        ]
        return "  ".join(out).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths])] + [line(r) for r in rows])


def format_pairs(pairs: list[tuple[str, str]], indent: int = 2) -> str:
    """``label  value`` lines with the values aligned; every label and value is one line
    (:func:`studio.core.shown_text.one_line`: a newline in a name is written as ``\\n``)."""
    if not pairs:
        return ""
    pairs = [(one_line(str(k)), one_line(str(v))) for k, v in pairs]
    width = max(len(k) for k, _ in pairs)
    return "\n".join(f"{' ' * indent}{k.ljust(width)}  {v}" for k, v in pairs)
