"""Disaggregated candidates for the sweep: every (x prefill workers, y decode workers, both worker
layouts, decode batch) that fits the drawn GPUs, costed with the model of
:mod:`studio.engine.disagg.evaluate` and filtered by the same TTFT / TPOT targets as aggregated rows.

Worker layouts: TP a power of two up to the GPUs of one node of the pool's GPU type (and that
count itself), PP 1, 2 or 4, EP = TP for mixture-of-experts models (and EP 1). On a cluster with
several GPU types each pool may sit on each type. A worker's costs are computed once per
(layout, GPU type, nodes and scale-up islands it spans) — the first worker of that shape stands for
the others, as the aggregated sweep samples replicas; the KV transfer is costed for each placement.

A caller that shows only the ``top`` best rows (``sweep --disagg``) gets exactly those without every
row being solved: each row's throughput is bounded by its pools' capacities and its TPOT by its
decode curve, rows are solved best bound first, and the solve stops once ``top`` solved rows beat
every bound left (:func:`_ranked`). A prefill worker's load tables and a split's KV transfer are
built only when a solved row reads them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import field
from typing import TYPE_CHECKING

import numpy as np

from studio.core import parallelism as par
from studio.core.errors import StudioError
from studio.core.project import Project
from studio.core.serving_mode import PoolLayout, ServingMode
from studio.engine.disagg.evaluate import (
    ClusterIndex,
    Worker,
    decode_worker,
    load_of,
    place_pair,
    pool_costs,
    prefill_worker,
)
from studio.engine.disagg.kv_transfer import KvTransfer, kv_transfer
from studio.engine.disagg.pools import DecodeCurve, PrefillCurve, serve
from studio.engine.disagg.reuse import transfer_tokens
from studio.engine.disagg.serve_grid import LIMITERS, DecodeTables, PrefillTables, serve_many
from studio.engine.disagg.splits import WorkerGroups, worker_splits
from studio.engine.fabric.topology import Topology, topology_of
from studio.engine.plan.evaluate import constants_for, resolve_calibration
from studio.engine.step.constants import Constants
from studio.engine.step.records import frozen_result

if TYPE_CHECKING:
    from studio.engine.disagg.results import DisaggResult

#: Most (layout pair, x, y) combinations costed; beyond it the most balanced splits are costed.
MAX_COMBINATIONS = 3000
OBJECTIVES = ("throughput", "cost", "latency")
#: A layout pair and its fitting worker counts (x, y), as arrays.
_Block = tuple[PoolLayout, PoolLayout, np.ndarray, np.ndarray]


@frozen_result
class DisaggRow:
    """One costed disaggregated candidate at one decode batch."""

    mode: ServingMode
    batch: int  # sequences per decode worker (its cap)
    gpus: int
    ttft_ms: float
    tpot_ms: float
    tokens_per_s: float
    tokens_per_s_per_gpu: float
    tokens_per_s_per_user: float
    usd_per_million: float
    transfer_ms: float
    transfer_over: str
    limited_by: str
    saturated: bool
    meets_targets: bool

    @property
    def label(self) -> str:
        return self.mode.label

    def why(self) -> str:
        """``disaggregated 2P(TP4)+1D(TP8): TPOT 31 ms without prefill interference; KV transfer 3.1 ms
        over InfiniBand NDR``."""
        return (
            f"disaggregated {self.label}: TPOT {self.tpot_ms:.3g} ms without prefill interference; "
            f"KV transfer {self.transfer_ms:.3g} ms over {self.transfer_over or 'the same GPU'}"
        )


@frozen_result
class DisaggSweep:
    """Every disaggregated candidate row, best first for the objective."""

    project: Project
    #: ordered: meeting the targets first, then by the objective; with ``top`` only the first ``top``
    rows: tuple[DisaggRow, ...]
    skipped: dict[str, int] = field(default_factory=dict)  # reason -> worker layouts refused
    combinations: int = 0
    #: every candidate row costed or ranked out (``len(rows)`` unless the sweep kept only ``top``)
    candidates: int | None = None

    @property
    def n_rows(self) -> int:
        """Candidate rows of the sweep (pool splits × decode batches), shown or not."""
        return len(self.rows) if self.candidates is None else self.candidates

    @property
    def best(self) -> DisaggRow | None:
        """The best row meeting the targets (None when no row meets them)."""
        return self.rows[0] if self.rows and self.rows[0].meets_targets else None

    def result(self, row: DisaggRow) -> DisaggResult:
        """The full :func:`~studio.engine.disagg.evaluate.evaluate_disaggregated` of a row."""
        from studio.engine.disagg.evaluate import evaluate_disaggregated

        wl = self.project.workload.replace(batch=row.batch)
        return evaluate_disaggregated(self.project.replace(workload=wl), row.mode)


def worker_shapes(project: Project, gpu_type: str | None) -> list[PoolLayout]:
    """Worker layouts worth trying on ``gpu_type`` (every type when None)."""
    model = project.model
    nodes = [
        sum(1 for g in n.gpus if gpu_type is None or g.type == gpu_type)
        for n in project.cluster.nodes
    ]
    per_node = max(nodes, default=0)
    total = sum(nodes)
    if per_node == 0:
        return []
    tps = sorted({t for t in (1, 2, 4, 8, 16, 32, 64, 72) if t <= per_node} | {per_node})
    out = []
    for tp in tps:
        if par.heads_reason(model, tp) is not None:
            continue  # the engines refuse a TP that does not split the attention heads
        for pp in (1, 2, 4):
            if tp * pp > total or pp > model.num_layers:
                continue
            eps = [1]
            if tp > 1 and par.ep_reason(model, tp, tp, 1) is None:
                eps.append(tp)
            for ep in eps:
                out.append(PoolLayout(tp=tp, pp=pp, ep=ep, gpu_type=gpu_type))
    return out


def _batches(cap: int) -> list[int]:
    out = [1]
    while out[-1] * 2 < cap:
        out.append(out[-1] * 2)
    if cap not in out:
        out.append(cap)
    return out


def sweep_disaggregated(
    project: Project,
    *,
    objective: str = "throughput",
    ttft_ms: float | None = None,
    tpot_ms: float | None = None,
    constants: Constants | None = None,
    cancel: Callable[[], bool] | None = None,
    top: int | None = None,
) -> DisaggSweep:
    """Cost every disaggregated candidate of ``project`` on its cluster.

    Targets default to the workload's (``ttft_ms`` / ``tpot_ms``). Rows meeting them come first,
    then by the objective (throughput per GPU, $ per million tokens, or TPOT).

    ``top``: only the ``top`` best rows are wanted (``rows`` holds those, ``n_rows`` counts every
    candidate). Rows are then solved best bound first and the solve stops once ``top`` rows meeting
    the targets beat the bound of every row left (:func:`_ranked`): the same rows, the same figures.
    """
    if objective not in OBJECTIVES:
        raise StudioError(f"objective '{objective}' is not one of {', '.join(OBJECTIVES)}")
    wl = project.workload
    ttft_ms = wl.ttft_ms if ttft_ms is None else ttft_ms
    tpot_ms = wl.tpot_ms if tpot_ms is None else tpot_ms
    cal = resolve_calibration(project, None)
    c = constants_for(cal, constants)
    topo = topology_of(project.cluster, cal.link_fits if cal else None)
    types: list[str | None] = list(project.cluster.gpu_types())
    if len(types) == 1:
        types = [None]
    type_count = {
        t: sum(1 for g in project.cluster.gpus if t is None or g.type == t) for t in types
    }
    shapes = {t: worker_shapes(project, t) for t in types}
    blocks: list[_Block] = []
    for tp_ in types:
        for td in types:
            for p in shapes[tp_]:
                for d in shapes[td]:
                    xs, ys = worker_splits(p, d, type_count[tp_], type_count[td], tp_ == td)
                    if xs.size:
                        blocks.append((p, d, xs, ys))
    workers: dict[tuple, Worker | str] = {}
    skipped: dict[str, int] = {}
    if sum(b[2].size for b in blocks) > MAX_COMBINATIONS:
        combos = _most_balanced(project, topo, c, blocks, workers, skipped)
    else:
        combos = [(p, d, x, y) for p, d, xs, ys in blocks
                  for x, y in zip(xs.tolist(), ys.tolist(), strict=True)]
    index = ClusterIndex.of(project)
    price_of = _price_of(project, topo)
    transfers = _Transfers(project, topo)
    sized: dict[tuple[int, int], PoolLayout] = {}  # a worker layout at a worker count, made once

    def of(pool: PoolLayout, n: int) -> PoolLayout:
        hit = sized.get((id(pool), n))  # the blocks hold every worker layout: ids stay theirs
        if hit is None:
            hit = sized[(id(pool), n)] = pool.replace(workers=n)
        return hit

    # a worker layout's first worker on the same GPUs is the same worker: its shape read once
    at: dict[tuple[str, int, tuple[str, ...]], Worker | None] = {}

    def placed_worker(role: str, pool: PoolLayout, n: int, placement: tuple[str, ...]) -> Worker | None:
        key = (role, id(pool), placement[: pool.gpus_per_worker])
        if key not in at:
            at[key] = _worker(project, topo, c, workers, skipped, role, of(pool, n), placement)
        return at[key]

    batches: dict[int, list[int]] = {}
    prefill_at: dict[int, tuple[str, ...]] = {}  # by the sized prefill pool (kept in `sized`)
    table = _Table()
    for p, d, x, y in combos:
        if cancel is not None and cancel():
            break
        px, dy = of(p, x), of(d, y)
        try:  # the prefill pool is placed first: its placement is the same for every decode pool
            ppl, dpl = place_pair(project, px, dy, index, prefill_at.get(id(px)))
        except StudioError:
            continue
        prefill_at[id(px)] = ppl
        pw = placed_worker("prefill", p, x, ppl)
        dw = placed_worker("decode", d, y, dpl)
        if pw is None or dw is None:
            continue
        split = _Split(px, dy, ppl, dpl)  # its mode and KV transfer are made when a row of it is solved
        price = sum(map(price_of.__getitem__, ppl + dpl))  # gpu_price, read from a table
        assert isinstance(pw.curve, PrefillCurve) and isinstance(dw.curve, DecodeCurve)
        caps = batches.get(dw.curve.cap)
        if caps is None:
            caps = batches[dw.curve.cap] = _batches(dw.curve.cap)
        table.add(split, pw.curve, dw.curve, caps, price, len(ppl) + len(dpl))
    if top is not None and 0 < top < table.n:
        rows = _ranked(project, table, ttft_ms, tpot_ms, objective, top, transfers)
        return DisaggSweep(project=project, rows=tuple(rows), skipped=skipped,
                           combinations=len(combos), candidates=table.n)
    rows = _rows(project, table.pending(range(table.n)), ttft_ms, tpot_ms, transfers)
    rows.sort(key=lambda r: (not r.meets_targets, _objective_key(r, objective)))
    return DisaggSweep(project=project, rows=tuple(rows), skipped=skipped, combinations=len(combos))


class _Split:
    """One placed pool split (a layout pair at its worker counts); its serving mode and KV transfer
    once made. (A plain class: ~740 are made per sweep, and a dataclass costs ~0.3 ms to define.)"""

    __slots__ = ("prefill_pool", "decode_pool", "prefill", "decode", "transfer", "made")

    def __init__(self, prefill_pool: PoolLayout, decode_pool: PoolLayout, prefill: tuple[str, ...],
                 decode: tuple[str, ...]) -> None:
        self.prefill_pool, self.decode_pool = prefill_pool, decode_pool
        self.prefill, self.decode = prefill, decode  # GPU ids of each pool's ranks
        self.transfer: KvTransfer | None = None
        self.made: ServingMode | None = None

    @property
    def mode(self) -> ServingMode:
        if self.made is None:
            self.made = ServingMode(mode="disaggregated", prefill=self.prefill_pool, decode=self.decode_pool)
        return self.made


class _Transfers:
    """The KV transfer of a split, costed on first request (the path and pattern memo shared)."""

    def __init__(self, project: Project, topo: Topology) -> None:
        self.project, self.topo = project, topo
        self.cache: dict = {}
        self.tokens = transfer_tokens(project)  # the prompt less the blocks a decode worker caches

    def __call__(self, split: _Split) -> KvTransfer:
        if split.transfer is None:
            mode, model = split.mode, self.project.model
            assert mode.prefill is not None and mode.decode is not None
            split.transfer = kv_transfer(
                self.topo,
                model,
                self.project.serving.kv_dtype,
                self.tokens,
                WorkerGroups(split.prefill, mode.prefill.tp, mode.prefill.pp),
                WorkerGroups(split.decode, mode.decode.tp, mode.decode.pp),
                mode.prefill.layout().stage_layers(model.num_layers),
                mode.decode.layout().stage_layers(model.num_layers),
                cache=self.cache,
            )
        return split.transfer


def _price_of(project: Project, topo: Topology) -> dict[str, float]:
    """$ per hour of each GPU, as :func:`~studio.engine.disagg.evaluate.gpu_price` adds them."""
    sv, specs = project.serving, project.cluster.gpu_specs
    flat = sv.price_per_gpu_hour
    return {
        g: flat if flat is not None else specs[t].price_per_gpu_hour for g, t in topo.gpu_type.items()
    }


def _most_balanced(
    project: Project,
    topo: Topology,
    c: Constants,
    blocks: list[_Block],
    cache: dict,
    skipped: dict[str, int],
) -> list[tuple]:
    """The :data:`MAX_COMBINATIONS` splits whose pools are closest to balanced at the decode cap
    (|log(x·μ_p / y·μ_d)|), each worker costed once at its first placement in the cluster."""
    import math

    from studio.engine.disagg.evaluate import _aligned, pool_candidates

    gpus = [(g.id, g.type) for g in project.cluster.gpus]
    node_of = topo.gpu_node
    mu: dict[tuple[str, PoolLayout], float] = {}

    def capacity(role: str, pool: PoolLayout) -> float:
        key = (role, pool)
        if key not in mu:
            one = pool.replace(workers=1)
            place = _aligned(pool_candidates(gpus, one, f"serving_mode.{role}"), one, node_of)
            w = _worker(project, topo, c, cache, skipped, role, one, place)
            mu[key] = 0.0 if w is None else float(w.curve.mu)
        return mu[key]

    mp, md = np.empty(len(blocks)), np.empty(len(blocks))
    for i, (p, d, _, _) in enumerate(blocks):
        mp[i], md[i] = capacity("prefill", p), capacity("decode", d)
    sizes = [b[2].size for b in blocks]
    which = np.repeat(np.arange(len(blocks)), sizes)
    x = np.concatenate([b[2] for b in blocks]).astype(float)
    y = np.concatenate([b[3] for b in blocks]).astype(float)
    mp_r, md_r = mp[which], md[which]
    ok = (mp_r > 0) & (md_r > 0) & np.isfinite(md_r)
    with np.errstate(divide="ignore", invalid="ignore"):
        score = np.where(ok, np.abs(np.log(x * mp_r / (y * md_r))), math.inf)
    ranked = np.argsort(score, kind="stable")[:MAX_COMBINATIONS]  # ties: first in order
    ranked = ranked[np.isfinite(score[ranked])]
    return [
        (blocks[w][0], blocks[w][1], int(xi), int(yi))
        for w, xi, yi in zip(which[ranked].tolist(), x[ranked].tolist(), y[ranked].tolist(), strict=True)
    ]


def _objective_key(r: DisaggRow, objective: str) -> float:
    if objective == "cost":
        return r.usd_per_million
    if objective == "latency":
        return r.tpot_ms
    return -r.tokens_per_s_per_gpu


class _Pending:
    """A candidate waiting to be solved with the others (one decode batch cap of one split)."""

    __slots__ = ("split", "prefill", "decode", "batch", "price", "gpus")

    def __init__(self, split: _Split, prefill: PrefillCurve, decode: DecodeCurve, batch: int, price: float,
                 gpus: int) -> None:
        self.split, self.prefill, self.decode = split, prefill, decode  # decode: the worker's own curve
        self.batch, self.price, self.gpus = batch, price, gpus  # batch caps the decode curve

    @property
    def mode(self) -> ServingMode:
        return self.split.mode

    @property
    def workers(self) -> tuple[int, int]:
        """(prefill workers, decode workers)."""
        return self.split.prefill_pool.workers, self.split.decode_pool.workers


class _Table:
    """The candidate rows, split by split: each placed split with its workers' curves, price and
    GPUs, and the decode batch caps it is tried at (a row per cap, in split order). Rows are made
    as :class:`_Pending` only when asked for (the top-k sweep solves a few of thousands)."""

    def __init__(self) -> None:
        self.splits: list[_Split] = []
        self.prefill: list[PrefillCurve] = []
        self.decode: list[DecodeCurve] = []
        self.caps: list[list[int]] = []
        self.price: list[float] = []
        self.gpus: list[int] = []
        self.n = 0
        self._at: tuple[list[int], list[int]] | None = None  # each row's split and cap position, once asked

    def add(self, split: _Split, pf: PrefillCurve, dc: DecodeCurve, caps: list[int], price: float,
            gpus: int) -> None:
        self.splits.append(split)
        self.prefill.append(pf)
        self.decode.append(dc)
        self.caps.append(caps)
        self.price.append(price)
        self.gpus.append(gpus)
        self.n += len(caps)

    def where(self) -> tuple[np.ndarray, np.ndarray]:
        """(split, position among its caps) of every row."""
        counts = np.array([len(c) for c in self.caps], dtype=np.intp)
        split = np.repeat(np.arange(len(self.caps)), counts)
        starts = np.cumsum(counts) - counts
        return split, np.arange(self.n) - starts[split]

    def pending(self, rows) -> list[_Pending]:
        """The rows ``rows`` (indices, in that order) as pending candidates."""
        if self._at is None:
            split, pos = self.where()
            self._at = (split.tolist(), pos.tolist())
        split_of, pos_of = self._at
        out = []
        for i in rows:
            j = split_of[i]
            out.append(_Pending(self.splits[j], self.prefill[j], self.decode[j], self.caps[j][pos_of[i]],
                                self.price[j], self.gpus[j]))
        return out


#: Rows solved in the first round of :func:`_ranked` (at least; ``8 × top`` when larger), doubled
#: each round after.
FIRST_ROUND = 16
ROUND_PER_TOP = 1


def _ranked(
    project: Project,
    table: _Table,
    ttft_target: float | None,
    tpot_target: float | None,
    objective: str,
    top: int,
    transfers: _Transfers,
) -> list[DisaggRow]:
    """The ``top`` best rows of ``table`` (ranked as :func:`sweep_disaggregated` ranks them all),
    solving as few as it can.

    Each row has a bound on its objective no solve can beat: its rate is at most the smaller pool's
    capacity, ``min(x·μ_p, y·μ_d)`` (the solve's rate stays below 0.9999 of the capacity, the KV
    transfer's bound only lowers it) and an open loop's rate, so its tokens/s per GPU are at most that rate's and its $ per
    million tokens at least; its TPOT is at least the decode curve's smallest (an interpolation
    between the curve's points), so a row whose smallest TPOT is above the target cannot meet the
    targets. Rows are solved in rounds, those that may meet the targets first, best bound first;
    once ``top`` solved rows meet the targets with an objective strictly better than the best bound
    left (or every row left cannot meet them), no row left can rank among them and the rest are not
    solved.
    A row's figures do not depend on the rows solved beside it. Without ``top`` such rows (or a
    bound that is not a number) every row is solved, as without ``top``."""
    wl = project.workload
    n = table.n
    split, at = table.where()
    capped: dict[tuple[int, int], DecodeCurve] = {}  # decode curves at their caps, made once
    first: dict[int, int] = {}  # a decode curve's first capped curve among them
    base = np.empty(len(table.splits), dtype=np.intp)
    for j, dc in enumerate(table.decode):
        k = first.get(id(dc))
        if k is None:
            k = first[id(dc)] = len(capped)
            for b in table.caps[j]:  # a decode curve's caps: the same for every split it serves
                capped[(id(dc), b)] = dc.capped(b)
        base[j] = k
    which = base[split] + at  # each row's capped decode curve
    curves = list(capped.values())
    if any(c.decode_iters == 0 for c in curves):  # one output token: nothing to bound
        rows = _rows(project, table.pending(range(n)), ttft_target, tpot_target, transfers, capped)
        rows.sort(key=lambda r: (not r.meets_targets, _objective_key(r, objective)))
        return rows[:top]
    x = np.array([float(sp.prefill_pool.workers) for sp in table.splits])[split]
    y = np.array([float(sp.decode_pool.workers) for sp in table.splits])[split]
    mu_p = np.array([pf.mu for pf in table.prefill], dtype=float)[split]
    mu_d = np.array([c.mu for c in curves], dtype=float)[which]
    gpus = np.array(table.gpus, dtype=float)[split]
    rate_ub = np.minimum(x * mu_p, y * mu_d)  # requests per ms, as the solve's capacity is taken
    rate = load_of(project, 1, 1)[2]
    if rate is not None:  # an open loop runs at its rate at most
        rate_ub = np.minimum(rate_ub, rate)
    tps_ub = rate_ub * 1e3 * wl.osl
    # less a margin: the solve's interpolation may read a point a rounding away from a curve's
    # knot from the neighbouring segment (its search keys carry the row's offset in the block)
    tpot_lb = np.array([float(c.tpot.min()) for c in curves])[which] * (1.0 - 1e-6)
    # a row whose TPOT cannot meet its target ranks after every row that meets the targets
    hopeless = tpot_lb > tpot_target if tpot_target is not None else np.zeros(n, dtype=bool)
    with np.errstate(divide="ignore", invalid="ignore"):
        if objective == "cost":
            price = np.array(table.price, dtype=float)[split]
            bound = np.where(tps_ub > 0, price / (tps_ub * 3600.0) * 1e6, np.inf)
        elif objective == "latency":
            bound = tpot_lb
        else:
            bound = -(tps_ub / gpus)
    solved: dict[int, DisaggRow] = {}
    if not np.isnan(bound).any():
        order = np.lexsort((bound, hopeless))  # stable: hopeful rows first, best bound first
        pos, size = 0, max(FIRST_ROUND, ROUND_PER_TOP * top)
        while pos < n:
            chunk = np.sort(order[pos : pos + size])
            pos += size
            size *= 2
            for i, r in zip(chunk.tolist(), _rows(project, table.pending(chunk.tolist()),
                                                   ttft_target, tpot_target, transfers, capped),
                            strict=True):
                solved[i] = r
            keys = sorted(_objective_key(r, objective) for r in solved.values() if r.meets_targets)
            if any(k != k for k in keys):  # a figure that is not a number: solve every row
                break
            if pos < n and len(keys) >= top and (hopeless[order[pos]] or keys[top - 1] < bound[order[pos]]):
                rows = [solved[i] for i in sorted(solved)]
                rows.sort(key=lambda r: (not r.meets_targets, _objective_key(r, objective)))
                return rows[:top]
    rest = [i for i in range(n) if i not in solved]
    for i, r in zip(rest, _rows(project, table.pending(rest), ttft_target, tpot_target,
                                transfers, capped), strict=True):
        solved[i] = r
    rows = [solved[i] for i in range(n)]
    rows.sort(key=lambda r: (not r.meets_targets, _objective_key(r, objective)))
    return rows[:top]


def _rows(
    project: Project,
    pending: list[_Pending],
    ttft_target: float | None,
    tpot_target: float | None,
    transfers: _Transfers,
    capped: dict[tuple[int, int], DecodeCurve] | None = None,
) -> list[DisaggRow]:
    """Every pending candidate solved together (:func:`serve_many`), as rows in the same order.
    ``capped``: decode curves at their batch caps already built, by (id of the curve, cap)."""
    if not pending:
        return []
    if pending[0].decode.decode_iters == 0:  # one output token: no decode curve to interpolate
        return [
            _row(project, q.mode, q.prefill, q.decode.capped(q.batch), transfers(q.split), q.price,
                 q.gpus, ttft_target, tpot_target)
            for q in pending
        ]
    capped = {} if capped is None else capped
    wl = project.workload
    p_of: dict[int, int] = {}
    d_of: dict[tuple[int, int], int] = {}
    p_curves: list[PrefillCurve] = []
    d_curves: list[DecodeCurve] = []
    n = len(pending)
    p_idx = np.empty(n, dtype=np.intp)
    d_idx = np.empty(n, dtype=np.intp)
    x = np.empty(n)
    y = np.empty(n)
    tr = np.empty(n)
    users = np.zeros(n)
    kv: list[KvTransfer] = []
    rate: float | None = None
    poisson = True
    for i, q in enumerate(pending):
        assert q.mode.prefill is not None and q.mode.decode is not None
        pi = p_of.setdefault(id(q.prefill), len(p_curves))
        if pi == len(p_curves):
            p_curves.append(q.prefill)
        key = (id(q.decode), q.batch)
        di = d_of.setdefault(key, len(d_curves))
        if di == len(d_curves):
            dc = capped.get(key)
            if dc is None:
                dc = capped[key] = q.decode.capped(q.batch)
            d_curves.append(dc)
        p_idx[i], d_idx[i] = pi, di
        kv.append(transfers(q.split))
        x[i], y[i], tr[i] = q.mode.prefill.workers, q.mode.decode.workers, kv[i].time_ms
        _, u, rate, poisson, _ = load_of(project, q.mode.decode.workers, d_curves[di].cap)
        if u is not None:
            users[i] = float(u[0])
    st = serve_many(
        PrefillTables.of(p_curves), p_idx, DecodeTables.of(d_curves), d_idx, x, y, tr,
        users=None if rate is not None else users, rate_per_ms=rate, poisson=poisson,
    )
    tps = st.rate * 1e3 * wl.osl
    gpus = np.array([q.gpus for q in pending], dtype=float)
    price = np.array([q.price for q in pending], dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        per_user = np.where(st.tpot > 0, 1e3 / st.tpot, 0.0)
        usd = np.where(tps > 0, price / (tps * 3600.0) * 1e6, np.inf)
    meets = ~(st.saturated & (rate is not None))
    if ttft_target is not None:
        meets &= st.ttft <= ttft_target
    if tpot_target is not None:
        meets &= st.tpot <= tpot_target
    out = []
    for i, q in enumerate(pending):
        out.append(
            DisaggRow(
                mode=q.mode,
                batch=d_curves[d_idx[i]].cap,
                gpus=q.gpus,
                ttft_ms=float(st.ttft[i]),
                tpot_ms=float(st.tpot[i]),
                tokens_per_s=float(tps[i]),
                tokens_per_s_per_gpu=float(tps[i] / gpus[i]),
                tokens_per_s_per_user=float(per_user[i]),
                usd_per_million=float(usd[i]),
                transfer_ms=kv[i].time_ms,
                transfer_over=kv[i].bottleneck_name,
                limited_by=LIMITERS[int(st.limiter[i])],
                saturated=bool(st.saturated[i]),
                meets_targets=bool(meets[i]),
            )
        )
    return out


def _row(
    project: Project,
    mode: ServingMode,
    pf: PrefillCurve,
    dc: DecodeCurve,
    transfer: KvTransfer,
    price: float,
    gpus: int,
    ttft_target: float | None,
    tpot_target: float | None,
) -> DisaggRow:
    assert mode.prefill is not None and mode.decode is not None
    wl = project.workload
    x, y = mode.prefill.workers, mode.decode.workers
    _, users, rate, poisson, _ = load_of(project, y, dc.cap)
    st = serve(pf, dc, x, y, transfer.time_ms, users=users, rate_per_ms=rate, poisson=poisson)
    tps = float(st.rate[0]) * 1e3 * wl.osl
    ttft, tpot = float(st.ttft[0]), float(st.tpot[0])
    meets = (
        (ttft_target is None or ttft <= ttft_target)
        and (tpot_target is None or tpot <= tpot_target)
        and not bool(st.saturated[0] and rate is not None)
    )
    return DisaggRow(
        mode=mode,
        batch=dc.cap,
        gpus=gpus,
        ttft_ms=ttft,
        tpot_ms=tpot,
        tokens_per_s=tps,
        tokens_per_s_per_gpu=tps / gpus,
        tokens_per_s_per_user=1e3 / tpot if tpot > 0 else 0.0,
        usd_per_million=price / (tps * 3600.0) * 1e6 if tps > 0 else float("inf"),
        transfer_ms=transfer.time_ms,
        transfer_over=transfer.bottleneck_name,
        limited_by=st.limiter,
        saturated=bool(st.saturated[0]),
        meets_targets=meets,
    )


def _shape_key(topo: Topology, role: str, pool: PoolLayout, placement: tuple[str, ...]) -> tuple:
    first = placement[: pool.gpus_per_worker]
    return (
        role,
        pool.tp,
        pool.pp,
        pool.ep,
        pool.gpu_type,
        tuple(sorted({topo.gpu_type[g] for g in first})),
        len({topo.gpu_node[g] for g in first}),
        len({topo.gpu_island[g] for g in first}),
    )


def _worker(
    project: Project,
    topo: Topology,
    c: Constants,
    cache: dict,
    skipped: dict[str, int],
    role: str,
    pool: PoolLayout | None,
    placement: tuple[str, ...],
) -> Worker | None:
    assert pool is not None
    key = _shape_key(topo, role, pool, placement)
    hit = cache.get(key)
    if hit is None:
        one = pool.replace(workers=1, ep=pool.ep if pool.ep <= pool.tp else pool.tp)
        first = placement[: pool.gpus_per_worker]
        try:
            lc = pool_costs(project, one, first, topo, c)
            field = f"serving_mode.{role}"
            hit = (
                prefill_worker(project, one, lc, c, field)
                if role == "prefill"
                else decode_worker(
                    project, one, lc, c, field, batch=pool.max_batch or project.workload.max_batch
                )
            )
        except StudioError as exc:
            hit = str(exc)
            skipped[hit] = skipped.get(hit, 0) + 1
        cache[key] = hit
    return hit if isinstance(hit, Worker) else None


def best_result(sw: DisaggSweep) -> DisaggResult | None:
    """Full evaluation of the best row meeting the targets."""
    best = sw.best
    return sw.result(best) if best is not None else None
