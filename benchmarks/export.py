"""Export speed on large clusters. Prints medians; run ``PYTHONPATH=. python benchmarks/export.py
[NODES ...]`` from the checkout (so the checkout's code is timed, not an installed copy).

Exports one TP8 replica per node of a DGX H100 cluster (default 64, 512 and 2048 nodes) for every
engine in the command and script formats. The plan's figures come from evaluating one node (the
exporters copy them; only the layout grows), so this times the exporters alone. Target: linear in
the nodes (issue 16 point 7: ``export --nodes 2048`` took 160 s).
"""

from __future__ import annotations

import dataclasses
import statistics
import sys
import time
from pathlib import Path

# this checkout's code, not an installed copy (`pip install .` leaves one in site-packages)
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from studio.core.building.builders import build_cluster
from studio.core.layout import Layout
from studio.core.project import Project
from studio.core.workload import Workload
from studio.engine import evaluate
from studio.io.export import export_plan
from studio.io.presets import load_catalog


def _case(nodes: int):
    cat = load_catalog()
    model = cat.model("llama-3.1-70b").architecture
    one = Project(name="bench", cluster=build_cluster(cat.node("dgx-h100"), 1, cat.gpu("h100-sxm"), cat.links),
                  model=model, layout=Layout(tp=8), workload=Workload(isl=2048, osl=512, batch=64))
    plan = evaluate(one)
    big = one.replace(cluster=build_cluster(cat.node("dgx-h100"), nodes, cat.gpu("h100-sxm"), cat.links),
                      layout=Layout(tp=8, dp=nodes))
    return big, dataclasses.replace(plan, layout=big.layout)


def main(argv: list[str]) -> None:
    for nodes in [int(a) for a in argv] or [64, 512, 2048]:
        project, plan = _case(nodes)
        for engine in ("vllm", "trtllm", "sglang"):
            for fmt in ("command", "script"):
                times = []
                for _ in range(3):
                    t = time.perf_counter()
                    export_plan(project, plan, engine=engine, fmt=fmt)
                    times.append(time.perf_counter() - t)
                print(f"{nodes:5d} nodes  {engine:6s} {fmt:7s} {statistics.median(times) * 1000:8.1f} ms")


if __name__ == "__main__":
    main(sys.argv[1:])
