"""Hardware edit -> layout that runs on the new GPUs (studio.service.project_edits.hardware_edits.follow_cluster).

One sample = add an HGX H200 server (its NICs joined to the fabric) or delete one GPU, then
``follow_cluster``: keep the layout, let DP follow, or re-split by the production rule (which
evaluates PP = 1, 2, … until a plan fits). Prints medians; no target (it runs once per gesture).

Usage: ``python benchmarks/hardware_edits.py [--samples 5]``
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from studio.core import edits
from studio.core.building.builders import build_cluster
from studio.core.layout import Layout
from studio.core.project import Project
from studio.io.presets import load_catalog
from studio.service.project_edits.hardware_edits import follow_cluster


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=5)
    args = ap.parse_args()
    cat = load_catalog()
    dgx, hgx = cat.node("dgx-h100"), cat.node("hgx-h200")
    kinds = [cat.links[k] for k in {hgx.pcie_switch_link, hgx.host_link, hgx.socket_link, hgx.scale_up_link,
                                    hgx.nic_kind} - {None}]
    for nodes, layout in ((2, Layout(tp=8, pp=2)), (64, Layout(tp=8, pp=4, dp=16))):
        cluster = build_cluster(dgx, nodes, cat.gpu(dgx.gpu_type), cat.links)
        p = Project(cluster=cluster, model=cat.model("llama-3.1-405b").architecture, layout=layout)
        add, delete = [], []
        for _ in range(args.samples):
            t0 = time.perf_counter()
            c, ids = edits.add_template_node(p.cluster, hgx, cat.gpu(hgx.gpu_type), kinds, x=1e5)
            c, _ = edits.join_fabric(c, ids)
            _, added = follow_cluster(p, c)
            add.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            _, deleted = follow_cluster(p, edits.remove_items(p.cluster, {p.cluster.gpus[3].id}))
            delete.append(time.perf_counter() - t0)
        print(f"{nodes * 8} GPUs ({nodes} × DGX H100, {layout.label}), median of {args.samples}")
        print(f"  add HGX H200   {statistics.median(add) * 1000:8.1f} ms   {added}")
        print(f"  delete 1 GPU   {statistics.median(delete) * 1000:8.1f} ms   {deleted}")


if __name__ == "__main__":
    main()
