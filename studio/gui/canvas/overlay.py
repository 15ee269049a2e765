"""Placement overlay: which GPU runs which rank, stage and TP group; which links slow a group."""

from __future__ import annotations

from dataclasses import dataclass, field

from studio.core.hardware import Cluster
from studio.core.layout import Layout


@dataclass(frozen=True)
class Placement:
    """Where each rank of a layout runs."""

    stage_of: dict[str, int]  # gpu id -> pipeline stage
    tp_rank_of: dict[str, int]
    group_of: dict[str, int]  # gpu id -> TP group index (replica * pp + stage)
    dp_of: dict[str, int]
    slow_links: frozenset[str]  # links that are the bottleneck of a TP all-reduce over a slow kind
    slow_gpus: frozenset[str]  # GPUs of the TP groups that cross such a link
    #: Disaggregated serving: gpu id -> "prefill" or "decode" (empty when aggregated); ``stage_of``
    #: then holds the pool's colour index and ``dp_of`` the worker.
    pool_of: dict[str, str] = field(default_factory=dict)


def resolve_placement(layout: Layout, cluster: Cluster) -> tuple[str, ...]:
    """The GPU of each rank: the layout's own placement, else cluster order (node by node, slot by
    slot), the engine's default. Shorter than the world size when the cluster has too few GPUs."""
    if layout.placement is not None:
        return layout.placement
    return tuple(g.id for g in cluster.gpus[: layout.world_size])


def compute_placement(layout: Layout, cluster: Cluster, comm: tuple = ()) -> Placement:
    """Map GPUs to stage / TP group; mark TP all-reduces whose bottleneck hop is not a scale-up
    link (``comm`` is ``PlanResult.comm``; empty before the engine answered)."""
    gpus = resolve_placement(layout, cluster)
    stage_of: dict[str, int] = {}
    tp_rank_of: dict[str, int] = {}
    group_of: dict[str, int] = {}
    dp_of: dict[str, int] = {}
    for rank, gid in enumerate(gpus):
        tp_rank = rank % layout.tp
        group = rank // layout.tp
        stage_of[gid] = group % layout.pp
        dp_of[gid] = group // layout.pp
        tp_rank_of[gid] = tp_rank
        group_of[gid] = group
    slow_links: set[str] = set()
    slow_gpus: set[str] = set()
    for c in comm:
        if getattr(c, "kind", None) != "allreduce" or not c.bottleneck_kind:
            continue
        kind = cluster.link_kinds.get(c.bottleneck_kind)
        if kind is None or kind.family.is_scale_up:
            continue
        if c.bottleneck_link:
            slow_links.add(c.bottleneck_link)
        slow_gpus.update(c.group)
    return Placement(stage_of, tp_rank_of, group_of, dp_of, frozenset(slow_links), frozenset(slow_gpus))
