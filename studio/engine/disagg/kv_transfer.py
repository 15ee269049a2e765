"""KV-cache transfer from a prefill worker to a decode worker, rank to rank, over the drawn links.

A disaggregated request's prompt KV cache moves from the prefill worker that computed it to the
decode worker that generates the answer (vLLM ``NixlConnector``, SGLang Mooncake/NIXL backends,
TensorRT-LLM cache transceiver). The transfers are *shards*: each decode rank pulls, for the layers
of its pipeline stage and the KV heads of its tensor-parallel rank, the bytes from the prefill rank
that holds them. When the two pools use different TP sizes one decode rank reads from several
prefill ranks (prefill TP4 → decode TP8: each decode rank reads half a prefill rank's heads) or
several decode ranks read the same prefill rank (heads replicated when TP exceeds the KV heads;
MLA's single latent head is on every rank). All flows of one request run at once; flows that cross
the same link direction share it equally (:meth:`Topology.path` routes, as in
:meth:`Topology.concurrent`), and the transfer ends with its slowest flow.

Bytes: layers × KV heads × head dim × 2 (K and V) × bytes per element × ISL for the whole request
(MLA: layers × (kv_lora_rank + rope dim) × bytes × ISL), from
:meth:`~studio.core.architecture.LLMArchitecture.kv_elements_per_token_per_layer`. Sliding-window
layers are counted as full (the engines transfer the blocks they hold for the prompt).
"""

from __future__ import annotations

from collections.abc import Sequence

from studio.core.architecture import LLMArchitecture
from studio.core.precision import DType
from studio.engine.fabric.symmetry import symmetry_of
from studio.engine.fabric.topology import Topology
from studio.engine.step.records import frozen_result

#: Most (prefill worker, decode worker) pairs whose transfer is costed; larger pools are sampled.
MAX_PAIRS = 16


@frozen_result
class KvTransfer:
    """The KV transfer of one request (ISL prompt tokens), mean over worker pairs.

    Attributes
    ----------
    bytes_per_request:
        Unique KV bytes moved for one request (all flows).
    flows:
        Rank-to-rank flows of one request.
    bytes_per_flow:
        Largest flow.
    time_ms:
        Mean transfer time over the (prefill worker, decode worker) pairs costed: the slowest flow's
        latency + bytes / its share of bandwidth.
    worst_ms:
        Slowest pair.
    bandwidth_gbps:
        Per-flow bandwidth of the slowest flow of the slowest pair, after link sharing.
    bottleneck_link, bottleneck_kind, bottleneck_name:
        The slowest hop of that flow: link id, link-kind id and its readable name.
    src_gpu, dst_gpu:
        The GPUs of that flow.
    pairs:
        Worker pairs costed (all when ``x × y ≤ MAX_PAIRS``).
    """

    bytes_per_request: float
    flows: int
    bytes_per_flow: float
    time_ms: float
    worst_ms: float
    bandwidth_gbps: float
    latency_us: float
    bottleneck_link: str | None
    bottleneck_kind: str | None
    bottleneck_name: str
    src_gpu: str
    dst_gpu: str
    pairs: int

    def describe(self) -> str:
        """``3.1 ms over InfiniBand NDR (link n0-nic0-fabric)``."""
        where = self.bottleneck_name or "-"
        if self.bottleneck_link:
            where += f" (link {self.bottleneck_link})"
        return f"{self.time_ms:.3g} ms over {where}"


def _head_span(rank: int, tp: int, heads: int) -> tuple[float, float]:
    """KV heads ``[lo, hi)`` held by TP rank ``rank``: a 1/tp share when tp ≤ heads, else one
    whole head replicated over tp / heads ranks (vLLM / SGLang / TensorRT-LLM all replicate)."""
    if tp <= heads:
        return rank * heads / tp, (rank + 1) * heads / tp
    h = rank * heads // tp
    return float(h), float(h + 1)


def _layer_spans(stage_layers: tuple[int, ...]) -> list[tuple[int, int]]:
    out, first = [], 0
    for n in stage_layers:
        out.append((first, first + n))
        first += n
    return out


def request_flows(
    model: LLMArchitecture,
    kv_dtype: DType,
    isl: float,
    prefill: list[list[str]],
    decode: list[list[str]],
    prefill_layers: tuple[int, ...],
    decode_layers: tuple[int, ...],
) -> dict[tuple[str, str], float]:
    """Bytes of every (prefill GPU → decode GPU) flow of one request.

    ``prefill[s][t]`` / ``decode[s][t]`` are the GPU ids of stage ``s``, TP rank ``t`` of one worker.
    """
    plan = _flow_plan(model, kv_dtype, isl, len(prefill[0]), len(decode[0]), prefill_layers,
                      decode_layers)
    return _flows_on(plan, prefill, decode)


#: One flow of a request by position: (prefill stage, prefill TP rank, decode stage, decode TP rank, bytes).
_Plan = list[tuple[int, int, int, int, float]]


def _flow_plan(
    model: LLMArchitecture,
    kv_dtype: DType,
    isl: float,
    tp_p: int,
    tp_d: int,
    prefill_layers: tuple[int, ...],
    decode_layers: tuple[int, ...],
) -> _Plan:
    """The flows of :func:`request_flows` by stage and TP rank, before they are put on GPUs (the
    same for every pair of workers of two pool layouts)."""
    heads = model.kv_heads_stored
    per_head_layer_token = model.kv_elements_per_token_per_layer * DType(kv_dtype).bytes / heads
    p_heads = [_head_span(t, tp_p, heads) for t in range(tp_p)]
    plan: _Plan = []
    for sd, (d_lo, d_hi) in enumerate(_layer_spans(decode_layers)):
        for sp, (p_lo, p_hi) in enumerate(_layer_spans(prefill_layers)):
            layers = min(d_hi, p_hi) - max(d_lo, p_lo)
            if layers <= 0:
                continue
            for td in range(tp_d):
                h_lo, h_hi = _head_span(td, tp_d, heads)
                holders: dict[tuple[float, float], list[int]] = {}
                for tpr, span in enumerate(p_heads):
                    if min(span[1], h_hi) > max(span[0], h_lo):
                        holders.setdefault(span, []).append(tpr)
                for span, ranks in holders.items():
                    src_rank = ranks[td % len(ranks)]  # spread replicated heads over their holders
                    share = min(span[1], h_hi) - max(span[0], h_lo)
                    plan.append((sp, src_rank, sd, td, share * layers * per_head_layer_token * isl))
    return plan


def _flows_on(
    plan: _Plan, prefill: list[list[str]], decode: list[list[str]]
) -> dict[tuple[str, str], float]:
    flows: dict[tuple[str, str], float] = {}
    for sp, src_rank, sd, td, nbytes in plan:
        key = (prefill[sp][src_rank], decode[sd][td])
        flows[key] = flows.get(key, 0.0) + nbytes
    return flows


def _flow_times(
    topo: Topology, flows: dict[tuple[str, str], float], known: dict | None = None
) -> list[tuple[float, float, float, int | None, str, str]]:
    """(time ms, bandwidth GB/s, latency µs, bottleneck link index, src, dst) of every flow, links
    shared equally by the flows crossing them in the same direction. ``known``: paths of GPU pairs
    already routed on ``topo`` (filled in)."""
    known = {} if known is None else known
    paths = {}
    for k in flows:
        hit = known.get(k)
        if hit is None:
            hit = known[k] = topo.path(*k)
        paths[k] = hit
    load: dict[tuple[int, bool], int] = {}
    for p in paths.values():
        for li, f in zip(p.link_index, p.forward, strict=True):
            load[(li, f)] = load.get((li, f), 0) + 1
    out = []
    for (a, b), nbytes in flows.items():
        p = paths[(a, b)]
        bw, where = float("inf"), None
        for li, f in zip(p.link_index, p.forward, strict=True):
            share = topo.link_bw[li] / load[(li, f)]
            if share < bw:
                bw, where = share, li
        ms = p.latency_us / 1e3 + (nbytes / (bw * 1e9) * 1e3 if bw < float("inf") else 0.0)
        out.append((ms, bw, p.latency_us, where, a, b))
    return out


#: The key under which a caller's ``cache`` keeps the routed paths of GPU pairs.
_PATHS = ("paths",)
#: The key prefix under which it keeps the flow plans of pool-layout pairs.
_PLAN = "plan"
#: The key prefix under which it keeps the cost of a worker pair's pattern of GPUs.
_PATTERN = "pattern"
#: The key under which it keeps the topology's :class:`~studio.engine.fabric.symmetry.Symmetry`.
_SYMMETRY = ("symmetry",)
#: A flow's (time ms, bandwidth GB/s, latency µs, bottleneck link index, src, dst).
_Slow = tuple[float, float, float, int | None, str, str]


def _pair_cost(
    topo: Topology,
    plan: _Plan,
    plan_key: tuple,
    prefill: list[list[str]],
    decode: list[list[str]],
    cache: dict | None,
) -> tuple[tuple[float, int, float], _Slow]:
    """((bytes, flows, largest flow), slowest flow) of one worker pair's request.

    With a ``cache``, worker pairs whose GPUs form the same pattern on alike blocks of the link
    graph (:mod:`studio.engine.fabric.symmetry`: the nodes of one template behind the same
    switches, at the same relative positions) are costed once: the slowest flow is found on the
    first such pair and renamed onto the others, link and GPUs, which is what costing each would
    find (the renaming maps the graph onto itself and keeps every tie-break)."""
    if cache is None:
        flows = _flows_on(plan, prefill, decode)
        return _stats(flows), max(_flow_times(topo, flows), key=lambda f: f[0])
    sym = cache.get(_SYMMETRY)
    if sym is None:
        sym = cache[_SYMMETRY] = symmetry_of(topo)
    pattern, blocks = sym.pair(
        tuple(g for stage in prefill for g in stage), tuple(g for stage in decode for g in stage)
    )
    key = (_PATTERN, plan_key, pattern)
    hit = cache.get(key)
    if hit is None:
        flows = _flows_on(plan, prefill, decode)
        slow = max(_flow_times(topo, flows, cache.setdefault(_PATHS, {})), key=lambda f: f[0])
        li = slow[3]
        hit = cache[key] = (
            _stats(flows),
            slow[:3],
            None if li is None else sym.link_place(blocks, li),
            sym.gpu_place(blocks, slow[4]),
            sym.gpu_place(blocks, slow[5]),
        )
    stats, head, link, src, dst = hit
    return stats, (
        *head,
        None if link is None else sym.link_at(blocks, link),
        sym.gpu_at(blocks, src),
        sym.gpu_at(blocks, dst),
    )


def _stats(flows: dict[tuple[str, str], float]) -> tuple[float, int, float]:
    values = flows.values()
    return sum(values), len(flows), max(values)


def _pairs(x: int, y: int) -> list[tuple[int, int]]:
    if x * y <= MAX_PAIRS:
        return [(i, j) for i in range(x) for j in range(y)]
    xs = sorted({0, x // 2, x - 1})
    ys = sorted({0, y // 2, y - 1})
    return [(i, j) for i in xs for j in ys]


def kv_transfer(
    topo: Topology,
    model: LLMArchitecture,
    kv_dtype: DType,
    isl: float,
    prefill_groups: Sequence[list[list[str]]],
    decode_groups: Sequence[list[list[str]]],
    prefill_layers: tuple[int, ...],
    decode_layers: tuple[int, ...],
    cache: dict | None = None,
) -> KvTransfer:
    """Cost the KV transfer of one request between the pools.

    ``*_groups[worker][stage] -> [gpu of tp rank 0, ...]`` (as
    :meth:`studio.core.layout.Layout.gpu_groups` returns them). ``cache`` (a dict the caller keeps
    for one model, KV format and ISL) holds the flows and times of worker pairs already costed.
    """
    times: list[float] = []
    worst: _Slow | None = None
    first: tuple[float, int, float] | None = None
    pairs = _pairs(len(prefill_groups), len(decode_groups))
    plan_key = (_PLAN, len(prefill_groups[0][0]), len(decode_groups[0][0]), prefill_layers,
                decode_layers)
    plan = cache.get(plan_key) if cache is not None else None
    if plan is None:
        plan = _flow_plan(model, kv_dtype, isl, plan_key[1], plan_key[2], prefill_layers,
                          decode_layers)
        if cache is not None:
            cache[plan_key] = plan
    for i, j in pairs:
        stats, slow = _pair_cost(topo, plan, plan_key, prefill_groups[i], decode_groups[j], cache)
        if first is None:
            first = stats
        times.append(slow[0])
        if worst is None or slow[0] > worst[0]:
            worst = slow
    assert worst is not None
    li = worst[3]
    link = topo.link_ids[li] if li is not None else None
    kind = topo.link_kind[li] if li is not None else None
    name = topo.cluster.link_kinds[kind].name if kind in topo.cluster.link_kinds else (kind or "")
    assert first is not None
    return KvTransfer(
        bytes_per_request=first[0],
        flows=first[1],
        bytes_per_flow=first[2],
        time_ms=sum(times) / len(times),
        worst_ms=worst[0],
        bandwidth_gbps=worst[1],
        latency_us=worst[2],
        bottleneck_link=link,
        bottleneck_kind=kind,
        bottleneck_name=name,
        src_gpu=worst[4],
        dst_gpu=worst[5],
        pairs=len(pairs),
    )
