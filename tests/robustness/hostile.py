"""Helpers for the hostile-input corpus: run a case with a time guard, and with a memory measure.

The time guard only catches hangs (a FIFO that blocks, a regex that backtracks for minutes): its
limit is generous and no test asserts on speed. Memory is measured with :mod:`tracemalloc`, which
counts the bytes Python allocates and does not depend on the machine; it also makes allocation-heavy
code several times slower (compiling 200,000 automaton states: 0.4 s plain, 2.2 s traced), so a
case that does not check its memory runs under :func:`guarded`, the time guard alone, and the
automaton cases that do are measured in processes of their own by :func:`peak_rss_growths`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import tracemalloc
from collections.abc import Callable
from pathlib import Path
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


#: The child of :func:`peak_rss_growths`: imports once, then for each case forks a process of its
#: own which builds the config, resets its peak resident memory to what it holds now (Linux:
#: ``/proc/self/clear_refs``), runs the case, and prints how far the peak (``VmHWM``) rose above
#: that, and the error message, as a line of JSON. A forked process starts from the imports already
#: done, and what one case allocated is gone before the next starts.
_RSS_CHILD = """
import json, os, sys
job = json.loads(sys.stdin.read())
from studio.core.errors import StudioError
from studio.io.importers.hf_config import architecture_from_config

def kib(field):
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1])

def run(patterns):
    cfg = json.loads(open(job["config"], encoding="utf-8").read())
    cfg["quantization_config"] = {"quant_method": "fp8", "ignored_layers": patterns}
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # the peak (VmHWM) starts again from the resident memory now (VmRSS)
    before = kib("VmRSS")
    try:
        architecture_from_config(cfg, model_id="m", name="m", source="config.json")
        error = None
    except StudioError as exc:
        error = str(exc)
    print(json.dumps({"error": error, "grown_bytes": (kib("VmHWM") - before) * 1024}), flush=True)

for patterns in job["cases"]:
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            run(patterns)
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    if status != 0:
        sys.exit(f"a case's process ended with status {status}")
"""


#: Whether this system lets a process reset its peak resident memory (Linux 4.0 and later).
PEAK_RESETTABLE = os.access("/proc/self/clear_refs", os.W_OK)


def peak_rss_growths(config: Path, cases: list[list[str]], hang_s: float = HANG_S) -> list[tuple[str | None, int]]:
    """For each list of ``patterns`` in ``cases``, build the model of HF ``config`` with them as
    its FP8 ``ignored_layers`` in a fresh process; return (the :class:`StudioError` message or
    None, how far the process's peak resident memory grew during the build, bytes) per case.

    The same question as :func:`bounded`'s peak, asked of the operating system instead of
    :mod:`tracemalloc`: it counts what the allocator really took (a little more than the Python
    objects) and leaves the build at full speed (0.4 s instead of 2.2 s for 200,000 states). One
    interpreter imports the studio once and forks a process per case (:data:`_RSS_CHILD`).
    """
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    job = json.dumps({"config": str(config), "cases": cases})  # on stdin: one argument holds 128 KiB at most
    proc = subprocess.run([sys.executable, "-c", _RSS_CHILD], input=job, capture_output=True, text=True,
                          env=env, timeout=hang_s * len(cases))
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = [json.loads(line) for line in proc.stdout.strip().splitlines()[-len(cases):]]
    assert len(out) == len(cases), proc.stdout[-2000:]
    return [(o["error"], int(o["grown_bytes"])) for o in out]
