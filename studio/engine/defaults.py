"""A sensible starting layout for a cluster and a model: the card's production rule.

TP inside a node (as many GPUs as the node has, lowered until it divides the attention heads and
suits the KV heads), then PP across 2, 4, … node groups until the weights fit, DP for the rest.
Used when a user builds a cluster without saying how to split the model (CLI flags, topology
import).
"""

from __future__ import annotations

from studio.core.architecture import LLMArchitecture
from studio.core.layout import Layout
from studio.core.project import Project
from studio.engine.results import PlanResult


def node_tp(model: LLMArchitecture, gpus_per_node: int, gpus: int) -> int:
    """Largest TP ≤ GPUs per node that divides the attention heads and the GPU count, and is a
    divisor or a multiple of the KV heads."""
    tp = max(1, min(gpus_per_node, gpus))
    while tp > 1 and (
        model.num_attention_heads % tp or (model.num_kv_heads % tp and tp % model.num_kv_heads) or gpus % tp
    ):
        tp -= 1
    return tp


def default_layout(model: LLMArchitecture, gpus_per_node: int, gpus: int) -> Layout:
    """TP = :func:`node_tp`, PP = 1, DP fills the rest."""
    tp = node_tp(model, gpus_per_node, gpus)
    return Layout(tp=tp, pp=1, dp=gpus // tp)


def fitting_layout(project: Project) -> tuple[Layout, PlanResult]:
    """The first layout that fits, keeping ``project.layout.tp`` and trying PP = 1, 2, … (each a
    divisor of the TP groups, at most the model's layers) with DP for the rest; micro-batches = PP
    so the pipeline is not left mostly idle.

    Returns ``(layout, plan)``; when none fits, the PP = 1 layout and its plan (which says why).
    """
    from studio.engine.evaluate import evaluate

    base = project.layout.replace(placement=None, layers_per_stage=None)
    groups = project.cluster.num_gpus // base.tp
    first: tuple[Layout, PlanResult] | None = None
    for pp in (p for p in range(1, groups + 1) if groups % p == 0 and p <= project.model.num_layers):
        layout = base.replace(pp=pp, dp=groups // pp, micro_batches=max(pp, 1) if pp > 1 else 1)
        plan = evaluate(project.replace(layout=layout))
        first = first or (layout, plan)
        if plan.fits:
            return layout, plan
    assert first is not None
    return first
