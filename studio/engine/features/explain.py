"""``--explain``'s ``engine features`` entry: for each feature the project sets, how it enters the
figures (or that it does not, and why), with the figures at the plan's own decode micro-batch."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from studio.engine.features.alltoall import backend_class
from studio.engine.features.balance import is_blind
from studio.engine.features.data import source
from studio.engine.features.effects import moe_rank_skew
from studio.engine.features.frontend import project_frontend, wait_ms
from studio.engine.features.routing import rank_skew
from studio.engine.plan.views import Explanation, Term

if TYPE_CHECKING:
    from studio.engine.plan.context import PlanContext


def _step_ms(ctx: PlanContext, split: bool) -> tuple[float, float]:
    """(compute, all-to-all) ms summed over the stages for one decode micro-batch of the plan, with
    or without dual-batch overlap (every other feature as the plan has it)."""
    from studio.engine.features.effects import FeatureEffects
    from studio.engine.step.iteration import IterationModel

    lc = ctx.lc
    if not split and isinstance(lc.features, FeatureEffects):
        lc = lc.replace(features=lc.features.replace(dbo=None))
    wl = ctx.project.workload
    it = IterationModel(lc, ctx.constants).micro_batch_times(0.0, float(ctx.micro_batch_size),
                                                            wl.isl + wl.osl / 2.0, float(wl.isl))
    return float(np.sum(it.compute)), float(np.sum(it.alltoall))


def features_explanation(ctx: PlanContext) -> Explanation:
    """How ``serving.features`` of the plan's project enter its figures."""
    p = ctx.project
    f, lay, engine = p.serving.features, p.layout, p.serving.runtime
    moe = p.model.moe
    ep_ranks = max(1, lay.ep // lay.tp)
    has_a2a = any(ctx.lc.alltoall)
    terms: list[Term] = []
    notes: list[str] = []
    if f.routing_skew is not None or f.eplb:
        if moe is None:
            notes.append("routing skew / EPLB: a dense model has no experts to balance")
        else:
            r = moe_rank_skew(p, lay)
            if f.routing_skew is not None:
                plain = rank_skew(moe.num_experts, lay.ep, f.routing_skew, False, 0)
                terms += [Term("routing skew (hottest expert / mean expert)", f.routing_skew, "×"),
                          Term("most loaded EP rank / mean, experts placed by id", plain, "×")]
            if f.eplb:
                terms.append(Term("EPLB redundant experts", f.redundant_experts, "per MoE layer",
                                  f"+{f.redundant_experts / moe.num_experts:.1%} expert weights per GPU"
                                  if f.redundant_experts and lay.ep > 1 else ""))
            terms.append(Term("moe_imbalance_factor used", ctx.constants.moe_imbalance_factor * r, "×",
                              "multiplies the fused MoE layer's FLOPs (the experts it reads stay the draw of its tokens: a skew concentrates pairs on the hot experts)"))
            notes.append(
                f"MoE routing: {moe.num_experts} experts over {lay.ep} EP ranks; the most loaded rank computes {r:.3g}× "
                "the mean rank's token-expert pairs" + (" after EPLB replicates the hot experts and packs them "
                "heaviest first on the least loaded rank" if f.eplb else "") + (
                    "" if f.routing_skew is not None else " (no routing skew set: experts evenly loaded, EPLB gains "
                    "nothing)") + f" — {source('eplb', 'algorithm')[:160]}…")
    if f.all2all_backend is not None:
        cls = backend_class(engine, f.all2all_backend) if moe is not None else None
        terms.append(Term("all-to-all backend", 1, "", f.all2all_backend))
        if not has_a2a:
            notes.append(f"all-to-all backend {f.all2all_backend}: this layout has no expert all-to-all (EP ≤ TP)")
        elif cls is None:
            notes.append(f"all-to-all backend {f.all2all_backend}: no public bandwidth table, so the default "
                         "all-to-all cost is kept")
        else:
            a2a = ctx.lc.alltoall[0][0]
            algo = a2a.algos[0]
            notes.append(f"all-to-all backend {f.all2all_backend} ({cls}): {algo.note}")
    if f.dual_batch_overlap:
        feats = ctx.lc.features
        dbo = getattr(feats, "dbo", None)
        if dbo is None:
            notes.append("dual-batch overlap: " + ("this layout has no expert all-to-all to hide" if not has_a2a else
                                                   f"{engine} has no such setting"))
        else:
            c0, a0 = _step_ms(ctx, split=False)
            c1, a1 = _step_ms(ctx, split=True)
            terms += [Term("decode step all-to-all without DBO", a0, "ms", f"micro-batch of {ctx.micro_batch_size}"),
                      Term("exposed all-to-all with DBO", a1, "ms", "max(0, all-to-all of the halves − their compute)"),
                      Term("compute of the two halves − whole", c1 - c0, "ms", "the cost of splitting the batch")]
            notes.append(f"dual-batch overlap: a step of at least {dbo[0]:g} decode / {dbo[1]:g} prefill tokens runs "
                         "as two halves, one's all-to-all under the other's compute — "
                         + source("dual_batch_overlap", engine, "decode_token_threshold"))
    if f.load_balance is not None:
        terms.append(Term("load balancing", 1, "", f.load_balance))
        if is_blind(f.load_balance) and moe is not None and ep_ranks > 1:
            b = float(ctx.micro_batch_size)
            from studio.engine.features.balance import busiest

            terms.append(Term("busiest attention-DP rank / mean", float(busiest(np.array([b]), ep_ranks)[0]) / b, "×",
                              f"{ep_ranks} DP ranks share each MoE layer's all-to-all"))
            notes.append(f"load balancing {f.load_balance}: requests are placed without looking at the ranks' loads, "
                         f"so each step waits for the busiest of the {ep_ranks} attention-DP ranks of an EP group "
                         "(d + z·√d sequences)")
        else:
            notes.append(f"load balancing {f.load_balance}: the ranks are costed at the mean batch, which a load-aware "
                         "balancer keeps (or no EP group spans DP ranks)")
    if f.api_servers is not None:
        fe = project_frontend(engine, f.api_servers)
        terms.append(Term("API servers", f.api_servers, "processes"))
        if fe is None:
            notes.append(f"API servers: {engine} has no public per-request front-end figure; not costed")
        else:
            servers, per = fe
            rate = ctx.load.request_rate_per_s if ctx.load is not None else 0.0
            terms += [Term("API-server CPU per request", per, "ms", source("frontend", engine, "request_ms")),
                      Term("front-end capacity", servers * 1e3 / per, "req/s"),
                      Term("wait for an API server", wait_ms(rate, servers, per), "ms", f"at {rate:.3g} req/s (M/D/1)")]
            notes.append("API servers: TTFT and the request latency include the wait for a free API-server process; "
                         "the rate is capped at their capacity")
    if f.kv_offload_gib is not None:
        terms.append(Term("KV offload", f.kv_offload_gib, "GiB"))
        notes.append("KV offload: not counted by the plan; the host KV tier (kv_tiers.host_gib) writes the same "
                     "setting and adds its capacity to the prefix cache")
    if f.attention_dp_balance:
        terms.append(Term("attention-DP balance", 1, "on"))
        notes.append("attention-DP balance: the ranks are costed at equal batches already")
    for name, value in (("InfiniBand devices", f.ib_device),):
        if value is not None:
            terms.append(Term(name, 1, "", value))
            notes.append(f"{name} {value}: where the KV transfer runs; no change to the figures")
    return Explanation(
        "engine features", len(terms), "terms",
        "each feature the plan sets, how the step model costs it (see the notes); written into the export for the "
        "engines and versions that accept them",
        tuple(terms), tuple(notes),
    )
