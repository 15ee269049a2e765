"""Checks that a layout can exist on a cluster for a model, and the default placement."""

from __future__ import annotations

from studio.core.architecture import LLMArchitecture
from studio.core.errors import StudioError, nearest
from studio.core.hardware import Cluster
from studio.core.layout import Layout


def divisors(n: int) -> list[int]:
    """Divisors of ``n`` in increasing order."""
    return [d for d in range(1, n + 1) if n % d == 0]


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
            f"tp={t}×pp={p}" for t in divisors(n) for p in divisors(n // t) if p <= model.num_layers
        )
        raise StudioError(
            f"layout tp×pp×dp = {layout.tp}×{layout.pp}×{layout.dp} = {layout.world_size} GPUs, but the "
            f"cluster has {n}; choose tp×pp×dp = {n} (e.g. {_short(options)} with dp = {n}/(tp×pp))"
        )
    if layout.pp > model.num_layers:
        raise StudioError(
            f"layout.pp = {layout.pp} exceeds the model's {model.num_layers} layers; allowed: 1..{model.num_layers}"
        )
    if layout.layers_per_stage is not None and sum(layout.layers_per_stage) != model.num_layers:
        raise StudioError(
            f"layout.layers_per_stage sums to {sum(layout.layers_per_stage)}; the model has "
            f"{model.num_layers} layers (the entries must add up to {model.num_layers})"
        )
    if layout.ep > 1:
        if model.moe is None:
            raise StudioError(f"layout.ep = {layout.ep} but '{model.name}' has no experts; allowed: ep = 1")
        e = model.moe.num_experts
        if e % layout.ep:
            ok = [d for d in divisors(e) if (layout.tp * layout.dp) % d == 0 and (d % layout.tp == 0 or layout.tp % d == 0)]
            raise StudioError(
                f"layout.ep = {layout.ep} does not divide the {e} routed experts; allowed: {', '.join(map(str, ok))}"
            )
    ids = [g.id for g in gpus]
    if layout.placement is None:
        return tuple(ids)
    known = set(ids)
    for g in layout.placement:
        if g not in known:
            hint = nearest(g, ids)
            extra = f"; did you mean {', '.join(repr(x) for x in hint)}?" if hint else ""
            raise StudioError(f"layout.placement names GPU '{g}', which is not in the cluster{extra}")
    return layout.placement


def _short(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[: limit - 1].rsplit(",", 1)[0] + ", …"
