"""Frozen results of a disaggregated plan (:func:`studio.engine.disagg.evaluate.evaluate_disaggregated`):
both pools, the KV transfer, latency, throughput and the balance, with ``to_json`` for the CLI."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from studio.core.serving_mode import PoolLayout, ServingMode
from studio.engine.disagg.kv_transfer import KvTransfer
from studio.engine.plan.results import GpuMemory, PlanStatus, plan_status
from studio.engine.plan.views import Explanation


@dataclass(frozen=True, slots=True)
class PoolResult:
    """One pool: its workers, memory and how busy it is at the load."""

    role: str  # "prefill" or "decode"
    pool: PoolLayout
    placement: tuple[str, ...]
    gpu_types: tuple[str, ...]
    weights_gib: float  # per GPU, most loaded stage
    kv_pool_gib: float  # per GPU free for KV, most loaded stage
    kv_sequences: int  # sequences of the pool's length one worker's KV cache holds
    batch: float  # decode: sequences per worker at the load; prefill: prompts per full iteration
    iteration_ms: float  # decode: one decode iteration; prefill: one full prompt iteration
    capacity_rps: float  # whole pool, requests per second at saturation
    utilisation: float  # at the load
    max_running: int = (
        1  # sequences one worker runs at most (decode: its cap; prefill: prompts per iteration)
    )
    #: Every GPU of the pool's first worker (the most loaded replica's per-stage figures), KV cache
    #: reserved for ``max_running`` sequences of the pool's length (prompt; prompt + output).
    memory: tuple[GpuMemory, ...] = ()

    @property
    def peak_memory(self) -> GpuMemory | None:
        """The pool's most loaded GPU (None without memory figures)."""
        return max(self.memory, key=lambda m: m.total, default=None)

    @property
    def gpus(self) -> int:
        return len(self.placement)

    @property
    def label(self) -> str:
        return self.pool.label("P" if self.role == "prefill" else "D")


@dataclass(frozen=True, slots=True)
class Balance:
    """How the pools compare: the ratio that balances them and the best split on the GPUs drawn."""

    ratio: float  # prefill workers per decode worker at which both saturate together
    prefill_worker_rps: float
    decode_worker_rps: float
    best_prefill_workers: int
    best_decode_workers: int
    best_tokens_per_s_per_gpu: float

    def describe(self, x: int, y: int) -> str:
        cur = f"{x}P:{y}D"
        best = f"{self.best_prefill_workers}P:{self.best_decode_workers}D"
        head = (
            f"balanced at x:y ≈ {self.ratio:.2f}:1 (a prefill worker serves {self.prefill_worker_rps:.3g} req/s, "
            f"a decode worker {self.decode_worker_rps:.3g} req/s)"
        )
        if (x, y) == (self.best_prefill_workers, self.best_decode_workers):
            return head + f"; {cur} is the best split on these GPUs"
        return (
            head
            + f"; on these GPUs {best} gives {self.best_tokens_per_s_per_gpu:,.0f} tok/s per GPU at saturation"
        )


@dataclass(frozen=True)
class DisaggResult:
    """Everything the engine knows about one disaggregated plan."""

    mode: ServingMode
    prefill: PoolResult
    decode: PoolResult
    transfer: KvTransfer
    fits: bool
    fit_reason: str
    ttft_ms: float
    tpot_ms: float
    request_latency_ms: float
    prefill_ms: float  # the prefill batch the prompt runs in
    queue_ms: float
    request_rate_per_s: float
    saturation_rate_per_s: float
    limited_by: str  # "prefill", "decode" or "kv-transfer"
    saturated: bool
    output_tokens_per_s: float
    output_tokens_per_s_per_gpu: float
    tokens_per_s_per_user: float
    usd_per_hour: float
    usd_per_million_output_tokens: float
    balance: Balance
    load_mode: str
    load_note: str
    reasons: tuple[str, ...]
    explanations: dict[str, Explanation]
    assumptions: tuple[str, ...]
    unused_gpus: int = 0
    users: float = 0.0  # closed loop: users over both pools (0 for an open loop)
    calibration: str | None = None
    #: The prefill pool's prefix cache per worker (:func:`studio.engine.disagg.reuse.summary`);
    #: None when the project caches no prefix
    prefix_cache: dict[str, float] | None = None

    @property
    def gpus(self) -> int:
        return self.prefill.gpus + self.decode.gpus

    @property
    def label(self) -> str:
        return self.mode.label

    @property
    def status(self) -> PlanStatus:
        """What the figures may claim (:func:`studio.engine.plan.results.plan_status`, the rule of every plan)."""
        # a closed loop beyond the pools' capacity waits a bounded time, which TTFT includes
        open_saturated = self.saturated and self.load_mode == "rate"
        return plan_status(self.fits, self.fit_reason, open_saturated, self.saturation_rate_per_s)

    def why(self) -> str:
        """One line: ``disaggregated 2P(TP4)+1D(TP8): TPOT 31 ms without prefill interference; KV
        transfer 3.1 ms over InfiniBand NDR``."""
        return (
            f"disaggregated {self.label}: TPOT {self.tpot_ms:.3g} ms without prefill interference; "
            f"KV transfer {self.transfer.time_ms:.3g} ms over {self.transfer.bottleneck_name or 'the same GPU'}; "
            f"{self.limited_by} pool limits at {self.saturation_rate_per_s:.3g} req/s"
        )

    def to_json(self) -> dict[str, Any]:
        """The ``plan --disagg --json`` object (a stable contract; keys only get added)."""

        def pool(p: PoolResult) -> dict[str, Any]:
            return {
                "workers": p.pool.workers,
                "tp": p.pool.tp,
                "pp": p.pool.pp,
                "ep": p.pool.ep,
                "gpus": p.gpus,
                "gpu_types": list(p.gpu_types),
                "placement": list(p.placement),
                "label": p.label,
                "weights_gib_per_gpu": p.weights_gib,
                "kv_pool_gib_per_gpu": p.kv_pool_gib,
                "kv_sequences_per_worker": p.kv_sequences,
                "batch_per_worker": p.batch,
                "iteration_ms": p.iteration_ms,
                "capacity_req_per_s": p.capacity_rps,
                "utilisation": p.utilisation,
                "max_running_per_worker": p.max_running,
            }

        t = self.transfer
        status = self.status
        out = {
            "serving_mode": "disaggregated",
            "status": status.to_json(),
            "spec": self.mode.spec(),
            "label": self.label,
            "fits": self.fits,
            "fit_reason": self.fit_reason,
            "prefill": pool(self.prefill),
            "decode": pool(self.decode),
            "kv_transfer": {
                "bytes_per_request": t.bytes_per_request,
                "flows": t.flows,
                "bytes_per_flow": t.bytes_per_flow,
                "time_ms": t.time_ms,
                "worst_ms": t.worst_ms,
                "bandwidth_gbps": t.bandwidth_gbps,
                "latency_us": t.latency_us,
                "bottleneck_link": t.bottleneck_link,
                "bottleneck_kind": t.bottleneck_kind,
                "bottleneck_name": t.bottleneck_name,
                "src_gpu": t.src_gpu,
                "dst_gpu": t.dst_gpu,
                "worker_pairs_costed": t.pairs,
            },
            "latency_ms": {
                "ttft": status.value("ttft", self.ttft_ms),
                "tpot": status.value("tpot", self.tpot_ms),
                "request": status.value("request", self.request_latency_ms),
                "null_reason": None if status.ok else status.reason,
                "ttft_queue": self.queue_ms,
                "ttft_prefill": self.prefill_ms,
                "ttft_kv_transfer": t.time_ms,
            },
            "load": {
                "mode": self.load_mode,
                "request_rate_per_s": self.request_rate_per_s,
                "saturation_rate_per_s": self.saturation_rate_per_s,
                "limited_by": self.limited_by,
                "saturated": self.saturated,
                "note": self.load_note,
                "users": self.users,
            },
            "throughput": {
                "output_tokens_per_s": self.output_tokens_per_s,
                "output_tokens_per_s_per_gpu": self.output_tokens_per_s_per_gpu,
                "tokens_per_s_per_user": self.tokens_per_s_per_user,
            },
            "cost": {
                "usd_per_hour": self.usd_per_hour,
                "usd_per_million_output_tokens": self.usd_per_million_output_tokens,
            },
            "balance": {
                "ratio_prefill_per_decode": self.balance.ratio,
                "prefill_worker_req_per_s": self.balance.prefill_worker_rps,
                "decode_worker_req_per_s": self.balance.decode_worker_rps,
                "best_prefill_workers": self.balance.best_prefill_workers,
                "best_decode_workers": self.balance.best_decode_workers,
                "best_tokens_per_s_per_gpu": self.balance.best_tokens_per_s_per_gpu,
            },
            "gpus": self.gpus,
            "unused_gpus": self.unused_gpus,
            "reasons": list(self.reasons),
            "assumptions": list(self.assumptions),
            "calibration": self.calibration,
        }
        if self.prefix_cache is not None:  # only with prefix caching: the object is unchanged without
            out["prefix_cache"] = dict(self.prefix_cache)
        return out
