"""What is served (workload) and how the engine is configured (serving config)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from studio.core.architecture import ModulePrecision
from studio.core.base import Frozen
from studio.core.precision import DType

Batch = int | Literal["auto"]


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
