"""Binary size units, defined once for every layer: the engine's figures and messages, the
exports' headers and the views all divide by these. Formatting a quantity for a view is
:mod:`studio.service.units`."""

from __future__ import annotations

#: Bytes in a gibibyte and a mebibyte.
GIB = float(2**30)
MIB = float(2**20)
