"""Formatted quantities for views: units that scale with the value, and "—" for no value.

Nothing here prints "inf" or "nan": a quantity that does not exist (the cost of a plan that
serves no tokens, the latency of a layout that does not run) is written "—".
"""

from __future__ import annotations

import math

from studio.core.units import GIB, MIB

DASH = "—"


def _missing(v: float | None) -> bool:
    return v is None or not math.isfinite(v)


def duration_ms(ms: float | None, digits: int = 1) -> str:
    """A time given in ms: ``601.7 ms``, ``5.76 s``, ``31.0 s``, ``12.5 min``, ``3.2 h`` (seconds from
    one second on: never ``5,764.1 ms``)."""
    if _missing(ms):
        return DASH
    assert ms is not None
    if abs(ms) < 1_000:
        return f"{ms:,.{digits}f} ms"
    s = ms / 1000
    if abs(s) < 10:
        return f"{s:,.2f} s"
    if abs(s) < 120:
        return f"{s:,.1f} s"
    if abs(s) < 7200:
        return f"{s / 60:,.1f} min"
    return f"{s / 3600:,.1f} h"


def duration_us(us: float | None) -> str:
    """A time given in µs, in ms from 10 ms and on as :func:`duration_ms`: ``25.6 µs``, ``2,493 µs``, ``146 ms``."""
    if _missing(us):
        return DASH
    assert us is not None
    if abs(us) >= 10_000:
        ms = us / 1000
        return f"{ms:,.3g} ms" if abs(ms) < 100 else duration_ms(ms, 0)
    return f"{us:,.1f} µs" if abs(us) < 100 else f"{us:,.0f} µs"


def size_bytes(b: float | None, digits: int = 1) -> str:
    """Bytes in binary units: ``67.0 GiB``, ``1.50 TiB``, ``512 MiB``."""
    if _missing(b):
        return DASH
    assert b is not None
    if abs(b) >= 1024 * GIB:
        return f"{b / (1024 * GIB):,.2f} TiB"
    if abs(b) >= GIB:
        return f"{b / GIB:,.{digits}f} GiB"
    return f"{b / MIB:,.0f} MiB"


def si(v: float | None, unit: str) -> str:
    """Three significant digits with k/M/G so a card value stays short: ``1.22k tok/s``,
    ``523k tok``, ``2.05M tok``, ``61.5 tok/s``."""
    if _missing(v):
        return DASH
    assert v is not None
    for scale, prefix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= scale * 0.9995:
            x = v / scale
            return f"{x:.3g}{prefix} {unit}" if x < 999.5 else f"{x:,.0f}{prefix} {unit}"
    return f"{v:.3g} {unit}" if abs(v) < 100 else f"{v:,.0f} {unit}"


def usd(v: float | None, digits: int = 2) -> str:
    """Dollars: ``$10.93``; "—" when there is no such cost (no tokens served)."""
    if _missing(v):
        return DASH
    return f"${v:,.{digits}f}"


def readable(v: float | None, digits: int = 3) -> str:
    """A figure for a manager (the report's format): thousands separators from 1,000, whole
    numbers from 100, ``digits`` significant digits below, ``–`` when missing."""
    if _missing(v):
        return "–"
    assert v is not None
    a = abs(v)
    if a >= 1000:
        return f"{v:,.0f}"
    if a >= 100:
        return f"{v:.0f}"
    if a == 0:
        return "0"
    return f"{v:.{digits}g}"
