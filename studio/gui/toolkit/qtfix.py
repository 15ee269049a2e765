"""Work around a reference-count bug of PySide6 6.12 on CPython < 3.12.

When Qt calls a Python override with a null pointer argument (``QGraphicsItem.paint`` with
``widget == nullptr`` while painting into an item cache or ``QGraphicsScene.render``; some
``itemChange`` values), shiboken hands the override ``None`` without taking a reference, and drops
one reference afterwards. Each such call lowers ``None``'s reference count by one; after a few
thousand paints it reaches zero and CPython aborts with "none_dealloc: deallocating None"
(measured here: 100 ``paint`` calls into a QImage lower ``sys.getrefcount(None)`` by 100; the
count starts near 5 000).

``None`` is never freed, so giving it a very large reference count once makes the bug harmless.
CPython 3.12+ makes ``None`` immortal and needs nothing.
"""

from __future__ import annotations

import ctypes
import platform
import sys

_FLOOR = 1 << 40


def protect_none_refcount() -> bool:
    """Raise the reference counts of ``None``, ``True`` and ``False`` far above anything the leak
    can consume.

    Returns whether a change was made (only on CPython before 3.12, and only once).
    """
    if platform.python_implementation() != "CPython" or sys.version_info >= (3, 12):
        return False
    changed = False
    # True and False leak the same way (bool arguments of overrides and signals; seen as
    # "bool_dealloc: deallocating True or False" at exit after the GUI and Explorer test suites).
    for obj in (None, True, False):
        cell = ctypes.c_ssize_t.from_address(id(obj))
        if cell.value < _FLOOR:
            cell.value += _FLOOR
            changed = True
    return changed
