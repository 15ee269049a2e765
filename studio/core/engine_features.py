"""Serving-engine features a deployment turns on beside the layout (expert load balancing,
dual-batch overlap, the MoE all-to-all backend, data-parallel load balancing, API servers, KV
offloading, attention-DP balancing, InfiniBand devices): ``serving.features`` of a project.

The exports write each one in the engine's own spelling, to the engine versions that accept it
(``features`` in ``presets/engines/rules.json``); a feature an engine lacks is left out with a note.
"""

from __future__ import annotations

from pydantic import Field

from studio.core.base import Frozen

_NAME = r"^[A-Za-z0-9_]+$"


class EngineFeatures(Frozen):
    """Engine features of a deployment; the defaults are every engine's own defaults (all off)."""

    eplb: bool = Field(False, description="expert-parallel load balancing (vLLM/SGLang EPLB, TensorRT-LLM MoE load balancer)")
    redundant_experts: int = Field(0, ge=0, le=4096, description="extra expert replicas per MoE layer with EPLB")
    dual_batch_overlap: bool = Field(False, description="vLLM enable_dbo, SGLang enable_two_batch_overlap")
    all2all_backend: str | None = Field(
        None, max_length=64, pattern=_NAME,
        description="the engine's MoE all-to-all backend name (vLLM all2all_backend, SGLang moe_a2a_backend, "
        "TensorRT-LLM moe_config.backend); None = the engine's default",
    )
    load_balance: str | None = Field(
        None, max_length=64, pattern=_NAME,
        description="vLLM data-parallel load balancing (internal, hybrid, external) or SGLang "
        "load_balance_method; None = the engine's default",
    )
    api_servers: int | None = Field(None, ge=1, le=512, description="vLLM api_server_count (API-server processes), "
                                    "SGLang tokenizer_worker_num (tokenizer-manager processes)")
    kv_offload_gib: float | None = Field(None, gt=0, le=1_000_000, description="vLLM CPU KV offloading, GiB")
    attention_dp_balance: bool = Field(False, description="TensorRT-LLM attention_dp_config.enable_balance")
    routing_skew: float | None = Field(
        None, ge=1.0, le=1024.0,
        description="MoE routing skew: the hottest expert's token-expert pairs over the mean expert's in a MoE "
        "layer (a property of the model and the traffic); None = evenly loaded experts. The plan costs the most "
        "loaded EP rank from it, with or without EPLB; nothing is exported",
    )
    ib_device: str | None = Field(
        None, max_length=200, pattern=r"^[A-Za-z0-9_]+(,[A-Za-z0-9_]+)*$",
        description="SGLang disaggregation_ib_device: HCA names such as mlx5_0,mlx5_1",
    )

    @property
    def any(self) -> bool:
        """Whether any feature is set."""
        return self != EngineFeatures()
