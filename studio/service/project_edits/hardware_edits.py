"""Hardware edits that keep a live plan: the layout follows the GPU count in the same step.

Behaviour (one rule, named in the undo text):

1. The layout is kept when it still uses exactly the drawn GPUs and the model allows it.
2. Otherwise, if TP × PP still divides the new GPU count, **DP follows the GPU count**.
3. Otherwise the layout is **re-split by the production rule**: TP = the GPUs of a server, lowered
   until the model allows it (:func:`studio.engine.search.defaults.node_tp`), then the first PP (1, 2, …)
   whose plan fits (:func:`studio.engine.search.defaults.fitting_layout`), DP for the rest — or, when
   that is better for the project's objective or is the only one that fits, a layout on whole TP
   groups of each server that leaves the GPUs left over **idle** (15 GPUs after a delete run
   TP4×PP3 on 12 of them rather than TP1×PP15): its placement names the GPUs it uses, the undo
   text says how many stay idle, and the canvas hatches them.

A layout that leaves GPUs idle is re-split again on the next change of the GPUs (a GPU dropped
back runs on all of them again).

An explicit placement survives only while it names exactly the GPUs the layout uses; otherwise
GPUs are assigned in cluster order again.
"""

from __future__ import annotations

from studio.core.errors import StudioError
from studio.core.hardware import Cluster
from studio.core.layout import Layout
from studio.core.parallelism import (
    cp_options,
    dp_for,
    gpus_used,
    layout_reason,
    nearest_ep,
    pp_options,
    tp_reason,
)
from studio.core.project import Project, drop_unrunnable_pinned


def _placement_ok(layout: Layout, cluster: Cluster) -> bool:
    if layout.placement is None:
        return True
    ids = {g.id for g in cluster.gpus}
    return len(layout.placement) == len(ids) and all(g in ids for g in layout.placement)


def _costed(project: Project, layout: Layout) -> tuple[int, float]:
    """How good ``layout`` is for the project's objective (bigger is better): a plan that fits
    first, then one the engine refuses for a missing link (its message names the GPUs to join:
    the user fixes the drawing, not the layout), then one that does not fit."""
    from studio.engine import evaluate

    try:
        plan = evaluate(project.replace(layout=layout), details=False)
    except StudioError:
        return (1, 0.0)
    if not plan.fits:
        return (0, 0.0)
    objective = project.explorer.objective
    if objective == "cost":
        return (2, -plan.usd_per_million_output_tokens)
    if objective == "latency":
        return (2, -plan.tpot_ms)
    return (2, plan.output_tokens_per_s)  # throughput of the drawn GPUs: idle ones serve nothing


def _with_idle(project: Project, cluster: Cluster) -> list[Layout]:
    """Layouts on whole TP groups of each server (a group never spans servers), the GPUs left
    over idle: for each TP the model allows, every PP dividing the groups' count (DP for the rest)."""
    model = project.model
    servers = [[g.id for g in sorted(n.gpus, key=lambda g: g.slot)] for n in cluster.nodes if n.gpus]
    out: list[Layout] = []
    n = cluster.num_gpus
    largest = max(len(ids) for ids in servers)
    for tp in [t for t in range(1, largest + 1) if tp_reason(model, t, t) is None]:
        groups = [ids[i:i + tp] for ids in servers for i in range(0, len(ids) - tp + 1, tp)]
        k = len(groups)
        if k == 0 or k * tp == n:
            continue  # every GPU used: the ordinary re-split covers it
        for pp in pp_options(model, tp, tp * k):
            dp = k // pp
            used = tuple(g for grp in groups[:pp * dp] for g in grp)
            out.append(Layout(tp=tp, pp=pp, dp=dp, micro_batches=max(pp, 1) if pp > 1 else 1,
                              ep=nearest_ep(model, 1, tp, dp), placement=used))
    return out


def follow_cluster(project: Project, cluster: Cluster) -> tuple[Project, str]:
    """``project`` with ``cluster`` and a layout that runs on it; pinned layouts that cannot run
    on the new cluster are dropped (a file is refused when they are stored; undo brings them back).

    Returns
    -------
    (project, note):
        The new project and a short note for the undo text ("layout TP8×PP3×DP1"), empty when
        the layout did not change.
    """
    new, note = _follow(project, cluster)
    return drop_unrunnable_pinned(new), note


def _follow(project: Project, cluster: Cluster) -> tuple[Project, str]:
    model, old = project.model, project.layout
    gpus = cluster.num_gpus
    if gpus == 0 or cluster.gpus == project.cluster.gpus:
        return project.replace(cluster=cluster), ""
    layout = old if _placement_ok(old, cluster) else old.replace(placement=None)
    if layout_reason(model, layout, gpus) is None and gpus_used(layout, gpus) == gpus:
        new = project.replace(cluster=cluster, layout=layout)
        return new, ("" if layout == old else "layout placement reset to cluster order")
    tp, pp = layout.tp, layout.pp
    base = layout.replace(placement=None)
    if layout_reason(model, base.replace(dp=dp_for(tp, pp, gpus), ep=1, cp=1), gpus) is None:
        dp = dp_for(tp, pp, gpus)
        cps = [c for c in cp_options(model, tp, dp, layout.cp_mode) if c <= layout.cp]
        layout = base.replace(dp=dp, ep=nearest_ep(model, layout.ep, tp, dp), cp=max(cps or [1]))
        return project.replace(cluster=cluster, layout=layout), f"DP follows the GPUs: layout {layout.label}"
    from studio.engine.search.defaults import node_tp

    per_node = max(len(n.gpus) for n in cluster.nodes)
    tp = node_tp(model, per_node, gpus)
    start = Layout(tp=tp, pp=1, dp=gpus // tp, micro_batches=1)
    moved = project.replace(cluster=cluster, layout=start)
    # every GPU: the first PP (1, 2, …) whose plan fits, as the production rule says
    layout, best = start, (0, 0.0)
    for pp in pp_options(model, tp, gpus):
        candidate = start.replace(pp=pp, dp=gpus // tp // pp, micro_batches=max(pp, 1) if pp > 1 else 1)
        score = _costed(moved, candidate)
        if score > best:
            layout, best = candidate, score
        if score[0] == 2:
            break
    layout = layout.replace(ep=nearest_ep(model, old.ep, layout.tp, layout.dp))
    for candidate in _with_idle(project, cluster):  # or GPUs left idle, when that is better
        score = _costed(moved, candidate)
        if score > best:
            layout, best = candidate, score
    idle = gpus - layout.world_size
    note = f"layout re-split to {layout.label}"
    if idle:
        note += f" on {layout.world_size} GPUs, {idle} idle"
    return project.replace(cluster=cluster, layout=layout), note
