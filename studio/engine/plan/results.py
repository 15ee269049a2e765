"""Frozen results of the cost engine. Every headline figure carries an :class:`Explanation`.

These types are the contract between the engine and everything that shows or exports a plan
(GUI, CLI, exporters, report). Each is a frozen dataclass (:func:`studio.engine.step.records.frozen_result`:
the same behaviour without compiling its methods at import). Times are in milliseconds unless the name says ``_us``; memory in
bytes unless the name says otherwise.
"""

from __future__ import annotations

from dataclasses import field
from typing import TYPE_CHECKING, Any, Literal

from studio.core.layout import Layout, RankCoords
from studio.core.units import GIB
from studio.engine.step.records import frozen_result

if TYPE_CHECKING:
    from studio.engine.fabric.comm import Algo
    from studio.engine.plan.views import Explanation, Timeline

Severity = Literal["error", "warning", "info"]

@frozen_result
class LoadSummary:
    """The traffic a plan's latency and throughput figures assume, and how the replicas run under it.

    Means of the closed-form steady state (:mod:`studio.engine.serving.load`); percentiles come from the
    request simulation (:mod:`studio.engine.serving.simulate`, ``layout-studio simulate``).
    """

    mode: str  # "concurrency", "rate" or "offline"
    definition: str  # which benchmark tool's definitions the figures follow
    users: float  # requests in the system per replica (running + waiting), mean
    running: float  # sequences holding KV per replica
    decode_seqs: float  # sequences decoding in a mean iteration, per replica
    prefill_tokens_per_iteration: float
    iteration_ms: float
    token_budget: int
    budget_bound: bool  # the token budget, not the KV cache or max_batch, limits decoding
    request_rate_per_s: float  # all replicas
    saturation_rate_per_s: float  # all replicas: the highest rate with a steady state
    saturated: bool  # an open loop at or above saturation: the queue grows without bound
    note: str = ""
    asked_rate_per_s: float | None = None  # an open loop: the rate asked for (all replicas)
    # an open loop: share of arrivals finding the engine idle, their mean wait for the iteration in
    # progress (ms) and the prompts in a busy arrival's first iteration (studio.engine.serving.load.first_token)
    arrival_idle_share: float | None = None
    arrival_wait_ms: float | None = None
    arrival_prompts: float | None = None


#: Figures a plan shows that a status can void (the views' card keys; ``request`` is the end-to-end time).
LATENCY_FIGURES: tuple[str, ...] = ("ttft", "tpot", "request")


@frozen_result
class PlanStatus:
    """What a plan's figures may claim: the one rule every view (cards, status bar, CLI table and
    JSON, report) reads instead of deciding for itself.

    ``code`` is stable: ``OK``; ``SATURATED`` (an open loop at or above the saturation rate: the
    queue grows without bound, so TTFT and the end-to-end time have no value); ``DOES_NOT_FIT``
    (the layout cannot run: no latency, throughput or cost); ``NOT_COMPUTED`` (the engine refused
    the project, :func:`not_computed`). ``unmet`` names the figures that cannot be met; a view
    shows ``headline`` in their place.
    """

    code: str
    headline: str  # "" for OK, else what a card shows instead of a value ("saturated at 2.56 req/s")
    reason: str  # one sentence: why
    unmet: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.code == "OK"

    def shows(self, figure: str) -> bool:
        """Whether figure ``figure`` (``ttft``, ``tpot``, ``request``, ``throughput``, ``cost``) has a value."""
        return figure not in self.unmet

    def value(self, figure: str, v: float) -> float | None:
        """``v``, or None when the status voids ``figure`` (the JSON's null)."""
        return v if self.shows(figure) else None

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code, "headline": self.headline, "reason": self.reason, "unmet": list(self.unmet)}


#: Every figure a plan that does not run, or was not computed, cannot show.
_ALL_FIGURES = (*LATENCY_FIGURES, "throughput", "cost")


def plan_status(fits: bool, fit_reason: str, saturated: bool = False, saturation_rate_per_s: float = 0.0,
                rate_per_s: float | None = None) -> PlanStatus:
    """The status of a plan from what the engine found (the only place the rule is written).

    Parameters
    ----------
    fits:
        Whether the layout runs (weights and one sequence's KV cache fit, the batch fits).
    saturated:
        An open loop at or above ``saturation_rate_per_s`` (all replicas); ``rate_per_s`` is the
        rate asked for.
    """
    if not fits:
        return PlanStatus("DOES_NOT_FIT", "does not fit", fit_reason, _ALL_FIGURES)
    if saturated:
        asked = f"{rate_per_s:.3g} req/s is" if rate_per_s is not None else "the load is"
        return PlanStatus(
            "SATURATED", f"saturated at {saturation_rate_per_s:.3g} req/s",
            f"{asked} at or above the saturation rate {saturation_rate_per_s:.3g} req/s: the queue grows "
            "without bound, so TTFT and the end-to-end time have no steady state; TPOT and throughput "
            "are those at saturation",
            ("ttft", "request"),
        )
    return PlanStatus("OK", "", fit_reason)


def not_computed(reason: str) -> PlanStatus:
    """The status of a project the engine refused (``reason``: its message, naming the GPU or link)."""
    return PlanStatus("NOT_COMPUTED", "not computed", reason, _ALL_FIGURES)


@frozen_result
class PlanWarning:
    """A rule that fired. ``code`` is stable (e.g. ``TP_CROSSES_NODE``); ``fix`` is one line."""

    code: str
    severity: Severity
    message: str
    fix: str
    gpus: tuple[str, ...] = ()
    links: tuple[str, ...] = ()


@frozen_result
class GpuMemory:
    """Memory of one GPU (bytes)."""

    gpu_id: str
    rank: int
    stage: int
    tp_rank: int
    dp_index: int
    capacity: float
    usable: float  # capacity × gpu_memory_utilization
    weights: float
    kv_cache: float  # KV pool reserved for the batch (or the whole free pool for capacity)
    activations: float
    overhead: float
    weights_by_module: dict[str, float] = field(default_factory=dict)

    @property
    def total(self) -> float:
        return self.weights + self.kv_cache + self.activations + self.overhead

    @property
    def free(self) -> float:
        return self.capacity - self.total


@frozen_result
class CommCost:
    """One collective or transfer, costed over the links that join its GPUs."""

    kind: Literal["allreduce", "p2p", "alltoall", "cp"]
    phase: Literal["prefill", "decode"]
    group: tuple[str, ...]
    message_bytes: float
    time_us: float
    algorithm: str
    bandwidth_gbps: float  # effective bandwidth of the bottleneck
    latency_us: float
    bottleneck_link: str | None  # link id of the slowest hop
    bottleneck_kind: str | None  # link kind id of the slowest hop
    explanation: str = ""

    @classmethod
    def of(cls, kind: str, phase: str, group: tuple[str, ...], size: float, algo: Algo) -> CommCost:
        """The cost of moving ``size`` bytes with the algorithm ``algo`` the runtime picked."""
        return cls(
            kind=kind,  # type: ignore[arg-type]  # callers pass one of the kinds above
            phase=phase,  # type: ignore[arg-type]  # callers pass 'prefill' or 'decode'
            group=group,
            message_bytes=size,
            time_us=algo.alpha_us + size * algo.us_per_byte,
            algorithm=algo.name,
            bandwidth_gbps=algo.bandwidth_gbps,
            latency_us=algo.alpha_us,
            bottleneck_link=algo.bottleneck_link,
            bottleneck_kind=algo.bottleneck_kind,
            explanation=algo.note,
        )


@frozen_result
class StageResult:
    """Per pipeline stage, for one micro-batch, in ms."""

    stage: int
    layers: int
    gpus: tuple[str, ...]
    prefill_compute_ms: float
    prefill_allreduce_ms: float
    decode_compute_ms: float
    decode_allreduce_ms: float
    p2p_prefill_ms: float  # to the next stage (0 on the last)
    p2p_decode_ms: float
    prefill_cp_ms: float = 0.0  # context-parallel communication of the stage (0 without CP)
    decode_cp_ms: float = 0.0


@frozen_result
class PlanResult:
    """Everything the engine knows about one layout of one project."""

    layout: Layout  # resolved: placement filled in
    fits: bool
    fit_reason: str
    batch: int  # concurrent sequences per replica
    batch_auto: bool
    memory: tuple[GpuMemory, ...]
    kv_bytes_per_token_per_gpu: float  # most loaded GPU, window-capped average at isl+osl
    kv_bytes_per_token_card: float  # the concept card's formula (whole model)
    kv_bytes_per_token_model: float  # GQA/MLA-aware, whole model
    kv_capacity_tokens: int  # per replica
    max_concurrent_sequences: int  # per replica, at isl+osl
    allreduce_us_per_layer_prefill: float
    allreduce_us_per_layer_decode: float
    p2p_us_per_boundary_prefill: float
    p2p_us_per_boundary_decode: float
    bubble_fraction: float
    micro_batches: int
    ttft_ms: float
    tpot_ms: float
    request_latency_ms: float
    output_tokens_per_s: float  # all replicas
    output_tokens_per_s_per_gpu: float
    tokens_per_s_per_user: float
    usd_per_hour: float
    usd_per_million_output_tokens: float
    stages: tuple[StageResult, ...]
    comm: tuple[CommCost, ...]
    timelines: dict[str, Timeline]
    warnings: tuple[PlanWarning, ...]
    explanations: dict[str, Explanation]
    assumptions: tuple[str, ...] = ()
    calibration: str | None = None
    load: LoadSummary | None = None
    alltoall_us_per_layer_prefill: float = 0.0  # one EP all-to-all of a MoE layer (0 without EP)
    alltoall_us_per_layer_decode: float = 0.0
    cp_us_per_layer_prefill: float = 0.0  # context-parallel communication of one layer (0 without CP)
    cp_us_per_layer_decode: float = 0.0
    max_context_tokens: int = 0  # longest single sequence the KV cache of a replica holds
    #: GPU id -> where its rank sits (replica, stage, TP rank, TP group, expert group), from the
    #: resolved placement: the placement overlay reads it instead of working ranks out itself.
    ranks: dict[str, RankCoords] = field(default_factory=dict)
    #: Links that are the bottleneck hop of a TP all-reduce and are not scale-up links, and the
    #: GPUs of those TP groups (the canvas marks them).
    slow_links: frozenset[str] = frozenset()
    slow_gpus: frozenset[str] = frozenset()
    #: Drawn GPUs the layout leaves unused (its placement names fewer GPUs than the cluster has):
    #: the canvas hatches them, the metrics and the status bar count them.
    idle_gpus: tuple[str, ...] = ()
    #: Prefix caching and the KV tiers (hit rate, hits per tier, prompt tokens prefilled, each tier's
    #: KV capacity in tokens); None when prefix caching is off or nothing in the prompt repeats.
    prefix_cache: dict[str, float] | None = None

    @property
    def gpus(self) -> int:
        return self.layout.world_size

    @property
    def peak_memory(self) -> GpuMemory:
        """The most loaded GPU."""
        return max(self.memory, key=lambda m: m.total)

    @property
    def status(self) -> PlanStatus:
        """What the figures may claim (:func:`plan_status`): every view reads this."""
        ld = self.load
        saturated = ld is not None and ld.saturated
        asked = ld.asked_rate_per_s if ld is not None and ld.mode == "rate" else None
        return plan_status(self.fits, self.fit_reason, saturated, ld.saturation_rate_per_s if ld else 0.0, asked)

    def to_json(self) -> dict[str, Any]:
        """The CLI's ``plan --json`` object (a stable contract; keys only get added)."""
        m = self.peak_memory
        status = self.status
        return {
            "status": status.to_json(),
            "layout": {
                "tp": self.layout.tp,
                "pp": self.layout.pp,
                "ep": self.layout.ep,
                "dp": self.layout.dp,
                "gpus": self.layout.world_size,
                "micro_batches": self.layout.micro_batches,
                "cp": self.layout.cp,
                "cp_mode": self.layout.cp_mode,
                "layers_per_stage": [s.layers for s in self.stages],
                "placement": list(self.layout.placement or ()),
                "idle_gpus": list(self.idle_gpus),
            },
            "fits": self.fits,
            "fit_reason": self.fit_reason,
            "batch": self.batch,
            "batch_auto": self.batch_auto,
            "memory": {
                "per_gpu_gib": {
                    "gpu": m.gpu_id,
                    "weights": m.weights / GIB,
                    "kv_cache": m.kv_cache / GIB,
                    "activations": m.activations / GIB,
                    "overhead": m.overhead / GIB,
                    "total": m.total / GIB,
                    "capacity": m.capacity / GIB,
                    "usable": m.usable / GIB,
                },
                "gpus": [
                    {
                        "gpu": g.gpu_id,
                        "rank": g.rank,
                        "stage": g.stage,
                        "weights_gib": g.weights / GIB,
                        "kv_cache_gib": g.kv_cache / GIB,
                        "activations_gib": g.activations / GIB,
                        "overhead_gib": g.overhead / GIB,
                        "total_gib": g.total / GIB,
                        "capacity_gib": g.capacity / GIB,
                    }
                    for g in self.memory
                ],
            },
            "kv_cache": {
                "bytes_per_token_per_gpu": self.kv_bytes_per_token_per_gpu,
                "bytes_per_token_model": self.kv_bytes_per_token_model,
                "bytes_per_token_card_formula": self.kv_bytes_per_token_card,
                "capacity_tokens": self.kv_capacity_tokens,
                "max_concurrent_sequences": self.max_concurrent_sequences,
                "max_context_tokens": self.max_context_tokens,
            },
            "comm": {
                "allreduce_us_per_layer": {
                    "prefill": self.allreduce_us_per_layer_prefill,
                    "decode": self.allreduce_us_per_layer_decode,
                },
                "p2p_us_per_boundary": {
                    "prefill": self.p2p_us_per_boundary_prefill,
                    "decode": self.p2p_us_per_boundary_decode,
                },
                "cp_us_per_layer": {
                    "prefill": self.cp_us_per_layer_prefill,
                    "decode": self.cp_us_per_layer_decode,
                },
                "bottlenecks": sorted({c.bottleneck_kind for c in self.comm if c.bottleneck_kind}),
            },
            "pipeline": {"bubble_fraction": self.bubble_fraction, "micro_batches": self.micro_batches},
            # a figure the status voids is null, and the status says why (``status.reason``)
            "latency_ms": {"ttft": status.value("ttft", self.ttft_ms), "tpot": status.value("tpot", self.tpot_ms),
                           "request": status.value("request", self.request_latency_ms),
                           "null_reason": None if status.ok else status.reason},
            "throughput": {
                "output_tokens_per_s": self.output_tokens_per_s,
                "output_tokens_per_s_per_gpu": self.output_tokens_per_s_per_gpu,
                "tokens_per_s_per_user": status.value("tpot", self.tokens_per_s_per_user),
            },
            "cost": {
                "usd_per_hour": self.usd_per_hour,
                "usd_per_million_output_tokens": status.value("cost", self.usd_per_million_output_tokens),
            },
            "warnings": [
                {"code": w.code, "severity": w.severity, "message": w.message, "fix": w.fix}
                for w in self.warnings
            ],
            "calibration": self.calibration,
            "assumptions": list(self.assumptions),
        } | ({"prefix_cache": dict(self.prefix_cache)} if self.prefix_cache is not None else {})
