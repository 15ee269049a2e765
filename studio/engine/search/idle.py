"""Layouts that leave GPUs idle: on a cluster whose GPU count no good split divides (15 GPUs after
a delete allow only TP1 when every GPU is used), the best or the only fitting layout may run on
whole TP groups of each server and leave the rest idle (TP8 on 8 with 7 idle, TP4×PP3 on 12).

A TP group never spans servers: for TP = t each server gives ``⌊GPUs / t⌋`` groups of its GPUs in
slot order, and the layout runs on all those groups (``PP × DP`` = their count), the GPUs left over
idle. The placement names the GPUs used, so :func:`studio.core.parallelism.gpus_used` and the
engine run it on those.
"""

from __future__ import annotations

from studio.core import parallelism
from studio.core.hardware import Cluster
from studio.core.project import Project

__all__ = ["idle_candidates", "tp_group_gpus"]


def tp_group_gpus(cluster: Cluster, tp: int) -> tuple[str, ...]:
    """The GPUs of every whole TP group of ``tp`` GPUs in each server, server by server, in slot order."""
    out: list[str] = []
    for node in cluster.nodes:
        ids = [g.id for g in sorted(node.gpus, key=lambda g: g.slot)]
        out.extend(ids[: len(ids) - len(ids) % tp])
    return tuple(out)


def idle_candidates(project: Project) -> list[tuple[int, int, int, int, tuple[str, ...]]]:
    """Every ``(tp, pp, dp, ep, placement)`` on whole TP groups of each server that leaves at least
    one GPU idle, for each TP whose groups do not already cover every GPU (those layouts are the
    ordinary candidates). TPs that do not split the model's heads are left out: a layout that
    cannot run on the GPUs it uses is no reason to leave others idle."""
    cluster, model = project.cluster, project.model
    n = cluster.num_gpus
    largest = max((len(node.gpus) for node in cluster.nodes), default=0)
    out: list[tuple[int, int, int, int, tuple[str, ...]]] = []
    for tp in range(1, min(largest, parallelism.MAX_TP) + 1):
        if parallelism.heads_reason(model, tp) is not None:
            continue
        used = tp_group_gpus(cluster, tp)
        if not used or len(used) == n:
            continue
        out.extend((t, pp, dp, ep, used) for t, pp, dp, ep in parallelism.candidates(model, len(used)) if t == tp)
    return out
