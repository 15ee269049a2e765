"""Size units and the fixed-format writers below the views, defined once for every layer.

The engine's figures and messages, the exports' headers, the file-size messages and the views all
divide by :data:`GIB`, :data:`MIB` and :data:`KIB`. The writers here have one fixed format each
(an export header must not change when a view's formatting does); formatting a quantity for a view,
with units that scale with the value, is :mod:`studio.service.units`.
"""

from __future__ import annotations

import math

#: Bytes in a gibibyte, a mebibyte and a kibibyte.
GIB = float(2**30)
MIB = float(2**20)
KIB = float(2**10)


def gib_1(nbytes: float) -> str:
    """Bytes in GiB with one decimal, as the export headers print them: ``67.0 GiB``."""
    return f"{nbytes / GIB:.1f} GiB"


def fixed(value: float, digits: int = 1) -> str:
    """A figure with thousands separators and ``digits`` decimals (``1,234.5``); ``n/a`` when
    it is not finite. The export headers' number format."""
    if not math.isfinite(value):
        return "n/a"
    return f"{value:,.{digits}f}"


def file_size(n: int) -> str:
    """A file's size for a limit message: ``64.0 MiB``, ``12.5 KiB``, ``300 bytes``."""
    if n >= MIB:
        return f"{n / MIB:.1f} MiB"
    if n >= KIB:
        return f"{n / KIB:.1f} KiB"
    return f"{n} bytes"


def whole_mib(n: int) -> str:
    """A size limit in whole MiB, as the readers' limit messages print it: ``32 MiB``."""
    return f"{n // int(MIB)} MiB"


def decimal_bytes(n: float) -> str:
    """Bytes in decimal units, as the Hugging Face Hub shows them: ``16.06 GB``, ``53.60 kB``."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:,.2f} {unit}"
    return f"{n:,.0f} bytes"


def figure(value: float, digits: int = 3) -> str:
    """A figure as the plan's text writes it: thousands separators from 1,000 up, else ``digits``
    significant digits (4 from 1 up); ``-`` when not finite."""
    if not math.isfinite(value):
        return "-"
    if value == 0:
        return "0"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.{max(digits, 4) if abs(value) >= 1 else digits}g}"
