"""Numeric formats of weights, activations and KV cache."""

from __future__ import annotations

from enum import Enum


class DType(str, Enum):
    """Storage format of a tensor. ``bytes`` includes block-scale overhead where the format has one."""

    FP32 = "fp32"
    BF16 = "bf16"
    FP16 = "fp16"
    FP8 = "fp8"
    INT8 = "int8"
    INT4 = "int4"
    FP4 = "fp4"

    @property
    def bytes(self) -> float:
        """Bytes per element, scales included (INT4/FP4: 0.5 B + one 8-bit scale per 32 values)."""
        return _BYTES[self]

    @property
    def compute_class(self) -> str:
        """Which tensor-core peak applies: 'bf16', 'fp8' or 'fp4' (int formats use the fp8/fp4 rate
        only if weights are de-quantised into those; weight-only INT4/INT8 compute runs at bf16)."""
        return _COMPUTE[self]


_BYTES = {
    DType.FP32: 4.0,
    DType.BF16: 2.0,
    DType.FP16: 2.0,
    DType.FP8: 1.0,
    DType.INT8: 1.0,
    DType.INT4: 0.5 + 1.0 / 32.0,
    DType.FP4: 0.5 + 1.0 / 32.0,
}
_COMPUTE = {
    DType.FP32: "bf16",
    DType.BF16: "bf16",
    DType.FP16: "bf16",
    DType.FP8: "fp8",
    DType.INT8: "bf16",
    DType.INT4: "bf16",
    DType.FP4: "fp4",
}

WEIGHT_DTYPES = ("bf16", "fp16", "fp8", "int8", "int4", "fp4")
KV_DTYPES = ("bf16", "fp16", "fp8")
