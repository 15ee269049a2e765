"""Helpers for the hostile-input corpus: run a case with a time guard, and with a memory measure.

The time guard only catches hangs (a FIFO that blocks, a regex that backtracks for minutes): its
limit is generous and no test asserts on speed. Memory is measured with :mod:`tracemalloc`, which
counts the bytes Python allocates and does not depend on the machine; it also makes allocation-heavy
code several times slower (compiling 200,000 automaton states: 0.6 s plain, 3.9 s traced), so a
case that does not check its memory runs under :func:`guarded`, the time guard alone.
"""

from __future__ import annotations

import threading
import tracemalloc
from collections.abc import Callable
from typing import Any

#: A case that takes longer than this is hung (they all finish in well under a second).
HANG_S = 60.0


def bounded(fn: Callable[[], Any], hang_s: float = HANG_S) -> tuple[Any, BaseException | None, int]:
    """Run ``fn`` in a daemon thread; return (result, exception, peak bytes allocated).

    Raises
    ------
    AssertionError
        ``fn`` did not finish within ``hang_s`` seconds (the thread is left behind, as a daemon).
    """
    return _run(fn, hang_s, measure=True)


def guarded(fn: Callable[[], Any], hang_s: float = HANG_S) -> tuple[Any, BaseException | None]:
    """Run ``fn`` in a daemon thread under the time guard only; return (result, exception).

    Raises
    ------
    AssertionError
        ``fn`` did not finish within ``hang_s`` seconds (the thread is left behind, as a daemon).
    """
    result, error, _ = _run(fn, hang_s, measure=False)
    return result, error


def _run(fn: Callable[[], Any], hang_s: float, measure: bool) -> tuple[Any, BaseException | None, int]:
    box: dict[str, Any] = {}

    def target() -> None:
        if measure:
            tracemalloc.start()
        try:
            box["result"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            box["error"] = exc
        finally:
            if measure:
                box["peak"] = tracemalloc.get_traced_memory()[1]
                tracemalloc.stop()

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(hang_s)
    assert not t.is_alive(), f"still running after {hang_s:.0f} s: hung"
    return box.get("result"), box.get("error"), box.get("peak", 0)
