"""Hardware edits that keep a live plan: the layout follows the GPU count in the same step.

Behaviour (one rule, named in the undo text):

1. The layout is kept when it still uses exactly the drawn GPUs and the model allows it.
2. Otherwise, if TP × PP still divides the new GPU count, **DP follows the GPU count**.
3. Otherwise the layout is **re-split by the production rule**: TP = the GPUs of a server, lowered
   until the model allows it (:func:`studio.engine.search.defaults.node_tp`), then the first PP (1, 2, …)
   whose plan fits (:func:`studio.engine.search.defaults.fitting_layout`), DP for the rest.

An explicit placement survives only while it names exactly the GPUs the layout uses; otherwise
GPUs are assigned in cluster order again.
"""

from __future__ import annotations

from studio.core.errors import StudioError
from studio.core.hardware import Cluster
from studio.core.layout import Layout
from studio.core.parallelism import cp_options, dp_for, layout_reason, nearest_ep
from studio.core.project import Project, drop_unrunnable_pinned


def _placement_ok(layout: Layout, cluster: Cluster) -> bool:
    if layout.placement is None:
        return True
    ids = {g.id for g in cluster.gpus}
    return len(layout.placement) == len(ids) and all(g in ids for g in layout.placement)


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
    if layout_reason(model, layout, gpus) is None:
        new = project.replace(cluster=cluster, layout=layout)
        return new, ("" if layout == old else "layout placement reset to cluster order")
    tp, pp = layout.tp, layout.pp
    base = layout.replace(placement=None)
    if layout_reason(model, base.replace(dp=dp_for(tp, pp, gpus), ep=1, cp=1), gpus) is None:
        dp = dp_for(tp, pp, gpus)
        cps = [c for c in cp_options(model, tp, dp, layout.cp_mode) if c <= layout.cp]
        layout = base.replace(dp=dp, ep=nearest_ep(model, layout.ep, tp, dp), cp=max(cps or [1]))
        return project.replace(cluster=cluster, layout=layout), f"DP follows the GPUs: layout {layout.label}"
    from studio.engine.search.defaults import fitting_layout, node_tp

    per_node = max(len(n.gpus) for n in cluster.nodes)
    tp = node_tp(model, per_node, gpus)
    start = Layout(tp=tp, pp=1, dp=gpus // tp, micro_batches=1)
    try:
        layout, _plan = fitting_layout(project.replace(cluster=cluster, layout=start))
    except StudioError:  # e.g. GPUs not linked yet: keep the PP = 1 split, the engine says why
        layout = start
    layout = layout.replace(ep=nearest_ep(model, old.ep, layout.tp, layout.dp))
    return project.replace(cluster=cluster, layout=layout), f"layout re-split to {layout.label}"
