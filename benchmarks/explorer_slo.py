"""The scheduler and the Explorer's percentile SLO (issues 10 and 12). ``python benchmarks/explorer_slo.py``

1. Scheduler cost per job: a no-op request through :class:`studio.service.scheduler.Scheduler`
   synchronously, and through the Qt binding (worker thread → signal on the GUI thread).
2. :func:`studio.service.slo.check_slo` on the bundled examples at 1 req/s (p99 TTFT ≤ 2 s,
   p99 TPOT ≤ 100 ms), with the Explorer's limit of simulated layouts: median of 3.
3. The Explorer with that SLO on a 512-GPU cluster (64 × DGX H100, Llama-3.1-405B, 20 req/s),
   threaded as in the window: wall time from Run to the table, and the worst gap between ticks of a
   5 ms timer on the GUI thread while the worker sweeps and simulates.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from PySide6.QtCore import QElapsedTimer, QTimer  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from studio.engine import sweep  # noqa: E402
from studio.gui.document import ProjectDocument  # noqa: E402
from studio.gui.explorer import ExplorerWidget  # noqa: E402
from studio.gui.toolkit.qtfix import protect_none_refcount  # noqa: E402
from studio.gui.worker import ScheduledWork  # noqa: E402
from studio.io.project_file import load_project  # noqa: E402
from studio.service.explore.explorer_work import SIMULATED  # noqa: E402
from studio.service.scheduler import Scheduler  # noqa: E402
from studio.service.slo import SloTargets, check_slo  # noqa: E402

EXAMPLES = ROOT / "presets" / "examples"
NAMES = ("l40s-8x-llama-70b-fp8", "dgx-h100-2node-llama-405b", "h100-pcie-bridge-llama-70b")


def bench_scheduler(app: QApplication) -> dict:
    s = Scheduler(lambda x, job: x)
    n = 20_000
    t = time.perf_counter()
    for i in range(n):
        s.submit(i)
    sync_us = (time.perf_counter() - t) / n * 1e6
    got: list[float] = []
    work = ScheduledWork(lambda x, job: x, lambda: 0)
    work.responded.connect(lambda r: got.append(time.perf_counter()))
    trips = []
    for _ in range(200):
        t = time.perf_counter()
        before = len(got)
        work.start()
        while len(got) == before:
            app.processEvents()
        trips.append((got[-1] - t) * 1e3)
    return {"sync_us_per_job": sync_us, "qt_round_trip_ms_median": statistics.median(trips)}


def bench_check() -> list[dict]:
    out = []
    t = SloTargets(1.0, 2000.0, 100.0)
    for name in NAMES:
        p = load_project(EXAMPLES / f"{name}.json")
        r = sweep(p)
        times, rep = [], None
        for _ in range(3):
            t0 = time.perf_counter()
            rep = check_slo(p, r, t, simulate=SIMULATED)
            times.append(time.perf_counter() - t0)
        out.append(
            {
                "project": name,
                "layouts": len(rep.checked),
                "simulated": sum(e.simulated for e in rep.checked),
                "meet": sum(e.meets for e in rep.checked),
                "median_s": statistics.median(times),
            }
        )
    return out


def bench_explorer(app: QApplication) -> dict:
    from explorer import big_project

    base = big_project(64)
    p = base.replace(explorer=base.explorer.replace(ttft_p99_ms=2000.0, slo_rate_per_s=20.0))
    doc = ProjectDocument(p, threaded=False)
    w = ExplorerWidget(doc, debounce_ms=60_000)
    w.resize(1600, 900)
    w.show()
    for _ in range(5):
        app.processEvents()
    gaps: list[float] = []
    clock = QElapsedTimer()
    clock.start()
    last = [clock.nsecsElapsed()]

    def tick() -> None:
        now = clock.nsecsElapsed()
        if w.result is None:
            gaps.append((now - last[0]) / 1e6)
        last[0] = now

    timer = QTimer()
    timer.setInterval(5)
    timer.timeout.connect(tick)
    timer.start()
    t0 = time.perf_counter()
    w.run_sweep()
    while w.result is None:
        app.processEvents()
        time.sleep(0.001)
    wall = time.perf_counter() - t0
    timer.stop()
    rep = w.slo
    out = {
        "gpus": p.cluster.num_gpus,
        "candidates": w.result.candidates,
        "wall_s": wall,
        "max_stall_ms": max(gaps),
        "median_tick_ms": statistics.median(gaps),
        "layouts_checked": len(rep.checked) if rep else 0,
        "simulated": sum(e.simulated for e in rep.checked) if rep else 0,
        "meet": sum(e.meets for e in rep.checked) if rep else 0,
        "status": w.status.text(),
    }
    w.close()
    return out


def main() -> None:
    protect_none_refcount()
    app = QApplication.instance() or QApplication([])
    print("scheduler:", bench_scheduler(app))
    for row in bench_check():
        print("check_slo:", row)
    print("explorer 512 GPUs with SLO:", bench_explorer(app))


if __name__ == "__main__":
    main()
