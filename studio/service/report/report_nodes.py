"""What runs on each node, grouped: one row per kind of node instead of one row per GPU.

A 512-node cluster has 4,096 GPUs; the report lists the nodes that hold the same thing (the same
GPU types running the same pipeline stage and tensor-parallel ranks, slot by slot) as one row with
a count. Nothing here draws; it is O(GPUs) with dictionary lookups.
"""

from __future__ import annotations

from dataclasses import dataclass

from studio.core.hardware import Cluster
from studio.engine.plan.results import GpuMemory, PlanResult

#: Most node rows the report lists; the rest are counted in one closing row.
MAX_GROUP_ROWS = 12
#: Node names shown per row before "…".
NAMES_SHOWN = 2

#: What one GPU slot of a node does: (GPU type, stage, TP rank), stage -1 = the layout leaves it idle.
Slot = tuple[str, int, int]


@dataclass(frozen=True)
class NodeGroup:
    """Nodes whose GPUs do the same work, slot by slot.

    Attributes
    ----------
    names:
        Every node of the group, in cluster order.
    gpu_types:
        ``(GPU display name, count)`` of one node.
    stages:
        Pipeline stages its GPUs run, sorted (empty: every GPU idle).
    tp_ranks:
        Tensor-parallel ranks its GPUs hold, sorted.
    replicas:
        How many data-parallel replicas one node of the group serves a part of.
    idle:
        GPUs of one node the layout does not use.
    busiest:
        The most loaded GPU of the whole group (``None`` when all are idle).
    """

    names: tuple[str, ...]
    gpu_types: tuple[tuple[str, int], ...]
    stages: tuple[int, ...]
    tp_ranks: tuple[int, ...]
    replicas: int
    idle: int
    busiest: GpuMemory | None

    @property
    def count(self) -> int:
        """Nodes in the group."""
        return len(self.names)


def spans(values: tuple[int, ...]) -> str:
    """``(0, 1, 2, 5, 7, 8)`` as ``0–2, 5, 7–8``."""
    out: list[str] = []
    start = prev = None
    for v in values:
        if prev is not None and v == prev + 1:
            prev = v
            continue
        if start is not None:
            out.append(str(start) if start == prev else f"{start}–{prev}")
        start = prev = v
    if start is not None:
        out.append(str(start) if start == prev else f"{start}–{prev}")
    return ", ".join(out)


@dataclass
class _Acc:
    names: list[str]
    busiest: GpuMemory | None = None
    replicas: int = 0


def node_groups(cluster: Cluster, plan: PlanResult) -> list[NodeGroup]:
    """The nodes of ``cluster`` grouped by what ``plan`` runs on them, biggest group first
    (ties in cluster order)."""
    by_gpu = {m.gpu_id: m for m in plan.memory}
    groups: dict[tuple[Slot, ...], _Acc] = {}
    for node in cluster.nodes:
        gpus = sorted(node.gpus, key=lambda g: g.slot)
        mems = [by_gpu.get(g.id) for g in gpus]
        key = tuple(
            (g.type, m.stage, m.tp_rank) if m is not None else (g.type, -1, -1)
            for g, m in zip(gpus, mems, strict=True)
        )
        acc = groups.setdefault(key, _Acc([]))
        acc.names.append(node.name)
        used = [m for m in mems if m is not None]
        # replicas one node serves a part of: the same for every node of a regular layout; the
        # largest is kept otherwise
        acc.replicas = max(acc.replicas, len({m.dp_index for m in used}))
        top = max(used, key=lambda m: m.total, default=None)
        if top is not None and (acc.busiest is None or top.total > acc.busiest.total):
            acc.busiest = top
    out = []
    for key, acc in groups.items():
        types: dict[str, int] = {}
        for t, _s, _r in key:
            name = cluster.gpu_specs[t].name if t in cluster.gpu_specs else t
            types[name] = types.get(name, 0) + 1
        ranks = [(s, r) for _t, s, r in key if s >= 0]
        out.append(
            NodeGroup(
                names=tuple(acc.names),
                gpu_types=tuple(types.items()),
                stages=tuple(sorted({s for s, _r in ranks})),
                tp_ranks=tuple(sorted({r for _s, r in ranks})),
                replicas=acc.replicas,
                idle=len(key) - len(ranks),
                busiest=acc.busiest,
            )
        )
    out.sort(key=lambda g: -g.count)  # stable: equal counts keep the cluster's order
    return out


def describe(group: NodeGroup, plan: PlanResult) -> str:
    """What one node of ``group`` runs, in words: ``stage 0 (layers 1–63), TP ranks 0–7 of 1 replica``."""
    if not group.stages:
        return "nothing (idle)"
    first = {}
    start = 1
    for st in plan.stages:
        first[st.stage] = (start, start + st.layers - 1)
        start += st.layers
    if len(group.stages) == 1:
        s = group.stages[0]
        lo, hi = first.get(s, (0, 0))
        what = f"stage {s} (layers {lo}–{hi})" if lo else f"stage {s}"
    else:
        what = f"stages {spans(group.stages)}"
    if plan.layout.tp > 1:
        what += f", TP rank{'s' if len(group.tp_ranks) > 1 else ''} {spans(group.tp_ranks)}"
    what += f" of {group.replicas:,} replica{'s' if group.replicas != 1 else ''}"
    if group.idle:
        what += f"; {group.idle} GPU{'s' if group.idle != 1 else ''} idle"
    return what


def node_names(group: NodeGroup) -> str:
    """The first names of the group: ``node-0, node-2, …`` (the count is a column of its own)."""
    shown = ", ".join(group.names[:NAMES_SHOWN])
    return shown if group.count <= NAMES_SHOWN else f"{shown}, …"


#: Largest cluster the report draws link by link with the canvas; above either count it draws the
#: node map (a box per node, a cell per GPU) and the table of node kinds carries the detail. At
#: 64 nodes the canvas picture was 2,400 × 7,800 pixels; at 512 nodes 61,800 pixels tall (72 MB).
CANVAS_MAX_GPUS = 256
CANVAS_MAX_NODES = 32


def draws_links(cluster: Cluster) -> bool:
    """Whether the report's cluster picture is the canvas drawing (every GPU and link) rather
    than the node map."""
    return cluster.num_gpus <= CANVAS_MAX_GPUS and len(cluster.nodes) <= CANVAS_MAX_NODES
