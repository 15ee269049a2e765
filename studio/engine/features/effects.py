"""The engine features of a project as changes to its costs: :func:`feature_constants` (the MoE
routing skew left after EPLB, before the kernels are built) and :func:`with_features` (the redundant
experts' weights, the all-to-all backend, and :class:`FeatureEffects` riding on the costs for the
iteration model: dual-batch overlap and a load-blind data-parallel balancer).

With every feature off both return their input itself, so every figure stays what it was.
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from typing import TYPE_CHECKING

import numpy as np

from studio.core.layout import Layout
from studio.core.project import Project
from studio.engine.fabric.topology import Topology
from studio.engine.features.alltoall import backend_class, backend_collectives
from studio.engine.features.balance import busiest, is_blind
from studio.engine.features.data import figure
from studio.engine.features.overlap import overlapped, split_rows
from studio.engine.features.routing import rank_skew
from studio.engine.step.constants import Constants
from studio.engine.step.records import Record

if TYPE_CHECKING:
    from studio.engine.step.costing import LayoutCosts
    from studio.engine.step.iteration import IterationTimes

_DERIVED: OrderedDict[tuple[int, float], tuple[Constants, Constants]] = OrderedDict()


def moe_rank_skew(project: Project, layout: Layout) -> float:
    """The factor on the most loaded EP rank's token-expert pairs for ``project`` on ``layout``
    (1 without a routing skew, for a dense model, or without expert parallelism)."""
    moe, f = project.model.moe, project.serving.features
    if moe is None or f.routing_skew is None:
        return 1.0
    return rank_skew(moe.num_experts, layout.ep, f.routing_skew, f.eplb, f.redundant_experts)


def feature_constants(project: Project, layout: Layout, c: Constants) -> Constants:
    """``c`` with ``moe_imbalance_factor`` multiplied by the routing skew the most loaded EP rank
    sees (:func:`moe_rank_skew`); ``c`` itself when that is 1. The derived constants are kept per
    (``c``, factor), so the kernels built from them are reused as ``c``'s are."""
    r = moe_rank_skew(project, layout)
    if r == 1.0:
        return c
    key = (id(c), r)
    hit = _DERIVED.get(key)
    if hit is not None and hit[0] is c:
        return hit[1]
    out = dataclasses.replace(c, moe_imbalance_factor=c.moe_imbalance_factor * r)
    _DERIVED[key] = (c, out)
    while len(_DERIVED) > 64:
        _DERIVED.popitem(last=False)
    return out


class FeatureEffects(Record, frozen=True):
    """What a step of a replica does differently under the project's features."""

    plain: LayoutCosts  # the costs without this record (backend and redundant experts applied)
    dbo: tuple[float, float] | None  # (decode, prefill) token thresholds of dual-batch overlap
    balance_ranks: int  # DP ranks of one EP group behind a load-blind balancer (1: none)

    def micro_batch_times(self, c: Constants, prefill_tokens: np.ndarray | float, decode_seqs: np.ndarray | float,
                          decode_ctx: np.ndarray | float, prompt_len: np.ndarray | float) -> IterationTimes:
        """:meth:`~studio.engine.step.iteration.IterationModel.micro_batch_times` under the features:
        the busiest rank's sequences with a load-blind balancer, the overlapped halves with DBO."""
        from studio.engine.step.iteration import IterationModel

        im = IterationModel(self.plain, c)
        x = np.atleast_1d(np.asarray(prefill_tokens, dtype=float))
        d = np.atleast_1d(np.asarray(decode_seqs, dtype=float))
        x, d = np.broadcast_arrays(x, d)
        if self.balance_ranks > 1:
            d = busiest(d, self.balance_ranks)
        whole = im.micro_batch_times(x, d, decode_ctx, prompt_len)
        if self.dbo is None:
            return whole
        spec = self.plain.spec
        split = split_rows(x, d * (spec.verify_tokens if spec is not None else 1), *self.dbo)
        if not split.any():
            return whole
        half = im.micro_batch_times(x / 2.0, d / 2.0, decode_ctx, prompt_len)
        return overlapped(whole, half, split)


def dbo_thresholds(engine: str) -> tuple[float, float] | None:
    """(decode, prefill) tokens from which ``engine`` splits a step; None where it has no DBO."""
    table = figure("dual_batch_overlap")
    if engine not in table:
        return None
    return (float(figure("dual_batch_overlap", engine, "decode_token_threshold")),
            float(figure("dual_batch_overlap", engine, "prefill_token_threshold")))


def _with_redundant_experts(lc: LayoutCosts, experts: int, redundant: int) -> LayoutCosts:
    grow = 1.0 + redundant / experts
    shapes = [sh.replace(weights_by_module={**sh.weights_by_module,
                                            "experts": sh.weights_by_module.get("experts", 0.0) * grow},
                         expert_bytes=sh.expert_bytes * grow) for sh in lc.shapes]
    return lc.replace(shapes=shapes)


def with_features(project: Project, layout: Layout, lc: LayoutCosts, topo: Topology, c: Constants) -> LayoutCosts:
    """``lc`` under the project's engine features (``lc`` itself when none changes a cost)."""
    f = project.serving.features
    if not f.any:
        return lc
    engine = project.serving.runtime
    moe = project.model.moe
    out = lc
    if moe is not None and f.eplb and f.redundant_experts and layout.ep > 1:
        out = _with_redundant_experts(out, moe.num_experts, f.redundant_experts)
    has_a2a = any(out.alltoall)
    cls = backend_class(engine, f.all2all_backend) if moe is not None else None
    if cls is not None and has_a2a:
        out = out.replace(alltoall=backend_collectives(out.alltoall, cls, topo, c, moe.experts_per_token if moe else 0,
                                                       max(1, layout.ep // layout.tp)))
    dbo = dbo_thresholds(engine) if f.dual_batch_overlap and has_a2a else None
    ranks = max(1, layout.ep // layout.tp) if moe is not None and is_blind(f.load_balance) else 1
    if dbo is None and ranks <= 1:
        return out
    return out.replace(features=FeatureEffects(plain=out, dbo=dbo, balance_ranks=ranks))
