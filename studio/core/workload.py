"""What is served (workload) and how the engine is configured (serving config)."""

from __future__ import annotations

import math
from typing import Literal

from pydantic import Field, field_validator, model_validator

from studio.core.architecture import ModulePrecision
from studio.core.base import Frozen
from studio.core.precision import DType

Batch = int | Literal["auto"]

#: Most requests a load description may name (the simulation's cost grows with it).
MAX_REQUESTS = 200_000


class LengthDistribution(Frozen):
    """How request lengths spread around the workload's mean (``isl`` / ``osl``).

    ``fixed``: every request has the mean length (benchmark tools' synthetic data);
    ``uniform``: uniform on mean × (1 ± spread); ``histogram``: ``(length, weight)`` pairs, the
    mean being the histogram's own (read from a file by :mod:`studio.io.lengths`).
    """

    kind: Literal["fixed", "uniform", "histogram"] = "fixed"
    spread: float = Field(0.0, ge=0.0, lt=1.0, description="relative half-width for 'uniform'")
    histogram: tuple[tuple[int, float], ...] | None = Field(
        None, description="(length in tokens, weight) pairs for 'histogram'"
    )

    @model_validator(mode="after")
    def _check(self) -> LengthDistribution:
        if self.kind == "histogram":
            if not self.histogram:
                raise ValueError("kind 'histogram' needs a non-empty 'histogram' of (length, weight) pairs")
            if len(self.histogram) > 100_000:
                raise ValueError("histogram: at most 100000 bins")
            for length, weight in self.histogram:
                if not 1 <= length <= 10_000_000:
                    raise ValueError(f"histogram: length {length} is outside 1..10000000 tokens")
                if not (weight >= 0 and math.isfinite(weight)):
                    raise ValueError(f"histogram: weight {weight} of length {length} must be a finite number ≥ 0")
            if sum(w for _, w in self.histogram) <= 0:
                raise ValueError("histogram: the weights add up to 0")
        elif self.histogram is not None:
            raise ValueError(f"'histogram' is only read when kind is 'histogram' (kind is '{self.kind}')")
        return self

    def mean(self, nominal: int) -> float:
        """Mean length in tokens (``nominal`` unless a histogram says otherwise)."""
        if self.kind == "histogram" and self.histogram:
            total = sum(w for _, w in self.histogram)
            return sum(n * w for n, w in self.histogram) / total
        return float(nominal)


class Load(Frozen):
    """The traffic a replica set is served at.

    * ``concurrency``: a closed loop of ``concurrency`` users (GenAI-Perf / NIM ``--concurrency``,
      vLLM ``bench serve --max-concurrency``); ``None`` = the workload's batch.
    * ``rate``: an open loop of ``rate_per_s`` requests per second over all replicas, Poisson or
      evenly spaced arrivals (vLLM ``bench serve --request-rate``).
    * ``offline``: ``num_requests`` requests all queued at t = 0 (``trtllm-bench throughput``).
    """

    mode: Literal["concurrency", "rate", "offline"] = "concurrency"
    rate_per_s: float | None = Field(None, gt=0, le=1e7, description="requests per second (mode 'rate')")
    arrival: Literal["poisson", "constant"] = "poisson"
    concurrency: int | None = Field(None, ge=1, le=1_000_000, description="users in the closed loop")
    num_requests: int = Field(1000, ge=1, le=MAX_REQUESTS, description="requests simulated / benchmarked")
    isl_dist: LengthDistribution = LengthDistribution()
    osl_dist: LengthDistribution = LengthDistribution()
    seed: int = Field(0, ge=0, le=2**31 - 1, description="random seed of the simulation")

    @model_validator(mode="after")
    def _check(self) -> Load:
        if self.mode == "rate" and self.rate_per_s is None:
            raise ValueError("mode 'rate' needs rate_per_s (requests per second, > 0)")
        if self.rate_per_s is not None and not math.isfinite(self.rate_per_s):
            raise ValueError("rate_per_s must be a finite number of requests per second")
        return self


class Workload(Frozen):
    """Traffic shape and service targets.

    ``batch`` is the number of sequences decoded together per replica (concurrency);
    ``"auto"`` means the largest concurrency the KV cache holds, capped by ``max_batch``.
    """

    isl: int = Field(1024, ge=1, le=10_000_000, description="input (prompt) tokens")
    osl: int = Field(256, ge=1, le=10_000_000, description="output tokens")
    batch: Batch = "auto"
    max_batch: int = Field(256, ge=1, le=1_000_000)
    ttft_ms: float | None = Field(None, gt=0, le=1e9, description="time-to-first-token target")
    tpot_ms: float | None = Field(None, gt=0, le=1e9, description="time-per-output-token target")
    interactive: bool = Field(True, description="interactive (latency-bound) vs batch serving")
    load: Load = Field(default_factory=Load, description="the traffic it is served at")

    @field_validator("batch")
    @classmethod
    def _batch(cls, v: Batch) -> Batch:
        if isinstance(v, int) and not (1 <= v <= 1_000_000):
            raise ValueError("batch must be 'auto' or an integer 1..1000000")
        return v


class ServingConfig(Frozen):
    """Engine-side choices: precision, memory fraction, runtime, price."""

    weight_dtype: DType | None = Field(
        None, description="quantise linear layers to this format; None = the checkpoint's own"
    )
    precision: ModulePrecision | None = Field(
        None, description="explicit per-module precision; wins over weight_dtype"
    )
    kv_dtype: DType = DType.BF16
    gpu_memory_utilization: float = Field(0.90, gt=0.05, le=1.0)
    runtime: Literal["vllm", "trtllm", "sglang"] = "vllm"
    price_per_gpu_hour: float | None = Field(
        None, ge=0, le=10_000, description="USD; None = each GPU spec's own price"
    )
    calibration: str | None = Field(None, description="name of the calibration profile in use")
    max_num_batched_tokens: int | None = Field(
        None, ge=16, le=10_000_000,
        description="token budget of one scheduler iteration (vLLM max_num_batched_tokens, "
        "TensorRT-LLM max_num_tokens, SGLang chunked_prefill_size); None = the engine's default",
    )

    @field_validator("kv_dtype")
    @classmethod
    def _kv(cls, v: DType) -> DType:
        if v not in (DType.BF16, DType.FP16, DType.FP8):
            raise ValueError("kv_dtype must be one of bf16, fp16, fp8")
        return v

    def effective_precision(self, checkpoint: ModulePrecision) -> ModulePrecision:
        """Per-module precision actually served."""
        if self.precision is not None:
            return self.precision
        if self.weight_dtype is not None:
            return ModulePrecision.quantized_linear(self.weight_dtype)
        return checkpoint
