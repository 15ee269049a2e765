"""Collective and point-to-point costs over the link graph (latency–bandwidth, α–β, model).

Each collective is a small set of algorithms, each ``time = α + bytes / β`` and valid up to a
message size; the runtime picks the fastest, so ``time(S) = min_k(α_k + S·c_k)`` — a vectorised
minimum the sweep evaluates over arrays of message sizes.

* NVSwitch domain (every GPU linked to one NVSwitch / NVLink switch): one-shot custom all-reduce
  for small messages (vLLM / SGLang / TensorRT-LLM), NVLS (NVLink SHARP) for large ones, and ring.
* Any other single-node group: NCCL ring over the drawn links; ring edges that share a physical
  link (e.g. two PCIe switches behind one socket link) split its bandwidth.
* A group spanning scale-up islands (NVLink domains with their nodes; see
  :meth:`Topology.islands_of`): hierarchical — in-island reduce-scatter/all-gather plus one ring per
  rail (the j-th GPU of every island) across the islands, rails sharing NICs as drawn; or a flat
  ring. A group spanning trays of one NVLink rack stays in one island and is costed as NVLink/NVLS
  over the rack switch. The reported bottleneck is the slowest hop the algorithm crosses.
"""

from __future__ import annotations

import math
from functools import cached_property

import numpy as np

from studio.engine.fabric.topology import Topology
from studio.engine.step.collectives import Measured, measured_allreduce
from studio.engine.step.constants import Constants
from studio.engine.step.records import Record

GB_PER_S_TO_BYTES_PER_US = 1e3  # 1 GB/s = 1e3 bytes/µs


class Algo(Record, frozen=True):
    """One way of running a collective: time(S) = alpha_us + S × us_per_byte for S ≤ max_bytes."""

    name: str
    alpha_us: float
    us_per_byte: float
    max_bytes: float
    bandwidth_gbps: float  # effective bandwidth of the bottleneck
    bottleneck_link: str | None
    bottleneck_kind: str | None
    note: str = ""


class Collective(Record, frozen=True):
    """A collective (or transfer) on one group: the algorithms the runtime may choose from, or the
    measured table that times it (``measured``; the algorithms then still name the links it crosses)."""

    kind: str  # allreduce | p2p | alltoall
    group: tuple[str, ...]
    algos: tuple[Algo, ...]
    measured: Measured | None = None

    @cached_property
    def cost_terms(self) -> tuple[tuple[float, float, float], ...]:
        """(α µs, µs per byte, largest message) of each algorithm, in order: everything
        :meth:`time_us` reads, so two collectives with the same terms take the same time for every
        size (the replicas of a big cluster mostly do; :func:`costing.coll_time_us` times each
        distinct set once)."""
        if self.measured is not None:
            return ((self.measured.key[0], float(self.measured.key[1]), -1.0),)
        return tuple((a.alpha_us, a.us_per_byte, a.max_bytes) for a in self.algos)

    def time_us(self, size: np.ndarray | float) -> np.ndarray:
        """Fastest algorithm's time for message size(s) ``size`` (bytes)."""
        s = np.asarray(size, dtype=float)
        if not self.algos:
            return np.zeros_like(s)
        if self.measured is not None:
            if s.ndim == 0:
                return np.float64(self.measured.time_one(float(s)))
            return self.measured.time_us(s)
        if s.ndim == 0:  # one size: the same arithmetic in Python floats (an evaluation asks ~500 times)
            return np.float64(_fastest(self.cost_terms, float(s)))
        best = np.full(s.shape, np.inf)
        for a in self.algos:
            t = a.alpha_us + s * a.us_per_byte
            best = np.minimum(best, np.where(s <= a.max_bytes, t, np.inf))
        return best

    def pick(self, size: float) -> Algo | None:
        """The algorithm chosen for one message size."""
        best: tuple[float, Algo] | None = None
        for a in self.algos:
            if size <= a.max_bytes:
                t = a.alpha_us + size * a.us_per_byte
                if best is None or t < best[0]:
                    best = (t, a)
        return best[1] if best else None


def _fastest(terms: tuple[tuple[float, float, float], ...], s: float) -> float:
    """:meth:`Collective.time_us` of one size, step for step as the array code: ``min`` over the
    algorithms of ``α + s·c`` where ``s ≤`` the algorithm's limit, else ∞, a NaN winning as in
    ``np.minimum``."""
    best = math.inf
    for alpha, per_byte, limit in terms:
        t = alpha + s * per_byte if s <= limit else math.inf
        if t != t or best != best:
            best = math.nan
        elif t < best:
            best = t
    return best


def _link(topo: Topology, li: int | None) -> tuple[str | None, str | None]:
    if li is None or li < 0:
        return None, None
    return topo.link_ids[li], topo.link_kind[li]


def _ring(topo: Topology, gpus: list[str], c: Constants, name: str = "ring") -> Algo:
    n = len(gpus)
    edges = [(gpus[i], gpus[(i + 1) % n]) for i in range(n)]
    bw, li, lat = topo.concurrent(edges)
    lid, lkind = _link(topo, li)
    steps = 2 * (n - 1)
    return Algo(
        name=name,
        alpha_us=c.nccl_base_latency_us + steps * (c.nccl_step_latency_us + lat),
        us_per_byte=(steps / n) / (bw * GB_PER_S_TO_BYTES_PER_US),
        max_bytes=np.inf,
        bandwidth_gbps=bw,
        bottleneck_link=lid,
        bottleneck_kind=lkind,
        note=f"ring over {n} GPUs: 2(n-1)={steps} steps, each GPU moves 2(n-1)/n of the message",
    )


def _mesh(topo: Topology, gpus: list[str], c: Constants) -> Algo | None:
    """All-reduce over a full mesh of direct links (AMD xGMI, NVLink bridges all-to-all): the
    library runs one ring per link offset at once, so each GPU moves its 2(n-1)/n of the message
    over its n-1 links together (RCCL on 8× MI300X: busbw 313 GB/s against 48 GB/s for 2 GPUs).
    ``None`` when some pair of the group has no direct link."""
    n = len(gpus)
    pairs = [(a, b) for a in gpus for b in gpus if a != b]
    if any(len(topo.path(a, b).hops) != 1 for a, b in pairs):
        return None
    bw, li, lat = topo.concurrent(pairs)
    lid, lkind = _link(topo, li)
    steps = 2 * (n - 1)
    return Algo(
        name="mesh",
        alpha_us=c.nccl_base_latency_us + steps * (c.nccl_step_latency_us + lat),
        us_per_byte=(steps / n) / ((n - 1) * bw * GB_PER_S_TO_BYTES_PER_US),
        max_bytes=np.inf,
        bandwidth_gbps=(n - 1) * bw,
        bottleneck_link=lid,
        bottleneck_kind=lkind,
        note=f"full mesh of {n} GPUs: {n - 1} rings at once, one per direct link of each GPU",
    )


def _intra_algos(topo: Topology, gpus: list[str], c: Constants, small: bool) -> list[Algo]:
    n = len(gpus)
    if n == 1:
        return [Algo("local", 0.0, 0.0, np.inf, float("inf"), None, None)]
    algos = [_ring(topo, gpus, c)]
    dom = topo.nvswitch_domain(gpus)
    if dom is None and 3 <= n <= 16:
        mesh = _mesh(topo, gpus, c)
        if mesh is not None:
            algos.append(mesh)
    if dom is not None:
        bw, li, lat = dom
        lid, lkind = _link(topo, li)
        algos.append(
            Algo(
                name="nvls",
                alpha_us=c.nccl_base_latency_us + c.nvls_setup_us + 2 * (c.nccl_step_latency_us + lat),
                us_per_byte=(2 * (n - 1) / n) / (bw * c.nvls_bandwidth_gain * GB_PER_S_TO_BYTES_PER_US),
                max_bytes=np.inf,
                bandwidth_gbps=bw * c.nvls_bandwidth_gain,
                bottleneck_link=lid,
                bottleneck_kind=lkind,
                note="NVLink SHARP: the switch reduces; busbw above the ring's",
            )
        )
        if small:
            algos.append(
                Algo(
                    name="one-shot",
                    alpha_us=c.custom_allreduce_latency_us + lat,
                    us_per_byte=(n - 1) / (bw * c.custom_allreduce_bw_fraction * GB_PER_S_TO_BYTES_PER_US),
                    max_bytes=c.custom_allreduce_max_bytes,
                    bandwidth_gbps=bw * c.custom_allreduce_bw_fraction,
                    bottleneck_link=lid,
                    bottleneck_kind=lkind,
                    note="custom one-shot all-reduce: each GPU reads the n-1 peer buffers over NVSwitch",
                )
            )
    return algos


def allreduce(topo: Topology, group: list[str], c: Constants,
              kernel_engine: tuple[str, str | None] = ("trtllm", None), eager: bool = False) -> Collective:
    """All-reduce over ``group`` (GPU ids in rank order); costed once per link graph, group,
    constants and kernel tables (:meth:`Topology.costed`). Inside one island of at most 8 GPUs of a
    measured silicon it is timed from the measured tables of ``kernel_engine`` (serving engine,
    version), scaled by the drawn links (:mod:`studio.engine.step.collectives`); ``eager``: the engine
    launches its steps without CUDA graphs, so its custom all-reduce costs an eager call."""
    return topo.costed(("allreduce", tuple(group), kernel_engine, _silicon_key(topo, group), eager), c,
                       lambda: _allreduce(topo, group, c, kernel_engine, eager))


def _silicon_key(topo: Topology, group: list[str]) -> tuple:
    """What the measured tables of ``group``'s GPUs are chosen by (each type's id, HBM bandwidth and
    BF16 peak, as :func:`studio.engine.step.kernels.silicon_for` reads them). The memo of
    :meth:`Topology.costed` is shared by every cluster with the same links, so two clusters of
    different GPUs (H100 and H200 in the same boxes) must not answer each other's all-reduces."""
    specs = topo.cluster.gpu_specs
    return tuple(
        (t, specs[t].hbm_bandwidth_gbps, specs[t].tflops_bf16) if t in specs else (t,)
        for t in sorted({topo.gpu_type[g] for g in group})
    )


def _allreduce(topo: Topology, group: list[str], c: Constants,
               kernel_engine: tuple[str, str | None] = ("trtllm", None), eager: bool = False) -> Collective:
    n = len(group)
    if n <= 1:
        return Collective("allreduce", tuple(group), ())
    by_node = topo.islands_of(group)
    if len(by_node) == 1:
        own = tuple(_intra_algos(topo, group, c, small=True))
        ring = own[0]
        ring_li = topo.link_pos.get(ring.bottleneck_link) if ring.bottleneck_link else None
        meas = measured_allreduce(topo, group, topo.nvswitch_domain(group), ring.bandwidth_gbps, ring_li,
                                  *kernel_engine, eager=eager)
        return Collective("allreduce", tuple(group), own, meas)
    locals_ = list(by_node.values())
    m = max(len(x) for x in locals_)
    nn = len(locals_)
    largest = max(locals_, key=len)
    intra = _intra_algos(topo, largest, c, small=False)
    rails = [
        (locals_[k][j], locals_[(k + 1) % nn][j])
        for j in range(m)
        for k in range(nn)
        if j < len(locals_[k]) and j < len(locals_[(k + 1) % nn])
    ]
    bw, li, lat = topo.concurrent(rails)
    lid, lkind = _link(topo, li)
    steps = 2 * (nn - 1)
    inter_alpha = c.network_collective_floor_us + steps * (c.nccl_step_latency_us + lat)
    inter_c = (steps / nn) / m / (bw * GB_PER_S_TO_BYTES_PER_US)
    algos: list[Algo] = []
    for a in intra:
        # name the slowest hop actually crossed: the network rail unless the in-island part runs
        # over an even slower link
        slow_is_net = bw <= a.bandwidth_gbps
        algos.append(
            Algo(
                name=f"hierarchical ({a.name} in node + {nn}-node ring per rail)",  # node = island
                alpha_us=a.alpha_us + inter_alpha,
                us_per_byte=a.us_per_byte + inter_c,
                max_bytes=np.inf,
                bandwidth_gbps=bw if slow_is_net else a.bandwidth_gbps,
                bottleneck_link=lid if slow_is_net else a.bottleneck_link,
                bottleneck_kind=lkind if slow_is_net else a.bottleneck_kind,
                note=f"{m} rails across {nn} nodes; each rail carries 1/{m} of the message",
            )
        )
    flat = _ring(topo, group, c, name="flat ring across nodes")
    algos.append(
        Algo(flat.name, flat.alpha_us + c.network_collective_floor_us, flat.us_per_byte, flat.max_bytes,
             flat.bandwidth_gbps, flat.bottleneck_link, flat.bottleneck_kind, flat.note)
    )
    return Collective("allreduce", tuple(group), tuple(algos))


def p2p(topo: Topology, senders: list[str], receivers: list[str], c: Constants) -> Collective:
    """Activation hand-off between pipeline stages: rank i of one stage sends to rank i of the next,
    all at once (each sends the full hidden states, as vLLM does)."""
    pairs = list(zip(senders, receivers, strict=True))
    bw, li, lat = topo.concurrent(pairs)
    lid, lkind = _link(topo, li)
    if bw == float("inf"):
        return Collective("p2p", tuple(senders + receivers), ())
    algo = Algo(
        name="send/recv",
        alpha_us=c.p2p_base_latency_us + lat,
        us_per_byte=1.0 / (bw * GB_PER_S_TO_BYTES_PER_US),
        max_bytes=np.inf,
        bandwidth_gbps=bw,
        bottleneck_link=lid,
        bottleneck_kind=lkind,
        note=f"{len(pairs)} concurrent transfers",
    )
    return Collective("p2p", tuple(senders + receivers), (algo,))


def alltoall(topo: Topology, group: list[str], c: Constants, max_shifts: int = 8) -> Collective:
    """Expert-parallel all-to-all over ``group``: shift pattern i → i+d for d = 1..n-1 (sampled
    at ``max_shifts`` shifts for large groups); ``us_per_byte`` applies to the bytes one GPU sends."""
    n = len(group)
    if n <= 1:
        return Collective("alltoall", tuple(group), ())
    shifts = list(range(1, n))
    if len(shifts) > max_shifts:
        shifts = sorted({int(round(x)) for x in np.linspace(1, n - 1, max_shifts)})
    inv = 0.0
    worst: tuple[float, int | None] = (float("inf"), None)
    lat_max = 0.0
    for d in shifts:
        bw, li, lat = topo.concurrent([(group[i], group[(i + d) % n]) for i in range(n)])
        inv += 1.0 / bw
        lat_max = max(lat_max, lat)
        if bw < worst[0]:
            worst = (bw, li)
    inv /= len(shifts)
    lid, lkind = _link(topo, worst[1])
    spans = len(topo.islands_of(group)) > 1
    algo = Algo(
        name="all-to-all",
        alpha_us=(c.network_collective_floor_us if spans else c.nccl_base_latency_us)
        + (n - 1) * c.nccl_step_latency_us + lat_max,
        us_per_byte=inv / GB_PER_S_TO_BYTES_PER_US,
        max_bytes=np.inf,
        bandwidth_gbps=1.0 / inv,
        bottleneck_link=lid,
        bottleneck_kind=lkind,
        note=f"{n} GPUs exchange 1/{n} of their tokens with each peer",
    )
    return Collective("alltoall", tuple(group), (algo,))


def allgather(topo: Topology, group: list[str], c: Constants) -> Collective:
    """Ring all-gather (or reduce-scatter: the same traffic) over ``group``, the collective of
    context parallelism (kind ``cp``): ``n − 1`` steps, each GPU receives ``(n − 1) / n`` of the
    gathered message. ``time_us(S)`` takes ``S`` = the gathered (whole) message. A group spanning
    scale-up islands pays the network collective floor; the bottleneck is the slowest ring edge."""
    n = len(group)
    if n <= 1:
        return Collective("cp", tuple(group), ())
    edges = [(group[i], group[(i + 1) % n]) for i in range(n)]
    bw, li, lat = topo.concurrent(edges)
    lid, lkind = _link(topo, li)
    spans = len(topo.islands_of(group)) > 1
    steps = n - 1
    algo = Algo(
        name="ring all-gather",
        alpha_us=(c.network_collective_floor_us if spans else c.nccl_base_latency_us)
        + steps * (c.nccl_step_latency_us + lat),
        us_per_byte=(steps / n) / (bw * GB_PER_S_TO_BYTES_PER_US),
        max_bytes=np.inf,
        bandwidth_gbps=bw,
        bottleneck_link=lid,
        bottleneck_kind=lkind,
        note=f"ring over {n} GPUs: n-1={steps} steps, each GPU receives (n-1)/n of the gathered message",
    )
    return Collective("cp", tuple(group), (algo,))


def ring_pass(topo: Topology, group: list[str], c: Constants) -> Collective:
    """One step of ring attention over ``group`` (kind ``cp``): every GPU sends its current KV block
    to the next at once; ``time_us(S)`` takes ``S`` = the bytes of one block."""
    n = len(group)
    if n <= 1:
        return Collective("cp", tuple(group), ())
    edges = [(group[i], group[(i + 1) % n]) for i in range(n)]
    bw, li, lat = topo.concurrent(edges)
    lid, lkind = _link(topo, li)
    algo = Algo(
        name="ring pass",
        alpha_us=c.p2p_base_latency_us + lat,
        us_per_byte=1.0 / (bw * GB_PER_S_TO_BYTES_PER_US),
        max_bytes=np.inf,
        bandwidth_gbps=bw,
        bottleneck_link=lid,
        bottleneck_kind=lkind,
        note=f"{n} concurrent sends of one KV block to the next GPU of the ring",
    )
    return Collective("cp", tuple(group), (algo,))
