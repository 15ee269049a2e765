"""What is served (workload) and how the engine is configured (serving config)."""

from __future__ import annotations

import math
from typing import Literal

from pydantic import Field, StrictFloat, StrictInt, field_validator, model_validator

from studio.core.architecture import LLMArchitecture, ModulePrecision
from studio.core.base import Frozen
from studio.core.engine_features import EngineFeatures
from studio.core.precision import DType
from studio.core.settings.reuse import KVTiers, Reuse

Batch = int | Literal["auto"]

#: Most requests a load description may name (the simulation's cost grows with it).
MAX_REQUESTS = 200_000


#: Largest weight of one histogram bin: weights are relative (a count of requests, a share), and
#: 100,000 bins of at most 10^15 add up to 10^20, far from a float's overflow at ~1.8e308.
MAX_HISTOGRAM_WEIGHT = 1e15


class LengthDistribution(Frozen):
    """How request lengths spread around the workload's mean (``isl`` / ``osl``).

    ``fixed``: every request has the mean length (benchmark tools' synthetic data);
    ``uniform``: uniform on mean × (1 ± spread); ``histogram``: ``(length, weight)`` pairs, the
    mean being the histogram's own (read from a file by :mod:`studio.io.importers.lengths`).
    """

    kind: Literal["fixed", "uniform", "histogram"] = "fixed"
    spread: float = Field(0.0, ge=0.0, lt=1.0, description="relative half-width for 'uniform'")
    histogram: tuple[tuple[StrictInt, StrictFloat], ...] | None = Field(
        None, description="(length in tokens, weight) pairs for 'histogram' (numbers, not strings)"
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
                if not (0 <= weight <= MAX_HISTOGRAM_WEIGHT):
                    raise ValueError(
                        f"histogram: weight {weight:g} of length {length} must be a number from 0 to "
                        f"{MAX_HISTOGRAM_WEIGHT:.0e} (weights are relative; scale them down)"
                    )
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
    reuse: Reuse = Field(default_factory=Reuse, description="prompt reuse (system prompt, turns, documents)")

    @field_validator("batch")
    @classmethod
    def _batch(cls, v: Batch) -> Batch:
        if isinstance(v, int) and not (1 <= v <= 1_000_000):
            raise ValueError("batch must be 'auto' or an integer 1..1000000")
        return v

    @model_validator(mode="after")
    def _reuse_fits(self) -> Workload:
        self.reuse.check_against(self.isl)
        return self


#: Draft kinds of speculative decoding: a separate draft model, an EAGLE-1/2 or EAGLE-3 head, the
#: model's own multi-token-prediction layers, or n-gram (prompt lookup) matching.
SpecMethod = Literal["draft", "eagle", "eagle3", "mtp", "ngram"]
SPEC_METHODS: tuple[str, ...] = ("draft", "eagle", "eagle3", "mtp", "ngram")


class SpeculativeConfig(Frozen):
    """Speculative decoding: a drafter proposes ``num_tokens`` tokens per step and the model
    verifies them in one forward pass over ``num_tokens + 1`` tokens per sequence.

    The acceptance is given one way at most: ``acceptance`` (the chance that each drafted token is
    accepted given the one before it was), ``acceptance_by_position`` (the share of steps whose
    i-th drafted token is accepted, as vLLM reports "acceptance at token i"; positions past the
    list continue with the ratio of its last two) or ``accepted_length`` (mean tokens
    emitted per verification step, the bonus token included, as vLLM and SGLang report it). None of
    them = the published default of the method (``presets/speculative.json``).
    """

    method: SpecMethod
    num_tokens: int = Field(3, ge=1, le=16, description="tokens the drafter proposes per step (k)")
    acceptance: float | None = Field(None, gt=0, le=1, description="per-token acceptance rate α, in (0, 1]")
    acceptance_by_position: tuple[float, ...] | None = Field(
        None, min_length=1, max_length=16, description="acceptance rate of each draft position, each in (0, 1]"
    )
    accepted_length: float | None = Field(
        None, ge=1, le=17, description="mean tokens per verification step, bonus token included"
    )
    draft_model: str | None = Field(None, max_length=200, description="preset id of the draft model (method 'draft')")
    draft: LLMArchitecture | None = Field(None, description="architecture of the draft model (method 'draft')")
    draft_checkpoint: str | None = Field(
        None, max_length=500, description="Hugging Face id or path of the draft weights / EAGLE head, for exports"
    )
    ngram_max: int = Field(4, ge=1, le=64, description="longest n-gram matched in the prompt (method 'ngram')")
    ngram_min: int = Field(1, ge=1, le=64, description="shortest n-gram matched (method 'ngram')")

    @field_validator("acceptance_by_position")
    @classmethod
    def _positions(cls, v: tuple[float, ...] | None) -> tuple[float, ...] | None:
        if v is not None:
            for i, a in enumerate(v):
                if not (0.0 < a <= 1.0):
                    raise ValueError(f"position {i + 1}: acceptance {a:g} is outside (0, 1]")
                if i and a > v[i - 1]:
                    raise ValueError(
                        f"position {i + 1}: acceptance {a:g} exceeds position {i}'s {v[i - 1]:g} (a token is "
                        "only accepted when the ones before it were, so the rates cannot grow)"
                    )
        return v

    @model_validator(mode="after")
    def _check(self) -> SpeculativeConfig:
        given = [n for n in ("acceptance", "acceptance_by_position", "accepted_length") if getattr(self, n) is not None]
        if len(given) > 1:
            raise ValueError(f"give the acceptance one way, not {' and '.join(given)}")
        if self.accepted_length is not None and self.accepted_length > self.num_tokens + 1:
            raise ValueError(
                f"accepted_length {self.accepted_length:g} exceeds num_tokens + 1 = {self.num_tokens + 1} "
                "(at most every drafted token plus the bonus token)"
            )
        if self.method == "draft":
            if self.draft is None:
                raise ValueError("method 'draft' needs the draft model (draft_model: a model preset id)")
        elif self.draft is not None or self.draft_model is not None:
            raise ValueError(f"draft_model is only read by method 'draft' (method is '{self.method}')")
        if self.ngram_min > self.ngram_max:
            raise ValueError(f"ngram_min ({self.ngram_min}) exceeds ngram_max ({self.ngram_max})")
        return self


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
    runtime_version: str | None = Field(
        None, max_length=40,
        description="the engine's version (e.g. 0.6.3); picks its profile in presets/engines/<runtime>.json; "
        "None = the newest profile",
    )
    price_per_gpu_hour: float | None = Field(
        None, ge=0, le=10_000, description="USD; None = each GPU spec's own price"
    )
    calibration: str | None = Field(None, description="name of the calibration profile in use")
    max_num_batched_tokens: int | None = Field(
        None, ge=16, le=10_000_000,
        description="token budget of one scheduler iteration (vLLM max_num_batched_tokens, "
        "TensorRT-LLM max_num_tokens, SGLang chunked_prefill_size); None = the engine's default",
    )
    speculative: SpeculativeConfig | None = Field(None, description="speculative decoding; None = off")
    features: EngineFeatures = Field(
        default_factory=EngineFeatures,
        description="engine features beside the layout (EPLB, dual-batch overlap, all-to-all backend, ...)",
    )
    kv_tiers: KVTiers = Field(
        default_factory=KVTiers, description="prefix caching and the KV tiers beyond HBM (host DRAM, NVMe)"
    )

    @field_validator("runtime_version")
    @classmethod
    def _runtime_version(cls, v: str | None) -> str | None:
        if v is None:
            return None
        v = v.strip()
        if not v:
            return None
        head = v.lstrip("vV")
        if not head[:1].isdigit() or any(not (ch.isalnum() or ch in ".+-") for ch in head):
            raise ValueError(f"'{v}' is not an engine version; give numbers with dots such as 0.6.3 or 1.0.0rc1")
        return v

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
