"""Engine constants (efficiencies, overheads, thresholds) loaded from ``presets/engine.json``.

The engine may not import :mod:`studio.io` (layering io → engine → core), so this module carries its
own tiny loader with the same lookup as ``studio.io.presets``: the packaged
``studio/_data/presets/engine.json`` first, else the checkout's ``presets/engine.json``.
"""

from __future__ import annotations

import json
from dataclasses import field, fields, replace
from functools import lru_cache
from typing import Any

from studio.core.errors import StudioError
from studio.core.packaged import packaged_text
from studio.engine.step.records import frozen_result

PerGpu = dict[str, float]
#: Constants the step model no longer has: measured kernel tables (presets/kernels) replaced them.
RETIRED = frozenset({"roofline_blend", "expert_gemm_half_tokens", "gemm_half_tokens", "moe_layer_overhead_us",
                     "moe_overhead_half_tokens", "moe_permute_passes", "attention_efficiency"})


@frozen_result
class Constants:
    """Every tunable figure of the engine; see ``presets/engine.json`` for units and sources."""

    matmul_efficiency_bf16: PerGpu
    matmul_efficiency_fp8: PerGpu
    matmul_efficiency_fp4: PerGpu
    hbm_efficiency: PerGpu
    prefill_efficiency: float
    decode_efficiency: float
    decode_step_overhead_us: float
    decode_step_overhead_sync_us: float
    request_overhead_ms: float
    layer_overhead_us: float
    custom_allreduce_latency_us: float
    custom_allreduce_bw_fraction: float
    custom_allreduce_max_bytes: float
    nccl_base_latency_us: float
    nccl_step_latency_us: float
    nvls_bandwidth_gain: float
    nvls_setup_us: float
    network_collective_floor_us: float
    p2p_base_latency_us: float
    activation_factor: float
    max_num_batched_tokens: float
    logits_bytes_per_token: float
    cuda_context_gib: float
    cuda_graphs_gib: float
    nccl_buffers_gib: float
    activation_bytes: float
    bubble_interactive_max: float
    long_context_tokens: float
    tp_max_without_nvswitch: float
    moe_imbalance_factor: float
    sources: dict[str, str] = field(default_factory=dict, compare=False)

    # ----------------------------------------------------------------- lookups
    @staticmethod
    def per_gpu(table: PerGpu, gpu_type: str) -> float:
        """Value of a per-GPU table for ``gpu_type`` (its ``default`` entry otherwise)."""
        return table.get(gpu_type, table["default"])

    def matmul_efficiency(self, gpu_type: str, compute_class: str) -> float:
        """MAMF fraction of the tensor-core peak for ``compute_class`` ('bf16', 'fp8', 'fp4')."""
        table = {"bf16": self.matmul_efficiency_bf16, "fp8": self.matmul_efficiency_fp8,
                 "fp4": self.matmul_efficiency_fp4}.get(compute_class, self.matmul_efficiency_bf16)
        return self.per_gpu(table, gpu_type)

    def names(self) -> tuple[str, ...]:
        """Names that :meth:`with_overrides` accepts."""
        return tuple(f.name for f in fields(self) if f.name != "sources")

    def with_overrides(self, overrides: dict[str, Any]) -> Constants:
        """A copy with some constants replaced (calibration profiles, tests).

        A per-GPU table accepts a number (replaces every entry) or a dict (merged). Unknown names
        raise :class:`StudioError` listing the allowed ones.
        """
        if not overrides:
            return self
        changes: dict[str, Any] = {}
        allowed = self.names()
        for name, value in overrides.items():
            key, _, gpu = name.partition(":")
            if key in RETIRED:
                raise StudioError(
                    f"calibration efficiency '{name}' was retired: the step model now times GEMMs, attention "
                    "and MoE from measured kernel tables (presets/kernels); remove it from the profile"
                )
            if key not in allowed:
                raise StudioError(
                    f"calibration efficiency '{name}' is not an engine constant; allowed: {', '.join(allowed)}"
                )
            current = changes.get(key, getattr(self, key))
            if isinstance(current, dict):
                table = dict(current)
                if gpu:
                    table[gpu] = float(value)
                elif isinstance(value, dict):
                    table.update({k: float(v) for k, v in value.items()})
                else:
                    table = {k: float(value) for k in table}
                changes[key] = table
            else:
                if isinstance(value, dict) or isinstance(value, bool):
                    raise StudioError(f"calibration efficiency '{name}' must be a number (got {value!r})")
                changes[key] = float(value)
        return replace(self, **changes)


def constants_from_dict(data: dict[str, Any], where: str = "presets/engine.json") -> Constants:
    """Build :class:`Constants` from the decoded ``engine.json``; errors name the field."""
    try:
        table = data["constants"]
    except (KeyError, TypeError):
        raise StudioError("field 'constants' is missing", where) from None
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for f in fields(Constants):
        if f.name == "sources":
            continue
        entry = table.get(f.name)
        if not isinstance(entry, dict) or "value" not in entry:
            raise StudioError(f"field 'constants.{f.name}' is missing or has no 'value'", where)
        if not entry.get("source"):
            raise StudioError(f"field 'constants.{f.name}' has no 'source'", where)
        v = entry["value"]
        if isinstance(v, dict):
            if "default" not in v:
                raise StudioError(f"field 'constants.{f.name}.value' needs a 'default' entry", where)
            values[f.name] = {str(k): float(x) for k, x in v.items()}
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            values[f.name] = float(v)
        else:
            raise StudioError(f"field 'constants.{f.name}.value' must be a number or a per-GPU table", where)
        sources[f.name] = str(entry["source"])
    return Constants(**values, sources=sources)


@lru_cache(maxsize=1)
def default_constants() -> Constants:
    """The bundled constants (cached)."""
    try:
        data = json.loads(packaged_text("presets/engine.json"))
    except ValueError as exc:
        raise StudioError(f"cannot read engine constants: {exc}", "presets/engine.json") from None
    return constants_from_dict(data)
