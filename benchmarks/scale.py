"""Scale benchmark: a 128-node / 1,024-GPU cluster (128 × DGX H100 joined by InfiniBand NDR).

Prints the median of repeated runs for one pure edit, validation, save, load, evaluate and sweep,
the autosave snapshot, plus the peak Python memory (tracemalloc) of building, saving and loading.

Run: ``python benchmarks/scale.py [--nodes 128] [--repeat 5]``
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from studio.core import edits
from studio.core.building.builders import build_cluster
from studio.core.hardware import Cluster
from studio.core.project import Project
from studio.core.workload import Workload
from studio.io.autosave import AutosaveStore
from studio.io.presets import load_catalog
from studio.io.project_file import load_project, project_to_json, save_project


def median_ms(fn: Callable[[], object], repeat: int) -> float:
    """Median wall time of ``fn`` in milliseconds."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def peak_mib(fn: Callable[[], object]) -> float:
    """Peak traced Python allocation of ``fn`` in MiB."""
    tracemalloc.start()
    try:
        fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak / 2**20


def build(nodes: int) -> Project:
    """``nodes`` × DGX H100 serving Llama 3.1 405B, TP8 × PP2 × DP(nodes/2)."""
    cat = load_catalog()
    template = cat.node("dgx-h100")
    cluster = build_cluster(template, nodes, cat.gpu(template.gpu_type), cat.links)
    model = cat.model("llama-3.1-405b").architecture
    from studio.core.layout import Layout

    return Project(
        name=f"scale {nodes} nodes",
        cluster=cluster,
        model=model,
        workload=Workload(isl=2048, osl=512, batch=64),
        layout=Layout(tp=8, pp=2, dp=max(1, nodes // 2)),
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=128)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--no-sweep", action="store_true", help="skip the (slow) full sweep")
    args = ap.parse_args(argv)
    r = args.repeat

    start = time.perf_counter()
    project = build(args.nodes)
    build_s = time.perf_counter() - start
    cluster = project.cluster
    print(f"cluster: {len(cluster.nodes)} nodes, {cluster.num_gpus} GPUs, {len(cluster.links)} links, "
          f"{len(project_to_json(project)) / 2**20:.1f} MiB JSON; built in {build_s:.2f} s")

    node = cluster.nodes[len(cluster.nodes) // 2]
    print(f"edit: move one node          {median_ms(lambda: edits.move_nodes(cluster, {node.id: (1.0, 2.0)}), r):9.1f} ms")
    print(f"edit: rename one node        {median_ms(lambda: edits.rename_node(cluster, node.id, 'renamed'), r):9.1f} ms")
    kind = load_catalog().link("pcie-gen4-switch")
    lid = cluster.links[0].id
    print(f"edit: set one link kind      {median_ms(lambda: edits.set_link_kind(cluster, lid, kind), r):9.1f} ms")
    data = cluster.model_dump()
    print(f"validate cluster             {median_ms(lambda: Cluster.model_validate(data), r):9.1f} ms")
    pdata = project.model_dump()
    print(f"validate project             {median_ms(lambda: Project.model_validate(pdata), r):9.1f} ms")

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "scale.json"
        print(f"save (atomic, with backup)   {median_ms(lambda: save_project(project, path), r):9.1f} ms")
        print(f"load (limits, validation)    {median_ms(lambda: load_project(path), r):9.1f} ms")
        store = AutosaveStore(Path(tmp) / "autosave")
        print(f"autosave snapshot            {median_ms(lambda: (store.discard('ab'), store.save(project, 'ab')), r):9.1f} ms")
        print(f"peak memory: build+save+load {peak_mib(lambda: (save_project(build(args.nodes), path), load_project(path))):9.1f} MiB")

    from studio.engine import evaluate, sweep

    print(f"evaluate current layout      {median_ms(lambda: evaluate(project), r):9.1f} ms")
    if not args.no_sweep:
        start = time.perf_counter()
        result = sweep(project)
        sweep_s = time.perf_counter() - start
        print(f"sweep (all layouts)          {sweep_s * 1e3:9.1f} ms  ({result.candidates} candidates)")
        # A different workload, so no cache of the first sweep is reused.
        other = project.replace(workload=project.workload.replace(osl=project.workload.osl + 1))
        print(f"peak memory: sweep           {peak_mib(lambda: sweep(other)):9.1f} MiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
