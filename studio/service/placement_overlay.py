"""The canvas's placement overlay as plain data: which GPU runs which rank, stage and TP group,
which links slow a TP group, and the pools of a disaggregated project.

The ranks come from the engine's answer (:attr:`PlanResult.ranks`, :attr:`PlanResult.slow_links`,
:attr:`PlanResult.slow_gpus`); before it answers, the layout's own ranks
(:meth:`studio.core.layout.Layout.coords` over the GPUs in the engine's default order) with the
slow marks of the last plan. The canvas only draws what :class:`Placement` holds.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from studio.core.errors import StudioError
from studio.core.hardware import Cluster
from studio.core.layout import Layout, RankCoords
from studio.core.project import Project
from studio.engine.plan.results import PlanResult

#: Colour index of each pool (the canvas's stage colours): blue prefill, orange decode.
POOL_INDEX = {"prefill": 0, "decode": 1}
ROLE_LETTER = {"prefill": "P", "decode": "D"}


@dataclass(frozen=True)
class Placement:
    """Where each rank of a layout runs (GPU id -> coordinate)."""

    stage_of: dict[str, int]  # pipeline stage
    tp_rank_of: dict[str, int]
    group_of: dict[str, int]  # TP group index (replica * pp + stage)
    dp_of: dict[str, int]
    slow_links: frozenset[str]  # links that are the bottleneck of a TP all-reduce over a slow kind
    slow_gpus: frozenset[str]  # GPUs of the TP groups that cross such a link
    #: Disaggregated serving: gpu id -> "prefill" or "decode" (empty when aggregated); ``stage_of``
    #: then holds the pool's colour index and ``dp_of`` the worker.
    pool_of: dict[str, str] = field(default_factory=dict)


#: No ranks and no slow marks (the engine refused the project).
EMPTY = Placement({}, {}, {}, {}, frozenset(), frozenset())


def _of_ranks(ranks: dict[str, RankCoords], slow_links: frozenset[str], slow_gpus: frozenset[str]) -> Placement:
    return Placement(
        {g: c.stage for g, c in ranks.items()}, {g: c.tp_rank for g, c in ranks.items()},
        {g: c.group for g, c in ranks.items()}, {g: c.dp_index for g, c in ranks.items()},
        slow_links, slow_gpus,
    )


def plan_overlay(plan: PlanResult) -> Placement:
    """The overlay of a costed plan: the engine's ranks and slow hops."""
    return _of_ranks(plan.ranks, plan.slow_links, plan.slow_gpus)


def layout_overlay(layout: Layout, cluster: Cluster, plan: PlanResult | None = None) -> Placement:
    """The overlay of ``layout`` before the engine has costed it: its ranks on its own placement,
    else on the GPUs in cluster order (node by node, slot by slot: the engine's default; fewer
    ranks when the cluster has too few GPUs), with the slow hops of ``plan`` (the last answer;
    none without one)."""
    gpus = layout.placement if layout.placement is not None else tuple(g.id for g in cluster.gpus[: layout.world_size])
    ranks = {g: layout.coords(r) for r, g in enumerate(gpus)}
    if plan is None:
        return _of_ranks(ranks, frozenset(), frozenset())
    return _of_ranks(ranks, plan.slow_links, plan.slow_gpus)


def pool_overlay(project: Project) -> Placement | None:
    """The overlay of a disaggregated project's pools, placed the way the engine places them
    (:func:`studio.engine.disagg.evaluate.place_pools`); ``None`` when aggregated or when the pools
    cannot be placed (the Serving mode tab then shows the engine's reason)."""
    mode = project.serving_mode
    if not mode.disaggregated or mode.prefill is None or mode.decode is None:
        return None
    from studio.engine.disagg.evaluate import place_pools

    try:
        placements = place_pools(project, mode)
    except StudioError:
        return None
    stage_of: dict[str, int] = {}
    tp_rank_of: dict[str, int] = {}
    group_of: dict[str, int] = {}
    dp_of: dict[str, int] = {}
    pool_of: dict[str, str] = {}
    groups = 0
    for role, pool, gpus in (
        ("prefill", mode.prefill, placements[0]),
        ("decode", mode.decode, placements[1]),
    ):
        per = pool.gpus_per_worker
        for rank, gid in enumerate(gpus):
            stage_of[gid] = POOL_INDEX[role]
            dp_of[gid] = rank // per
            tp_rank_of[gid] = rank % pool.tp
            group_of[gid] = groups + rank // pool.tp
            pool_of[gid] = role
        groups += len(gpus) // max(pool.tp, 1)
    return Placement(stage_of, tp_rank_of, group_of, dp_of, frozenset(), frozenset(), pool_of)


def pool_tile_text(pl: Placement, gid: str, project: Project) -> tuple[str, str]:
    """Badge (``P1``, ``D0``) and tooltip note of a GPU in a pool."""
    role = pl.pool_of[gid]
    mode = project.serving_mode
    pool = mode.prefill if role == "prefill" else mode.decode
    worker = pl.dp_of[gid]
    label = f"{ROLE_LETTER[role]}{worker}"
    shape = pool.worker_label() if pool is not None else ""
    note = f"\n— {role} pool, worker {worker} ({shape}), TP rank {pl.tp_rank_of[gid]}"
    return label, note


def rank_tile_text(pl: Placement, gid: str) -> tuple[str, str]:
    """Badge (``S1``, ``S0r2``) and tooltip note of a GPU that runs a rank of the layout."""
    stage, dp = pl.stage_of[gid], pl.dp_of[gid]
    label = f"S{stage}" if dp == 0 else f"S{stage}r{dp}"
    note = (
        f"\n— stage {stage}, TP rank {pl.tp_rank_of[gid]} of group {pl.group_of[gid]}"
        + (f", replica {dp}" if dp else "")
        + ("\n— this TP group crosses a slow link" if gid in pl.slow_gpus else "")
    )
    return label, note
