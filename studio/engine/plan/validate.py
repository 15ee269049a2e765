"""Checks that a layout can exist on a cluster for a model, and the default placement.

The rules themselves are :mod:`studio.core.parallelism`; this module turns the first broken one
into a :class:`StudioError` that names the layout field and lists the allowed values. TP that does
not split the attention heads is not refused here: the plan reports it as the error
``TP_HEADS_NOT_DIVISIBLE`` (:mod:`studio.engine.plan.rules`) so the rest of the plan is still shown.
"""

from __future__ import annotations

from studio.core import parallelism as par
from studio.core.architecture import LLMArchitecture
from studio.core.errors import StudioError, nearest
from studio.core.hardware import Cluster
from studio.core.layout import Layout


def check_layout(layout: Layout, cluster: Cluster, model: LLMArchitecture) -> tuple[str, ...]:
    """Validate ``layout`` and return its placement (filled in cluster order when missing).

    Raises
    ------
    StudioError
        Naming the field and the allowed values: tp × pp × dp must equal the cluster's GPUs; the
        placement may name only GPUs of the cluster; pp ≤ layers; layers_per_stage must sum to the
        model's layers; ep must divide the routed experts (and be 1 for a dense model).
    """
    gpus = cluster.gpus
    n = len(gpus)
    if n == 0:
        raise StudioError("the cluster has no GPUs; add a node or a GPU before planning a layout")
    if layout.world_size != n:
        options = ", ".join(
            f"tp={t}×pp={p}" for t in par.tp_options(model, n) for p in par.pp_options(model, t, n)
        )
        raise StudioError(
            f"layout tp×pp×dp = {layout.tp}×{layout.pp}×{layout.dp} = {layout.world_size} GPUs, but the "
            f"cluster has {n}; choose tp×pp×dp = {n} (e.g. {_short(options)} with dp = {n}/(tp×pp))"
        )
    why = par.pp_reason(model, layout.pp, layout.tp, n)
    if why is not None:
        allowed = ", ".join(map(str, par.pp_options(model, layout.tp, n)))
        raise StudioError(f"layout.pp: {why}; allowed: {_short(allowed)}")
    if layout.layers_per_stage is not None:
        why = par.split_reason(model, layout.layers_per_stage, layout.pp)
        if why is not None:
            raise StudioError(f"layout.layers_per_stage: {why}")
    why = par.ep_reason(model, layout.ep, layout.tp, layout.dp)
    if why is not None:
        allowed = ", ".join(map(str, par.ep_options(model, layout.tp, layout.dp)))
        raise StudioError(f"layout.ep: {why}; allowed: {_short(allowed)}")
    why = par.cp_reason(model, layout.cp, layout.tp, layout.dp, layout.cp_mode)
    if why is not None:
        allowed = ", ".join(map(str, par.cp_options(model, layout.tp, layout.dp, layout.cp_mode)))
        raise StudioError(f"layout.cp: {why}; allowed {layout.cp_mode} CP: {allowed}")
    ids = [g.id for g in gpus]
    if layout.placement is None:
        return tuple(ids)
    known = set(ids)
    for g in layout.placement:
        if g not in known:
            hint = nearest(g, ids)
            extra = f"; did you mean {', '.join(repr(x) for x in hint)}?" if hint else ""
            raise StudioError(
                f"layout.placement names GPU '{g}', which is not in the cluster{extra}"
            )
    return layout.placement


def _short(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[: limit - 1].rsplit(",", 1)[0] + ", …"
