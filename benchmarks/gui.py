"""Edit -> metrics and timeline redrawn, in the real window (offscreen).

One sample = one undoable edit on the document (alternating the micro-batch count M, and a link's
kind NVLink <-> PCIe), the canvas syncing to it, the engine evaluating the new project, the metrics
panel, memory bars, warnings and timeline updating, and a synchronous repaint of the metrics and
timeline widgets. Targets: median ≤ 16 ms at 16 GPUs, ≤ 100 ms at 512 GPUs (64 × DGX H100).

Usage: ``python benchmarks/gui.py [--samples 30]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("LAYOUT_STUDIO_NO_SETTINGS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from studio.core import edits  # noqa: E402
from studio.core.builders import build_cluster  # noqa: E402
from studio.core.layout import Layout  # noqa: E402
from studio.core.project import Project  # noqa: E402
from studio.core.workload import Workload  # noqa: E402
from studio.gui.app import application, build_window  # noqa: E402
from studio.io.presets import load_catalog  # noqa: E402


def project(nodes: int, layout: Layout) -> Project:
    cat = load_catalog()
    t = cat.node("dgx-h100")
    cluster = build_cluster(t, nodes, cat.gpu(t.gpu_type), cat.links)
    return Project(
        name=f"bench {nodes * 8} GPUs",
        cluster=cluster,
        model=cat.model("llama-3.1-405b").architecture,
        workload=Workload(isl=2048, osl=512),
        layout=layout,
    )


def measure(p: Project, samples: int) -> dict[str, float]:
    app = application()
    win = build_window(p, threaded=False)
    win.resize(1920, 1080)
    win.show()
    app.processEvents()
    doc = win.doc
    engine_s: list[float] = []
    evaluate = doc._evaluate

    def timed(q):
        t = time.perf_counter()
        try:
            return evaluate(q)
        finally:
            engine_s.append(time.perf_counter() - t)

    doc._evaluate = timed
    doc.recompute_now()
    engine_s.clear()
    if doc.error:
        raise SystemExit(f"{p.name}: {doc.error}")
    cat = load_catalog()
    nvl, pcie = cat.link("nvlink4-nvswitch"), cat.link("pcie-gen5-switch")
    link = next(lk.id for lk in p.cluster.links if lk.kind == nvl.id)
    times: dict[str, list[float]] = {"micro-batches": [], "link kind": []}
    ordered: list[float] = []  # every sample in the order the engine ran
    for i in range(samples):
        m = p.layout.micro_batches + 1 + (i % 2)
        t0 = time.perf_counter()
        doc.edit("M", "layout", lambda q, m=m: q.replace(layout=q.layout.replace(micro_batches=m)))
        doc.recompute_now()
        win.metrics.repaint()
        win.timeline.repaint()
        times["micro-batches"].append(time.perf_counter() - t0)
        ordered.append(times["micro-batches"][-1])
        kind = pcie if i % 2 == 0 else nvl
        t0 = time.perf_counter()
        doc.edit_cluster("kind", lambda c, k=kind: edits.set_link_kind(c, link, k))
        doc.recompute_now()
        win.metrics.repaint()
        win.timeline.repaint()
        times["link kind"].append(time.perf_counter() - t0)
        ordered.append(times["link kind"][-1])
    t0 = time.perf_counter()
    win.canvas.viewport().repaint()
    canvas_paint = time.perf_counter() - t0
    doc.undo_stack.setClean()
    win.close()
    app.processEvents()
    out = {k: statistics.median(v) * 1000 for k, v in times.items()}
    out["engine evaluate alone"] = statistics.median(engine_s) * 1000
    gui_only = [t - e for t, e in zip(ordered, engine_s, strict=True)]
    out["GUI share (total - engine)"] = statistics.median(gui_only) * 1000
    out["canvas full repaint"] = canvas_paint * 1000
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=30)
    args = ap.parse_args()
    cases = (
        ("16 GPUs (2 × DGX H100, TP8×PP2)", project(2, Layout(tp=8, pp=2, micro_batches=2)), 16.0),
        ("512 GPUs (64 × DGX H100, TP8×PP4×DP16)", project(64, Layout(tp=8, pp=4, dp=16, micro_batches=4)), 100.0),
    )
    for label, p, target in cases:
        res = measure(p, args.samples)
        worst = max(res["micro-batches"], res["link kind"])
        gui = res["GUI share (total - engine)"]
        print(f"{label}: edit -> metrics + timeline redrawn, median of {args.samples}")
        for k, v in res.items():
            print(f"  {k:22s} {v:8.1f} ms")
        print(f"  target <= {target:.0f} ms: total {'OK' if worst <= target else 'OVER'}, GUI share {'OK' if gui <= target else 'OVER'}")


if __name__ == "__main__":
    main()
