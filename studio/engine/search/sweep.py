"""Sweep every layout of a cluster (TP × PP × DP × EP × CP × micro-batches × batch), vectorised.

Per (TP, PP, EP) the batch-independent costs — memory shapes and every collective over the drawn
links — are computed once (:func:`studio.engine.step.costing.layout_costs`); the batch × micro-batch grid
is then evaluated as numpy arrays with the same step-time model :func:`evaluate` uses.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import field

import numpy as np

from studio.core import parallelism
from studio.core.errors import StudioError
from studio.core.layout import Layout
from studio.core.project import Objective, Project
from studio.core.units import GIB
from studio.engine.fabric.topology import Topology, topology_of
from studio.engine.kv_tiers.prefix_cache import batch_with_shared_prefix
from studio.engine.kv_tiers.tiers import prefix_cache_on
from studio.engine.plan.costs import (
    prefix_reuse,
    project_batch_limit,
    project_budget,
    project_costs,
    with_prefix_load,
)
from studio.engine.plan.evaluate import constants_for, evaluate, resolve_calibration
from studio.engine.plan.fits import fits as layout_fits
from studio.engine.plan.fits import heads_split, memory_fit
from studio.engine.plan.results import PlanResult
from studio.engine.search.idle import idle_candidates, tp_group_gpus
from studio.engine.serving.serve_times import serve_times
from studio.engine.step.costing import LayoutCosts
from studio.engine.step.records import frozen_result
from studio.engine.step.step_times import bubble_fraction

OBJECTIVES = ("throughput", "cost", "latency")
COLUMNS = (
    "tp", "pp", "dp", "ep", "micro_batches", "batch", "fits", "mem_peak_gib", "kv_capacity_tokens", "ttft_ms",
    "tpot_ms", "tokens_per_s", "tokens_per_s_per_gpu", "tokens_per_s_per_user", "usd_per_million", "bubble",
    "warnings_count", "meets_targets", "cp", "cp_prefill", "idle_gpus",
)
MAX_SAMPLED_REPLICAS = 4
#: Largest prefill-CP degree the sweep tries (ring attention over more replicas is rarely served).
MAX_SWEPT_PREFILL_CP = 8


@frozen_result
class SweepResult:
    """Every candidate layout of a sweep as columns (one row per candidate).

    Attributes
    ----------
    order:
        Row indices best first for the objective (fitting rows meeting the targets, then fitting
        rows, then the rest).
    pareto:
        Fitting rows not dominated on (tokens/s per GPU, tokens/s per user), by tokens/s per GPU.
    recommended:
        Best row that fits and meets the targets, or None.
    reasons:
        Why the recommendation wins and what the best other layouts trade.
    """

    project: Project
    objective: str
    candidates: int
    columns: dict[str, np.ndarray]
    reasons_unfit: tuple[str, ...]
    order: np.ndarray
    pareto: np.ndarray
    recommended: int | None
    reasons: tuple[str, ...]
    cancelled: bool = False
    ttft_ms: float | None = None
    tpot_ms: float | None = None
    _plans: dict[int, PlanResult] = field(default_factory=dict, repr=False, compare=False)
    #: layout costs of the plans made, by layout and placement: rows of one layout at other batches
    #: share them (:func:`evaluate`'s ``costs``)
    _costs: dict = field(default_factory=dict, repr=False, compare=False)

    def layout(self, i: int) -> Layout:
        """The layout of row ``i`` (placement in cluster order; a row that leaves GPUs idle names
        the GPUs it runs on, :func:`studio.engine.search.idle.tp_group_gpus`)."""
        col = self.columns
        tp = int(col["tp"][i])
        placement = tp_group_gpus(self.project.cluster, tp) if int(col["idle_gpus"][i]) else None
        return Layout(tp=tp, pp=int(col["pp"][i]), dp=int(col["dp"][i]), ep=int(col["ep"][i]),
                      micro_batches=int(col["micro_batches"][i]), cp=int(col["cp"][i]),
                      cp_mode="prefill" if bool(col["cp_prefill"][i]) else "decode", placement=placement)

    def plan(self, i: int, *, details: bool = True) -> PlanResult:
        """Full :func:`evaluate` of row ``i`` at its batch size (cached).

        ``details=False``: the figures only (``evaluate(..., details=False)``: no explanations,
        timelines or rank map), for a caller that prints :meth:`PlanResult.to_json`; not kept, so a
        later full ``plan(i)`` still has everything (the full plan is returned when already there)."""
        plan = self._plans.get(i)
        if plan is not None:
            return plan
        wl = self.project.workload.model_copy(update={"batch": int(self.columns["batch"][i])})
        plan = evaluate(self.project.model_copy(update={"workload": wl}), self.layout(i), details=details,
                        costs=self._costs)
        if details:
            self._plans[i] = plan
        return plan

    def label(self, i: int) -> str:
        idle = int(self.columns["idle_gpus"][i])
        return (f"{self.layout(i).label} M={int(self.columns['micro_batches'][i])} batch={int(self.columns['batch'][i])}"
                + (f" ({idle} GPU{'s' if idle != 1 else ''} idle)" if idle else ""))


def layout_candidates(project: Project, n_gpus: int) -> list[tuple[int, int, int, int]]:
    """Every ``(tp, pp, dp, ep)`` that uses all ``n_gpus`` GPUs and that a :class:`Layout` can hold
    (:func:`studio.core.parallelism.candidates`): TP and PP within the layout's limits, PP at most
    the model's layers, EP as the layout rule allows. TPs that do not split the heads stay in (the
    sweep lists them as not running, with the reason)."""
    return parallelism.candidates(project.model, n_gpus, check_heads=False)


def cp_variants(project: Project, tp: int, pp: int, dp: int, sizes: list[int] | None = None,
                modes: tuple[str, ...] = ("decode", "prefill")) -> list[tuple[int, str]]:
    """The (CP, mode) pairs the sweep tries for one (TP, PP, DP): no CP, every decode CP the rules
    allow, and prefill CP up to :data:`MAX_SWEPT_PREFILL_CP` on single-stage layouts. ``sizes``
    keeps only those CP degrees (1 = no CP)."""
    out = [(1, "decode")]
    model = project.model
    if "decode" in modes:
        out += [(c, "decode") for c in parallelism.cp_options(model, tp, dp, "decode") if c > 1]
    if "prefill" in modes and pp == 1:
        out += [(c, "prefill") for c in parallelism.cp_options(model, tp, dp, "prefill")
                if 1 < c <= MAX_SWEPT_PREFILL_CP]
    if sizes is not None:
        out = [(c, m) for c, m in out if c in sizes]
    return out


def _batch_grid(max_batch: int, batches: list[int] | None) -> list[int]:
    if batches:
        bad = [b for b in batches if not isinstance(b, int) or b < 1]
        if bad:
            raise StudioError(f"sweep batches must be positive integers (got {bad[0]!r})")
        return sorted(set(batches))
    out = [1 << k for k in range(int(math.log2(max_batch)) + 1)]
    if out[-1] != max_batch:
        out.append(max_batch)
    return out


def _sample(dp: int) -> list[int] | None:
    if dp <= MAX_SAMPLED_REPLICAS:
        return None
    return sorted({0, dp // 3, (2 * dp) // 3, dp - 1})


def sweep(
    project: Project,
    *,
    objective: Objective = "throughput",
    ttft_ms: float | None = None,
    tpot_ms: float | None = None,
    batches: list[int] | None = None,
    progress: Callable[[float], bool] | None = None,
    cp_sizes: list[int] | None = None,
    cp_modes: tuple[str, ...] = ("decode", "prefill"),
) -> SweepResult:
    """Evaluate every layout that uses all GPUs of the cluster, rank and explain.

    Parameters
    ----------
    objective:
        ``throughput`` (output tok/s per GPU), ``cost`` ($ per million output tokens) or ``latency``
        (TPOT, then TTFT).
    ttft_ms, tpot_ms:
        Service targets; ``None`` = the workload's own.
    batches:
        Batch sizes to try; ``None`` = powers of two up to ``workload.max_batch`` plus the largest
        batch the KV cache holds.
    progress:
        Called with the fraction done; returning False cancels (the result so far comes back with
        ``cancelled=True``).
    cp_sizes, cp_modes:
        Context-parallel degrees and modes to try (:func:`cp_variants`); ``None`` = every allowed
        one when isl + osl exceeds ``long_context_tokens`` (else none), ``[1]`` = no context
        parallelism.
    """
    if objective not in OBJECTIVES:
        raise StudioError(f"sweep objective '{objective}' is not one of {', '.join(OBJECTIVES)}")
    wl, sv, model = project.workload, project.serving, project.model
    ttft_ms = wl.ttft_ms if ttft_ms is None else ttft_ms
    tpot_ms = wl.tpot_ms if tpot_ms is None else tpot_ms
    cal = resolve_calibration(project, None)
    c = constants_for(cal)
    n_gpus = project.cluster.num_gpus
    if n_gpus == 0:
        raise StudioError("the cluster has no GPUs; add a node or a GPU before sweeping layouts")
    topo = topology_of(project.cluster, cal.link_fits if cal else None)
    placement = tuple(topo.gpu_ids)
    grid = _batch_grid(wl.max_batch, batches)
    seq_len = wl.isl + wl.osl
    prices = np.array([
        sv.price_per_gpu_hour if sv.price_per_gpu_hour is not None
        else project.cluster.gpu_specs[topo.gpu_type[g]].price_per_gpu_hour for g in placement
    ])
    usd_per_hour = float(prices.sum())
    if sv.speculative is not None:  # a setting the model cannot run fails once, not per layout
        from studio.engine.step.speculative import acceptance, check_speculative

        check_speculative(model, sv.speculative)
        acceptance(sv.speculative)
    if cp_sizes is None and seq_len <= c.long_context_tokens:
        cp_sizes = [1]  # short contexts: the KV cache is small, CP only adds its exchange
    shapes = [(*shape, None) for shape in layout_candidates(project, n_gpus)] + idle_candidates(project)
    combos = [(tp, pp, dp, ep, cp, mode, used) for tp, pp, dp, ep, used in shapes
              for cp, mode in (cp_variants(project, tp, pp, dp, cp_sizes, cp_modes) if heads_split(model, tp)
                               else [(1, "decode")])]
    cols: dict[str, list[np.ndarray]] = {k: [] for k in COLUMNS}
    reasons_unfit: list[str] = []
    extra: dict[str, list[np.ndarray]] = {"allreduce_ms": [], "alltoall_ms": [], "bottleneck": [], "max_seqs": [],
                                          "cp_ms": [], "max_context": []}
    cp_kinds: list[str] = []
    kinds: list[str] = []
    a2a_kinds: list[str] = []
    cancelled = False
    for i, (tp, pp, dp, ep, cp, mode, used) in enumerate(combos):
        if progress is not None and progress(i / len(combos)) is False:
            cancelled = True
            break
        layout = Layout(tp=tp, pp=pp, dp=dp, ep=ep, cp=cp, cp_mode=mode, placement=used)
        idle = n_gpus - layout.world_size
        try:
            lc = project_costs(project, layout, used or placement, topo, c, replicas=_sample(dp))
        except StudioError as exc:  # e.g. GPUs of a group not linked
            _append_unfit(cols, reasons_unfit, extra, tp, pp, dp, ep, str(exc), cp, mode, idle)
            kinds.append("")
            a2a_kinds.append("")
            cp_kinds.append("")
            continue
        rows = _rows(lc, grid, seq_len, wl, c, usd_per_hour, project, ttft_ms, tpot_ms, topo)
        # idle GPUs serve nothing but are drawn (and paid for): per GPU means per drawn GPU
        rows["tokens_per_s_per_gpu"] = rows["tokens_per_s"] / n_gpus
        rows["idle_gpus"] = np.full(len(rows["tp"]), idle)
        for name in COLUMNS:
            cols[name].append(rows[name])
        for name in extra:
            extra[name].append(rows[name])
        reasons_unfit.extend(rows["reasons"])
        kinds.extend([rows["kind"]] * len(rows["tp"]))
        a2a_kinds.extend([rows["a2a_kind"]] * len(rows["tp"]))
        cp_kinds.extend([rows["cp_kind"]] * len(rows["tp"]))
    columns = {k: (np.concatenate(v) if v else np.zeros(0)) for k, v in cols.items()}
    for k in ("tp", "pp", "dp", "ep", "micro_batches", "batch", "kv_capacity_tokens", "warnings_count", "cp",
              "idle_gpus"):
        columns[k] = columns[k].astype(np.int64)
    for k in ("fits", "meets_targets", "cp_prefill"):
        columns[k] = columns[k].astype(bool)
    ex = {k: (np.concatenate(v) if v else np.zeros(0)) for k, v in extra.items()}
    order = _order(columns, objective)
    pareto = pareto_front(columns["tokens_per_s_per_gpu"], columns["tokens_per_s_per_user"], columns["fits"])
    rec = int(order[0]) if len(order) and columns["fits"][order[0]] and columns["meets_targets"][order[0]] else None
    ex["a2a_kind"] = a2a_kinds  # type: ignore[assignment]  # per-row labels ride with the number columns
    ex["cp_kind"] = cp_kinds  # type: ignore[assignment]
    reasons = _reasons(columns, reasons_unfit, ex, kinds, order, rec, objective, model.num_layers)
    if progress is not None and not cancelled:
        progress(1.0)
    result = SweepResult(
        project=project, objective=objective, candidates=len(columns["tp"]), columns=columns,
        reasons_unfit=tuple(reasons_unfit), order=order, pareto=pareto, recommended=rec, reasons=tuple(reasons),
        cancelled=cancelled, ttft_ms=ttft_ms, tpot_ms=tpot_ms,
    )
    from studio.engine.search.reuse_reason import reuse_reason

    if (line := reuse_reason(result)) is not None:
        result = dataclasses.replace(result, reasons=(*result.reasons, line))
    return result


def _append_unfit(cols, reasons, extra, tp, pp, dp, ep, why, cp=1, mode="decode", idle=0) -> None:
    vals = dict(tp=tp, pp=pp, dp=dp, ep=ep, micro_batches=1, batch=1, fits=False, mem_peak_gib=np.nan,
                kv_capacity_tokens=0, ttft_ms=np.inf, tpot_ms=np.inf, tokens_per_s=0.0, tokens_per_s_per_gpu=0.0,
                tokens_per_s_per_user=0.0, usd_per_million=np.inf, bubble=0.0, warnings_count=1,
                meets_targets=False, cp=cp, cp_prefill=mode == "prefill", idle_gpus=idle)
    for k, v in vals.items():
        cols[k].append(np.array([v]))
    for k in extra:
        extra[k].append(np.array([np.nan if k != "bottleneck" else 0]))
    reasons.append(why)


def _rows(lc: LayoutCosts, grid: list[int], seq_len: int, wl, c, usd_per_hour: float, project: Project,
          ttft_lim: float | None, tpot_lim: float | None, topo: Topology) -> dict:
    lay = lc.layout
    tp, pp, dp, ep = lay.tp, lay.pp, lay.dp, lay.ep
    pool, seq_bytes, max_seqs, cap_tokens, _ = memory_fit(lc, seq_len)
    weights_fit = bool((pool > 0).all())
    reuse_on = prefix_cache_on(project)
    if reuse_on and wl.reuse.system_prompt_tokens:  # the shared prompt's blocks are held once
        max_seqs = batch_with_shared_prefix(cap_tokens, seq_len, wl.reuse.system_prompt_tokens)
    auto = max(1, min(project_batch_limit(project, lay), max_seqs))
    bs = sorted(set(grid) | {auto})
    ms_opts = [1] if pp == 1 else sorted({1, pp, 2 * pp, 4 * pp})
    pairs = [(b, m) for b in bs for m in ms_opts if m <= b]
    B = np.asarray([b for b, _ in pairs], dtype=float)
    M = np.asarray([m for _, m in pairs], dtype=float)
    budget = project_budget(project, lc.layout, c)
    sv_t = serve_times(lc, B, M, wl.isl, wl.osl, c, budget)
    if reuse_on:  # the hits at the layout's own batch (auto), applied to every batch of the grid
        at = int(np.argmax(B == auto))
        kv_model = project.model.kv_bytes_per_token(project.serving.kv_dtype)
        prefix = prefix_reuse(project, lay, cap_tokens, kv_model, auto, float(sv_t.request_ms[at]))
        if prefix is not None:  # the missed tokens prefilled after (or behind) their tier loads
            isl_eff = max(1, round(prefix.computed_tokens))
            lc_hit = with_prefix_load(project, lay, lc, prefix)
            sv_t = serve_times(lc_hit, B, M, isl_eff, wl.osl, c, budget, float(wl.isl - isl_eff))
    ttft, tpot = sv_t.ttft_ms, sv_t.tpot_ms
    heads_ok = heads_split(project.model, tp)
    fits = layout_fits(pool, max_seqs, B, project.model, tp, seq_len)
    tps = np.where(fits, lay.replicas * sv_t.tokens_per_s_replica, 0.0)
    n = len(B)
    world = lay.world_size
    meets = fits.copy()
    if ttft_lim is not None:
        meets &= ttft <= ttft_lim
    if tpot_lim is not None:
        meets &= tpot <= tpot_lim
    bubble = bubble_fraction(pp, M)
    mem_peak = (lc.weights + lc.activations + lc.overhead)[None, :] + B[:, None] * seq_bytes[None, :]
    if reuse_on and wl.reuse.system_prompt_tokens:  # the shared prompt's KV blocks held once, as in the plan
        shared = min(float(wl.reuse.system_prompt_tokens), seq_len - 1.0)
        mem_peak = mem_peak - np.maximum(B - 1.0, 0.0)[:, None] * (shared * seq_bytes / seq_len)[None, :]
    # warnings that the rules would raise, counted cheaply
    spans = any(len(topo.islands_of(grp)) > 1 for rep in lc.groups[:1] for grp in rep)
    wcount = np.zeros(n, dtype=np.int64) + int(spans) + int(not heads_ok)
    wcount += (project.workload.interactive & (bubble > c.bubble_interactive_max)).astype(np.int64)
    wcount += (~fits).astype(np.int64)
    reasons: list[str] = []
    for i in range(n):
        if fits[i]:
            reasons.append("")
        elif not heads_ok:
            reasons.append(parallelism.heads_reason(project.model, tp) or "")
        elif not weights_fit:
            s = int(np.argmin(pool))
            reasons.append(f"does not fit: stage {s} needs {(lc.weights[s] + lc.activations[s] + lc.overhead[s]) / GIB:.1f} GiB "
                           f"of {lc.usable[s] / GIB:.1f} GiB usable per GPU")
        elif seq_len > project.model.max_context:
            reasons.append(f"isl+osl {seq_len} exceeds the model context {project.model.max_context}")
        else:
            reasons.append(f"batch {int(B[i])} exceeds the {max_seqs} sequences the KV cache holds")
    # decisive facts for the reasons text
    # serve_times sums all-reduces and all-to-alls; the reasons name each collective
    a2a_ms = sv_t.steps.decode_alltoall.sum(axis=0)[sv_t.index] * np.maximum(1.0, M / max(1, pp))
    ar_ms = sv_t.decode_allreduce_ms - a2a_ms
    cp_ms = sv_t.steps.decode_cp.sum(axis=0)[sv_t.index] * np.maximum(1.0, M / max(1, pp))
    cp_kind = ""
    if lc.cp is not None:
        _, kind, algo = lc.cp.bottleneck()
        cp_kind = f"{kind} ({algo})" if kind else algo
    a2a_kind = ""
    for cols_ in lc.alltoall[:1]:
        for col in cols_[:1]:
            if col.algos and col.algos[0].bottleneck_kind:
                a2a_kind = col.algos[0].bottleneck_kind
    bott_kind = ""
    for cols_ in lc.allreduce[:1]:
        for col in cols_[:1]:
            a = col.pick(float(np.ceil(B[-1] / M[-1])) * lc.hidden * c.activation_bytes)
            if a is not None and a.bottleneck_kind:
                bott_kind = f"{a.bottleneck_kind} ({a.name})"
    usd_m = np.where(tps > 0, usd_per_hour / np.maximum(tps, 1e-30) / 3600 * 1e6, np.inf)
    return {
        "tp": np.full(n, tp), "pp": np.full(n, pp), "dp": np.full(n, dp), "ep": np.full(n, ep),
        "micro_batches": M.astype(np.int64), "batch": B.astype(np.int64), "fits": fits,
        "mem_peak_gib": mem_peak.max(axis=1) / GIB, "kv_capacity_tokens": np.full(n, cap_tokens),
        "ttft_ms": ttft, "tpot_ms": tpot, "tokens_per_s": tps, "tokens_per_s_per_gpu": tps / world,
        "tokens_per_s_per_user": np.where(fits, 1e3 / tpot, 0.0), "usd_per_million": usd_m,
        "bubble": np.asarray(bubble, dtype=float) * np.ones(n), "warnings_count": wcount, "meets_targets": meets,
        "allreduce_ms": ar_ms, "alltoall_ms": a2a_ms, "bottleneck": np.zeros(n),
        "max_seqs": np.full(n, max_seqs, dtype=float), "reasons": reasons, "kind": bott_kind, "a2a_kind": a2a_kind,
        "cp": np.full(n, lay.cp), "cp_prefill": np.full(n, lay.cp_mode == "prefill" and lay.cp > 1),
        "cp_ms": cp_ms, "max_context": np.full(n, float(cap_tokens)), "cp_kind": cp_kind,
    }


def _order(col: dict[str, np.ndarray], objective: str) -> np.ndarray:
    n = len(col["tp"])
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    tier = np.where(col["fits"] & col["meets_targets"], 0, np.where(col["fits"], 1, 2))
    keys: tuple[np.ndarray, ...]
    if objective == "throughput":
        keys = (-col["tokens_per_s"], -col["tokens_per_s_per_user"], -col["tokens_per_s_per_gpu"])
    elif objective == "cost":
        keys = (-col["tokens_per_s_per_user"], col["usd_per_million"])
    else:
        keys = (-col["tokens_per_s_per_gpu"], col["ttft_ms"], col["tpot_ms"])
    return np.lexsort(keys + (tier,))


def pareto_front(per_gpu: np.ndarray, per_user: np.ndarray, fits: np.ndarray) -> np.ndarray:
    """Indices of fitting rows that no other fitting row beats on both axes (maximise both),
    sorted by tokens/s per GPU descending."""
    idx = np.flatnonzero(fits)
    if idx.size == 0:
        return idx
    o = idx[np.lexsort((-per_user[idx], -per_gpu[idx]))]
    keep = []
    best_user = -np.inf
    for i in o:
        if per_user[i] > best_user:
            keep.append(i)
            best_user = per_user[i]
    return np.asarray(keep, dtype=np.int64)


def _fmt_layout(col: dict[str, np.ndarray], i: int) -> str:
    s = f"TP{col['tp'][i]}×PP{col['pp'][i]}"
    if col["dp"][i] > 1:
        s += f"×DP{col['dp'][i]}"
    if col["ep"][i] > 1:
        s += f"×EP{col['ep'][i]}"
    if "cp" in col and col["cp"][i] > 1:
        s += f"×{'PCP' if col['cp_prefill'][i] else 'DCP'}{col['cp'][i]}"
    return s


def _reasons(col, unfit, ex, kinds, order, rec, objective, num_layers) -> list[str]:
    if len(order) == 0:
        return ["no candidate layouts"]
    metric = {"throughput": ("tokens_per_s_per_gpu", "tok/s per GPU", True),
              "cost": ("usd_per_million", "$ per M tokens", False),
              "latency": ("tpot_ms", "ms TPOT", False)}[objective]
    key, unit, higher = metric
    out: list[str] = []
    if rec is None:
        top = int(order[0])
        if not col["fits"][top]:
            out.append(f"no layout fits: best attempt {_fmt_layout(col, top)} — {unfit[top]}")
        else:
            out.append(f"no layout meets the TTFT/TPOT targets; closest is {_fmt_layout(col, top)} "
                       f"(TTFT {col['ttft_ms'][top]:,.0f} ms, TPOT {col['tpot_ms'][top]:.1f} ms)")
        best = top
    else:
        best = rec
        out.append(
            f"{_fmt_layout(col, best)} with M={col['micro_batches'][best]} at batch {col['batch'][best]} wins on "
            f"{objective}: {col['tokens_per_s_per_gpu'][best]:,.0f} tok/s per GPU, {col['tokens_per_s_per_user'][best]:.1f} "
            f"tok/s per user, TTFT {col['ttft_ms'][best]:,.0f} ms, TPOT {col['tpot_ms'][best]:.1f} ms, "
            f"${col['usd_per_million'][best]:.2f} per M tokens; {_collectives(ex, kinds, best)}"
        )
    seen = {(col["tp"][best], col["pp"][best], col["ep"][best], col["cp"][best], col["cp_prefill"][best])}
    for i in order:
        i = int(i)
        lay = (col["tp"][i], col["pp"][i], col["ep"][i], col["cp"][i], col["cp_prefill"][i])
        if lay in seen:
            continue
        seen.add(lay)
        out.append(_tradeoff(col, unfit, ex, kinds, best, i, key, unit, higher))
        if len(seen) >= 4:
            break
    return out


def _collectives(ex, kinds, i: int) -> str:
    """What the collectives of row ``i`` cost per decode step, each named with its link."""
    if kinds[i]:
        text = f"TP all-reduces cost {ex['allreduce_ms'][i]:.1f} ms per decode step over {kinds[i]}"
    else:
        text = "no TP all-reduces (TP=1)"
    a2a = float(ex["alltoall_ms"][i])
    if a2a > 0:
        text += f", EP all-to-alls {a2a:.1f} ms over {ex['a2a_kind'][i] or 'the expert group'}"
    cp = float(ex["cp_ms"][i])
    if cp > 0:
        text += (f", context-parallel exchanges {cp:.1f} ms over {ex['cp_kind'][i] or 'the CP group'} for a KV "
                 f"cache of {int(ex['max_context'][i]):,} tokens per replica")
    return text


def _tradeoff(col, unfit, ex, kinds, best, i, key, unit, higher) -> str:
    name = _fmt_layout(col, i)
    if not col["fits"][i]:
        return f"{name} loses: {unfit[i]}"
    a, b = float(col[key][best]), float(col[key][i])
    delta = (b - a) / a * 100 if a else 0.0
    facts = []
    ar_b, ar_i = float(ex["allreduce_ms"][best]), float(ex["allreduce_ms"][i])
    if ar_i > 1.5 * ar_b + 0.05:
        facts.append(f"its TP all-reduces take {ar_i:.1f} ms per decode step over {kinds[i] or 'the network'} "
                     f"vs {ar_b:.1f} ms")
    a2a_b, a2a_i = float(ex["alltoall_ms"][best]), float(ex["alltoall_ms"][i])
    if a2a_i > 1.5 * a2a_b + 0.05:
        facts.append(f"its EP all-to-alls take {a2a_i:.1f} ms per decode step over "
                     f"{ex['a2a_kind'][i] or 'the expert group'} vs {a2a_b:.1f} ms")
    if col["bubble"][i] > col["bubble"][best] + 0.05:
        facts.append(f"pipeline bubble {col['bubble'][i]:.0%} vs {col['bubble'][best]:.0%}")
    if ex["max_seqs"][i] < ex["max_seqs"][best] * 0.8:
        facts.append(f"its KV cache holds {int(ex['max_seqs'][i])} sequences vs {int(ex['max_seqs'][best])}")
    cp_b, cp_i = float(ex["cp_ms"][best]), float(ex["cp_ms"][i])
    if cp_i > 1.5 * cp_b + 0.05:
        facts.append(f"its context-parallel exchanges take {cp_i:.1f} ms per decode step over "
                     f"{ex['cp_kind'][i] or 'the CP group'} vs {cp_b:.1f} ms")
    if col["tokens_per_s_per_user"][i] > col["tokens_per_s_per_user"][best] * 1.05:
        facts.append(f"it gives more tok/s per user ({col['tokens_per_s_per_user'][i]:.1f} vs "
                     f"{col['tokens_per_s_per_user'][best]:.1f})")
    if not col["meets_targets"][i]:
        facts.append("it misses the TTFT/TPOT targets")
    if not facts:
        facts.append(f"TPOT {col['tpot_ms'][i]:.1f} ms vs {col['tpot_ms'][best]:.1f} ms, "
                     f"batch {col['batch'][i]} vs {col['batch'][best]}")
    sign = "+" if delta >= 0 else "−"
    return f"{name} (best M={col['micro_batches'][i]}, batch {col['batch'][i]}): {sign}{abs(delta):.0f}% {unit} — " + "; ".join(facts)
