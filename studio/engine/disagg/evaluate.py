"""Cost a disaggregated prefill/decode plan: two pools, the KV transfer between them, the balance.

:func:`evaluate_disaggregated` places the prefill pool (``x`` workers) and the decode pool (``y``
workers) on the drawn GPUs (:func:`place_pools`), costs one worker of each with the per-layout
model aggregated plans use (:func:`studio.engine.step.costing.layout_costs` → iteration model), turns
them into queueing curves (:mod:`studio.engine.disagg.pools`), costs the KV transfer rank to rank
over the links between the pools (:mod:`studio.engine.disagg.kv_transfer`) and solves the project's load:

* TTFT = prefill queue + prefill on the prefill pool + KV transfer over the links drawn between the
  pools (slowest hop named);
* TPOT = decode iterations of the decode pool, without prefill interference;
* throughput = the request rate both pools sustain at the load × OSL; at saturation the slower pool
  (or the transfer) limits it;
* the x : y ratio that balances them (``μ_d / μ_p``) and the best integer split on the GPUs drawn.

The result (:class:`DisaggResult`) is frozen, with explanations and "why" lines like
:class:`~studio.engine.plan.results.PlanResult`.
"""

from __future__ import annotations

from dataclasses import field
from itertools import groupby
from typing import TYPE_CHECKING

import numpy as np

from studio.core import parallelism as par
from studio.core.errors import StudioError, nearest
from studio.core.project import CalibrationProfile, Project
from studio.core.serving_mode import PoolLayout, ServingMode
from studio.core.units import GIB
from studio.engine.disagg.kv_transfer import KvTransfer, kv_transfer
from studio.engine.disagg.pools import (
    DecodeCurve,
    PrefillCurve,
    balanced_ratio,
    best_split,
    serve,
)
from studio.engine.disagg.reuse import (
    PrefillReuse,
    decode_sequences,
    prefill_reuse,
    shared_tokens,
    summary,
    transfer_tokens,
)
from studio.engine.fabric.topology import Topology, topology_of
from studio.engine.plan.costs import project_budget, project_costs
from studio.engine.plan.evaluate import (
    _modules,
    constants_for,
    resolve_calibration,
)
from studio.engine.plan.fits import memory_fit
from studio.engine.plan.results import GpuMemory
from studio.engine.step.constants import Constants
from studio.engine.step.costing import LayoutCosts
from studio.engine.step.iteration import IterationModel
from studio.engine.step.records import frozen_result

if TYPE_CHECKING:  # the result types and their explanations load when a plan is assembled
    from studio.engine.disagg.results import Balance, DisaggResult

ROLE_NAME = {"P": "prefill", "D": "decode"}


# ----------------------------------------------------------------------------- placement
def pool_candidates(cluster_gpus: list[tuple[str, str]], pool: PoolLayout, field: str) -> list[str]:
    """GPU ids a pool may use, in cluster order (only ``pool.gpu_type`` when set)."""
    if pool.gpu_type is None:
        return [g for g, _ in cluster_gpus]
    types = sorted({t for _, t in cluster_gpus})
    if pool.gpu_type not in types:
        hint = nearest(pool.gpu_type, types)
        extra = f"; did you mean {', '.join(hint)}?" if hint else ""
        raise StudioError(
            f"{field}.gpu_type '{pool.gpu_type}' is not a GPU type of this cluster "
            f"(it has {', '.join(types)}){extra}"
        )
    return [g for g, t in cluster_gpus if t == pool.gpu_type]


@frozen_result
class ClusterIndex:
    """What placing pools reads of a cluster, built once by a caller that places many modes."""

    gpus: list[tuple[str, str]]  # (id, type) in cluster order
    known: frozenset[str]
    node_of: dict[str, str]
    #: The candidates of each GPU type (None: every GPU) grouped by node, in cluster order.
    _by_node: dict[str | None, dict[str, list[str]]] = field(default_factory=dict)

    @classmethod
    def of(cls, project: Project) -> ClusterIndex:
        gpus = [(g.id, g.type) for g in project.cluster.gpus]
        return cls(
            gpus=gpus,
            known=frozenset(g for g, _ in gpus),
            node_of={g.id: n.id for n in project.cluster.nodes for g in n.gpus},
        )

    def by_node(self, pool: PoolLayout, field: str) -> dict[str, list[str]]:
        """:func:`pool_candidates` grouped by node (the cluster lists a node's GPUs together),
        kept for the next pool of the same GPU type; read-only."""
        hit = self._by_node.get(pool.gpu_type)
        if hit is None:
            hit = self._by_node[pool.gpu_type] = _group(
                pool_candidates(self.gpus, pool, field), self.node_of
            )
        return hit


def _group(free: list[str], node_of: dict[str, str]) -> dict[str, list[str]]:
    """GPUs by node, nodes in order of first appearance (a node seen again appends)."""
    by_node: dict[str, list[str]] = {}
    for n, run in groupby(free, key=node_of.__getitem__):
        by_node.setdefault(n, []).extend(run)
    return by_node


def place_pools(
    project: Project, mode: ServingMode, index: ClusterIndex | None = None
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """GPU ids of every rank of the prefill and the decode pool (worker by worker, stage by stage,
    TP rank by TP rank). Explicit placements are checked; otherwise the prefill pool takes the first
    free GPUs of its type in cluster order and the decode pool the next ones, which keeps each TP
    group inside a node whenever TP divides the GPUs per node. ``index``: the cluster's
    :class:`ClusterIndex`, when the caller places many modes on it.

    Raises
    ------
    StudioError
        Naming ``serving_mode.prefill`` / ``serving_mode.decode``: a pool larger than the GPUs it may
        use, an unknown GPU id or type, a GPU in both pools.
    """
    if not mode.disaggregated or mode.prefill is None or mode.decode is None:
        raise StudioError(
            "serving_mode.mode is 'aggregated'; give prefill and decode pools (e.g. 2P:tp4,1D:tp8)",
            field="disagg",
        )
    return place_pair(project, mode.prefill, mode.decode, index)


def place_pair(
    project: Project,
    prefill: PoolLayout,
    decode: PoolLayout,
    index: ClusterIndex | None = None,
    placed: tuple[str, ...] | None = None,
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """:func:`place_pools` of a prefill and a decode pool (no serving mode made for them).
    ``placed``: the prefill pool's placement from an earlier call with the same pool and ``index``
    (it is placed first, so the decode pool does not change it)."""
    index = index or ClusterIndex.of(project)
    gpus, known = index.gpus, index.known
    taken: set[str] = set()
    out: list[tuple[str, ...]] = []
    for role, pool in (("prefill", prefill), ("decode", decode)):
        field = f"serving_mode.{role}"
        if role == "prefill" and placed is not None:
            placement = placed
        elif pool.placement is not None:
            for g in pool.placement:
                if g not in known:
                    hint = nearest(g, sorted(known))
                    extra = f"; did you mean {', '.join(hint)}?" if hint else ""
                    raise StudioError(
                        f"{field}.placement names GPU '{g}', which is not in the cluster{extra}"
                    )
                if g in taken:
                    raise StudioError(
                        f"{field}.placement names GPU '{g}', which the prefill pool uses"
                    )
            placement = pool.placement
        else:
            cand = index.by_node(pool, field)
            if taken:  # only the nodes holding a taken GPU lose some
                hit = {index.node_of[g] for g in taken}
                cand = {n: [g for g in gs if g not in taken] if n in hit else gs
                        for n, gs in cand.items()}
            free = sum(map(len, cand.values()))
            if pool.gpus > free:
                other = " after the prefill pool" if role == "decode" else ""
                where = f" of type {pool.gpu_type}" if pool.gpu_type else ""
                raise StudioError(
                    f"{field}: {pool.workers} workers × TP{pool.tp} × PP{pool.pp} = {pool.gpus} GPUs, but "
                    f"{free} GPUs{where} are free{other} (the cluster has {len(gpus)}); use fewer workers "
                    "or smaller workers"
                )
            placement = _aligned_nodes(dict(cand), pool)
        taken.update(placement)
        out.append(placement)
    return out[0], out[1]


def _aligned(free: list[str], pool: PoolLayout, node_of: dict[str, str]) -> tuple[str, ...]:
    """Worker by worker, the first free GPUs of the first node that holds a whole worker; a
    worker larger than any node's free GPUs takes the next free GPUs in cluster order."""
    return _aligned_nodes(_group(free, node_of), pool)


def _aligned_nodes(by_node: dict[str, list[str]], pool: PoolLayout) -> tuple[str, ...]:
    """:func:`_aligned` of free GPUs grouped by node (``by_node`` is changed)."""
    out: list[str] = []
    per = pool.gpus_per_worker
    left = pool.workers
    # a node keeps the first-node role until it holds less than a worker (it never regains GPUs):
    # node by node, as many whole workers as it holds
    for n, gs in by_node.items():
        k = min(len(gs) // per, left)
        if k:
            out += gs[: k * per]
            by_node[n] = gs[k * per :]
            left -= k
        if not left:
            break
    if left:  # no node holds a whole worker: the next free GPUs in cluster order
        rest = [g for gs in by_node.values() for g in gs]
        out += rest[: left * per]
    return tuple(out)


# ----------------------------------------------------------------------------- pool costing
@frozen_result
class Worker:
    """The costs of one pool's workers (worst replica) and its queueing curve."""

    lc: LayoutCosts
    max_seqs: int  # at the pool's sequence length
    pool_gib: float
    curve: PrefillCurve | DecodeCurve
    prefix: PrefillReuse | None = None  # a prefill worker's prefix cache (None: off, or a decode worker)


def _check_pool(project: Project, pool: PoolLayout, field: str) -> None:
    """Refuse a pool whose workers the model cannot run (:mod:`studio.core.parallelism`'s rules,
    the workers being the pool's DP)."""
    model = project.model
    why = par.heads_reason(model, pool.tp)
    if why is not None:
        raise StudioError(f"{field}.tp: {why}; allowed: {', '.join(map(str, _pool_tps(model)))}")
    if pool.pp > model.num_layers:
        raise StudioError(
            f"{field}.pp = {pool.pp} exceeds the model's {model.num_layers} layers; allowed: 1..{model.num_layers}"
        )
    why = par.ep_reason(model, pool.ep, pool.tp, pool.workers)
    if why is not None:
        allowed = ", ".join(map(str, par.ep_options(model, pool.tp, pool.workers)))
        raise StudioError(f"{field}.ep: {why}; allowed: {allowed}")


def _pool_tps(model) -> list[int]:
    """The TPs that split the model's attention (each divides the attention heads)."""
    return [t for t in par.divisors(model.num_attention_heads) if par.heads_reason(model, t) is None]


def pool_costs(
    project: Project,
    pool: PoolLayout,
    placement: tuple[str, ...],
    topo: Topology,
    c: Constants,
    replicas: list[int] | None = None,
) -> LayoutCosts:
    """Batch-independent costs of a pool's workers (the pool as ``workers`` DP replicas), built as
    an aggregated layout's are (:func:`studio.engine.plan.costs.project_costs`: token budget,
    speculative decoding, the runtime's memory fraction)."""
    layout = pool.layout(placement)
    return project_costs(project, layout, placement, topo, c, replicas=replicas,
                         max_batch=pool.max_batch or project.workload.max_batch)


def _unfit(
    lc: LayoutCosts,
    pool: PoolLayout,
    field: str,
    seq_len: int,
    max_seqs: int,
    pool_bytes: np.ndarray,
) -> str | None:
    if (pool_bytes <= 0).any():
        s = int(np.argmin(pool_bytes))
        need = (lc.weights[s] + lc.activations[s] + lc.overhead[s]) / GIB
        return (
            f"{field}: a {pool.worker_label()} worker needs {need:.1f} GiB per GPU on stage {s} for weights, "
            f"activations and runtime, above the {lc.usable[s] / GIB:.1f} GiB usable; use a larger TP or PP"
        )
    if max_seqs < 1:
        return (
            f"{field}: the KV cache of a {pool.worker_label()} worker holds less than one sequence of "
            f"{seq_len:,} tokens ({float(pool_bytes.min()) / GIB:.2f} GiB free per GPU); use a larger TP or PP, "
            "FP8 KV or shorter requests"
        )
    return None


def prefill_worker(
    project: Project, pool: PoolLayout, lc: LayoutCosts, c: Constants, field: str
) -> Worker:
    """The prefill pool's worker; :class:`StudioError` when it cannot hold its weights or one prompt."""
    wl = project.workload
    pool_b, _, seqs, cap_tokens, _ = memory_fit(lc, wl.isl)
    why = _unfit(lc, pool, field, wl.isl, seqs, pool_b)
    if why:
        raise StudioError(why)
    budget = float(project_budget(project, lc.layout, c))
    mb = pool.micro_batches_used
    prefix = prefill_reuse(project, lc, c, budget, seqs, mb, cap_tokens)  # only the missed tokens prefilled
    curve = PrefillCurve.build(IterationModel(lc, c), wl.isl, budget, seqs, mb) if prefix is None else prefix.curve
    return Worker(lc=lc, max_seqs=seqs, pool_gib=float(pool_b.min()) / GIB, curve=curve, prefix=prefix)


def decode_worker(
    project: Project,
    pool: PoolLayout,
    lc: LayoutCosts,
    c: Constants,
    field: str,
    batch: int | None = None,
) -> Worker:
    """The decode pool's worker; :class:`StudioError` when it cannot hold its weights or one
    sequence of ISL + OSL tokens. ``batch`` caps the sequences (``None``: the workload's batch, or
    with ``auto`` the KV cache's capacity capped by ``max_batch``), and the token budget caps them
    too: each decoding sequence takes one token of it (``k + 1`` with speculative decoding)."""
    wl = project.workload
    seq_len = wl.isl + wl.osl
    pool_b, _, seqs, cap_tokens, _ = memory_fit(lc, seq_len)
    why = _unfit(lc, pool, field, seq_len, seqs, pool_b)
    if why:
        raise StudioError(why)
    seqs = decode_sequences(project, cap_tokens, seq_len, seqs)  # the system prompt's blocks held once
    if batch is None:
        batch = int(wl.batch) if wl.batch != "auto" else (pool.max_batch or wl.max_batch)
    im = IterationModel(lc, c)
    per_iteration = project_budget(project, lc.layout, c) // im.budget_per_seq  # decode tokens the budget holds
    cap = max(1, min(batch, seqs, per_iteration))
    curve = DecodeCurve.build(im, wl.isl, wl.osl, cap, pool.micro_batches_used)
    return Worker(lc=lc, max_seqs=seqs, pool_gib=float(pool_b.min()) / GIB, curve=curve)


def pools_transfer(
    project: Project, topo: Topology, plc: LayoutCosts, dlc: LayoutCosts
) -> KvTransfer:
    """The KV transfer of one request between the two pools' workers."""
    model = project.model
    return kv_transfer(
        topo,
        model,
        project.serving.kv_dtype,
        transfer_tokens(project),
        plc.groups,
        dlc.groups,
        plc.layout.stage_layers(model.num_layers),
        dlc.layout.stage_layers(model.num_layers),
    )


def gpu_price(project: Project, topo: Topology, placement: tuple[str, ...]) -> float:
    sv = project.serving
    specs = project.cluster.gpu_specs
    return sum(
        sv.price_per_gpu_hour
        if sv.price_per_gpu_hour is not None
        else specs[topo.gpu_type[g]].price_per_gpu_hour
        for g in placement
    )


def load_of(
    project: Project, y: int, cap: int
) -> tuple[str, np.ndarray | None, float | None, bool, str]:
    """(mode, users, rate per ms, Poisson, note) of the project's load for ``y`` decode workers of
    ``cap`` sequences each."""
    ld = project.workload.load
    if ld.mode == "rate":
        assert ld.rate_per_s is not None  # Workload refuses mode 'rate' without a rate
        return "rate", None, float(ld.rate_per_s) / 1e3, ld.arrival == "poisson", ""
    if ld.mode == "concurrency" and ld.concurrency is not None:
        return "concurrency", np.array([float(ld.concurrency)]), None, True, ""
    note = ""
    if ld.mode == "offline":
        note = f"{ld.num_requests:,} requests queued at t = 0; steady state with {cap} running per decode worker"
    return ld.mode, np.array([float(y * cap)]), None, True, note


# ----------------------------------------------------------------------------- evaluation
def evaluate_disaggregated(
    project: Project,
    mode: ServingMode | None = None,
    *,
    calibration: CalibrationProfile | None = None,
    constants: Constants | None = None,
) -> DisaggResult:
    """Cost the disaggregated serving mode of ``project`` (``mode`` overrides ``project.serving_mode``).

    Raises
    ------
    StudioError
        A pool larger than the GPUs it may use, an unknown GPU type, a worker whose weights do not
        fit, or a decode worker whose KV cache cannot hold one sequence — naming the field.
    """
    costed = cost_pools(project, mode, calibration=calibration, constants=constants)
    return assemble(
        project,
        costed.mode,
        costed.topo,
        costed.prefill,
        costed.decode,
        costed.transfer,
        costed.prefill_placement,
        costed.decode_placement,
        costed.calibration,
    )


@frozen_result
class CostedPools:
    """Both pools of a serving mode placed and costed (what :func:`assemble` and the request
    simulation start from)."""

    mode: ServingMode
    topo: Topology
    prefill: Worker
    decode: Worker
    transfer: KvTransfer
    prefill_placement: tuple[str, ...]
    decode_placement: tuple[str, ...]
    calibration: CalibrationProfile | None


def cost_pools(
    project: Project,
    mode: ServingMode | None = None,
    *,
    calibration: CalibrationProfile | None = None,
    constants: Constants | None = None,
) -> CostedPools:
    """Place and cost both pools (see :func:`evaluate_disaggregated` for what is refused)."""
    mode = project.serving_mode if mode is None else mode
    prefill_pl, decode_pl = place_pools(project, mode)
    assert mode.prefill is not None and mode.decode is not None
    for role, pool in (("prefill", mode.prefill), ("decode", mode.decode)):
        _check_pool(project, pool, f"serving_mode.{role}")
    cal = resolve_calibration(project, calibration)
    c = constants_for(cal, constants)
    topo = topology_of(project.cluster, cal.link_fits if cal else None)
    plc = pool_costs(project, mode.prefill, prefill_pl, topo, c)
    dlc = pool_costs(project, mode.decode, decode_pl, topo, c)
    pw = prefill_worker(project, mode.prefill, plc, c, "serving_mode.prefill")
    dw = decode_worker(project, mode.decode, dlc, c, "serving_mode.decode")
    transfer = pools_transfer(project, topo, plc, dlc)
    return CostedPools(mode, topo, pw, dw, transfer, prefill_pl, decode_pl, cal)


def assemble(
    project: Project,
    mode: ServingMode,
    topo: Topology,
    pw: Worker,
    dw: Worker,
    transfer: KvTransfer,
    prefill_pl: tuple[str, ...],
    decode_pl: tuple[str, ...],
    cal: CalibrationProfile | None,
    with_balance: bool = True,
) -> DisaggResult:
    """Solve the load for costed pools and freeze the result."""
    from studio.engine.disagg.explain import ASSUMPTIONS, explain, reasons
    from studio.engine.disagg.results import Balance, DisaggResult, PoolResult

    assert mode.prefill is not None and mode.decode is not None
    wl = project.workload
    pf, dc = pw.curve, dw.curve
    assert isinstance(pf, PrefillCurve) and isinstance(dc, DecodeCurve)
    x, y = mode.prefill.workers, mode.decode.workers
    load_mode, users, rate, poisson, note = load_of(project, y, dc.cap)
    st = serve(pf, dc, x, y, transfer.time_ms, users=users, rate_per_ms=rate, poisson=poisson)
    r = float(st.rate[0])
    saturated = bool(st.saturated[0])
    if saturated and load_mode == "rate":
        note = (
            f"{wl.load.rate_per_s:g} req/s is at or above saturation ({st.capacity * 1e3:.3g} req/s, the "
            f"{st.limiter} pool): the queue grows without bound; figures shown are at saturation"
        )
    elif saturated:
        assert users is not None  # not 'rate': load_of gives the closed loop's users
        note = (note + "; " if note else "") + (
            f"{float(users[0]):,.0f} users exceed what the pools hold at "
            f"saturation: the rest wait, which TTFT includes"
        )
    gpus = len(prefill_pl) + len(decode_pl)
    tps = r * 1e3 * wl.osl
    price = gpu_price(project, topo, prefill_pl + decode_pl)
    tpot = float(st.tpot[0])
    balance = (
        _balance(project, mode, pf, dc, transfer.time_ms)
        if with_balance
        else Balance(balanced_ratio(pf, dc), pf.mu * 1e3, dc.mu * 1e3, x, y, 0.0)
    )
    pres = PoolResult(
        role="prefill",
        pool=mode.prefill,
        placement=prefill_pl,
        gpu_types=tuple(sorted({topo.gpu_type[g] for g in prefill_pl})),
        weights_gib=float(pw.lc.weights.max()) / GIB,
        kv_pool_gib=pw.pool_gib,
        kv_sequences=pw.max_seqs,
        batch=float(pf.slots),
        iteration_ms=pf.full_ms,
        capacity_rps=x * pf.mu * 1e3,
        utilisation=float(st.prefill_util[0]),
        max_running=pf.slots,
        memory=pool_memory(project, topo, pw.lc, pf.slots, wl.isl, shared_tokens(project, wl.isl)),
    )
    dres = PoolResult(
        role="decode",
        pool=mode.decode,
        placement=decode_pl,
        gpu_types=tuple(sorted({topo.gpu_type[g] for g in decode_pl})),
        weights_gib=float(dw.lc.weights.max()) / GIB,
        kv_pool_gib=dw.pool_gib,
        kv_sequences=dw.max_seqs,
        batch=float(st.decode_seqs[0]),
        iteration_ms=tpot * (dw.lc.spec.tokens_per_step if dw.lc.spec is not None else 1.0),
        capacity_rps=y * dc.mu * 1e3,
        utilisation=float(st.decode_util[0]),
        max_running=dc.cap,
        memory=pool_memory(project, topo, dw.lc, dc.cap, wl.isl + wl.osl,
                           shared_tokens(project, wl.isl + wl.osl)),
    )
    ttft = float(st.ttft[0])
    result = DisaggResult(
        mode=mode,
        prefill=pres,
        decode=dres,
        transfer=transfer,
        fits=True,
        fit_reason=(
            f"fits: a prefill worker holds {pw.max_seqs:,} prompts of {wl.isl:,} tokens, a decode worker "
            f"{dw.max_seqs:,} sequences of {wl.isl + wl.osl:,} tokens"
        ),
        ttft_ms=ttft,
        tpot_ms=tpot,
        request_latency_ms=float(st.e2e[0]),
        prefill_ms=float(st.prefill_ms[0]),
        queue_ms=float(st.queue_ms[0]),
        request_rate_per_s=r * 1e3,
        saturation_rate_per_s=st.capacity * 1e3,
        limited_by=st.limiter,
        saturated=saturated,
        output_tokens_per_s=tps,
        output_tokens_per_s_per_gpu=tps / gpus,
        tokens_per_s_per_user=1e3 / tpot if tpot > 0 else 0.0,
        usd_per_hour=price,
        usd_per_million_output_tokens=price / (tps * 3600.0) * 1e6 if tps > 0 else float("inf"),
        balance=balance,
        load_mode=load_mode,
        users=float(users[0]) if users is not None else 0.0,
        load_note=note,
        reasons=(),
        explanations={},
        assumptions=ASSUMPTIONS,
        unused_gpus=project.cluster.num_gpus - gpus,
        calibration=cal.name if cal else None,
        prefix_cache=summary(pw.prefix, project) if pw.prefix is not None else None,
    )
    import dataclasses

    return dataclasses.replace(
        result, reasons=reasons(result, pf, dc), explanations=explain(result, st, pf, dc)
    )


def pool_memory(
    project: Project, topo: Topology, lc: LayoutCosts, sequences: int, seq_len: int, shared: float = 0.0
) -> tuple[GpuMemory, ...]:
    """Every GPU of a pool's first worker: weights, activations and runtime overhead of its stage
    (the most loaded replica's, as the aggregated plan reports them) and the KV cache reserved for
    ``sequences`` sequences of ``seq_len`` tokens, the first ``shared`` tokens of each held once."""
    seq_bytes = lc.kv_seq_bytes(seq_len)
    held = sequences * seq_bytes
    if shared:  # the shared prefix's blocks once for all the sequences
        held = held - max(sequences - 1, 0) * seq_bytes * (shared / seq_len)
    util = project.serving.gpu_memory_utilization
    specs = project.cluster.gpu_specs
    tp = len(lc.groups[0][0]) if lc.groups and lc.groups[0] else 0
    out = []
    for s, group in enumerate(lc.groups[0] if lc.groups else ()):
        for t, g in enumerate(group):
            cap = specs[topo.gpu_type[g]].memory_bytes
            out.append(
                GpuMemory(
                    gpu_id=g,
                    rank=s * tp + t,
                    stage=s,
                    tp_rank=t,
                    dp_index=0,
                    capacity=cap,
                    usable=float(lc.usable[s]) + (cap - float(lc.capacity[s])) * util,
                    weights=float(lc.weights[s]),
                    kv_cache=float(held[s]),
                    activations=float(lc.activations[s]),
                    overhead=float(lc.overhead[s]),
                    weights_by_module=_modules(lc, s),
                )
            )
    return tuple(out)


def _balance(
    project: Project, mode: ServingMode, pf: PrefillCurve, dc: DecodeCurve, transfer_ms: float
) -> Balance:
    from studio.engine.disagg.results import Balance

    assert mode.prefill is not None and mode.decode is not None
    gpus = [(g.id, g.type) for g in project.cluster.gpus]
    cand_p = set(pool_candidates(gpus, mode.prefill, "serving_mode.prefill"))
    cand_d = set(pool_candidates(gpus, mode.decode, "serving_mode.decode"))
    x, y, per = best_split(
        pf,
        dc,
        mode.prefill.gpus_per_worker,
        mode.decode.gpus_per_worker,
        len(cand_p),
        len(cand_d),
        len(cand_p | cand_d),
        transfer_ms,
    )
    return Balance(
        ratio=balanced_ratio(pf, dc),
        prefill_worker_rps=pf.mu * 1e3,
        decode_worker_rps=dc.mu * 1e3,
        best_prefill_workers=x,
        best_decode_workers=y,
        best_tokens_per_s_per_gpu=per * 1e3 * project.workload.osl,
    )
