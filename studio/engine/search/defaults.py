"""A sensible starting layout for a cluster and a model: the card's production rule.

TP inside a node (as many GPUs as the node has, lowered until it divides the attention heads and
suits the KV heads), then PP across 2, 4, … node groups until the weights fit, DP for the rest.
Used when a user builds a cluster without saying how to split the model (CLI flags, topology
import).
"""

from __future__ import annotations

from studio.core.architecture import LLMArchitecture
from studio.core.layout import Layout
from studio.core.parallelism import nearest_tp, pp_options
from studio.core.project import Project
from studio.engine.plan.results import PlanResult


def node_tp(model: LLMArchitecture, gpus_per_node: int, gpus: int) -> int:
    """Largest TP ≤ GPUs per node that the model allows on ``gpus`` GPUs
    (:func:`studio.core.parallelism.nearest_tp`: it divides the GPUs and the attention heads and
    suits the KV heads, MLA aside)."""
    return nearest_tp(model, min(gpus_per_node, gpus), gpus)


def default_layout(model: LLMArchitecture, gpus_per_node: int, gpus: int) -> Layout:
    """TP = :func:`node_tp`, PP = 1, DP fills the rest."""
    tp = node_tp(model, gpus_per_node, gpus)
    return Layout(tp=tp, pp=1, dp=gpus // tp)


def fitting_layout(project: Project, *, details: bool = True) -> tuple[Layout, PlanResult]:
    """The first layout that fits, keeping ``project.layout.tp`` and trying PP = 1, 2, … (each a
    divisor of the TP groups, at most the model's layers) with DP for the rest; micro-batches = PP
    so the pipeline is not left mostly idle.

    Returns ``(layout, plan)``; when none fits, the PP = 1 layout and its plan (which says why).
    ``details=False``: a caller that wants the layout only gets plans without explanations,
    timelines or rank map (:func:`~studio.engine.plan.evaluate.evaluate`'s ``details``).
    """
    from studio.engine.plan.evaluate import evaluate

    base = project.layout.replace(placement=None, layers_per_stage=None)
    groups = project.cluster.num_gpus // base.tp
    first: tuple[Layout, PlanResult] | None = None
    for pp in pp_options(project.model, base.tp, base.tp * groups):
        layout = base.replace(pp=pp, dp=groups // pp, micro_batches=max(pp, 1) if pp > 1 else 1)
        plan = evaluate(project.replace(layout=layout), details=details)
        first = first or (layout, plan)
        if plan.fits:
            return layout, plan
    assert first is not None
    return first
