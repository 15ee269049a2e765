"""LLM architecture: the shapes that decide weight bytes, FLOPs and KV-cache bytes.

Parameter counting follows the Hugging Face module layout of each family (Llama/Mistral/Qwen
dense and MoE, Mixtral, DeepSeek-V2/V3 MLA + shared experts, gpt-oss with biases, sinks and
alternating sliding-window layers). The totals reproduce the published counts (see
``tests/core/test_architecture.py``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from studio.core.base import Frozen
from studio.core.precision import DType

LayerType = Literal["full", "sliding"]


class ModulePrecision(Frozen):
    """Storage format of each module group of the weights (e.g. FP8 MLP with BF16 attention)."""

    attention: DType = DType.BF16
    mlp: DType = DType.BF16
    experts: DType = DType.BF16
    embeddings: DType = DType.BF16
    lm_head: DType = DType.BF16

    @classmethod
    def uniform(cls, dtype: DType | str) -> ModulePrecision:
        """Every module in ``dtype``."""
        d = DType(dtype)
        return cls(attention=d, mlp=d, experts=d, embeddings=d, lm_head=d)

    @classmethod
    def quantized_linear(cls, dtype: DType | str) -> ModulePrecision:
        """Linear layers (attention, MLP, experts) in ``dtype``; embeddings and LM head kept in BF16,
        as vLLM, TensorRT-LLM and SGLang do for FP8/INT8/INT4/FP4 checkpoints."""
        d = DType(dtype)
        if d in (DType.BF16, DType.FP16, DType.FP32):
            return cls.uniform(d)
        return cls(attention=d, mlp=d, experts=d, embeddings=DType.BF16, lm_head=DType.BF16)

    def describe(self) -> str:
        """Short human form, e.g. ``fp8 (attention bf16)``."""
        vals = {k: v.value for k, v in self.model_dump(mode="python").items()}
        vals = {k: DType(v).value for k, v in vals.items()}
        common = max(set(vals.values()), key=list(vals.values()).count)
        rest = [f"{k} {v}" for k, v in vals.items() if v != common]
        return common + (f" ({', '.join(rest)})" if rest else "")


class MoEConfig(Frozen):
    """Mixture-of-experts feed-forward blocks."""

    num_experts: int = Field(ge=1, le=4096, description="routed experts per MoE layer")
    experts_per_token: int = Field(ge=1, le=4096, description="routed experts active per token")
    expert_intermediate_size: int = Field(ge=1, le=10_000_000)
    num_shared_experts: int = Field(0, ge=0, le=64)
    shared_intermediate_size: int = Field(0, ge=0, le=10_000_000, description="0 = same as a routed expert")
    first_dense_layers: int = Field(0, ge=0, le=10_000, description="leading layers with a dense MLP instead")
    layer_freq: int = Field(1, ge=1, le=10_000, description="every n-th layer (after the dense ones) is MoE")
    expert_bias: bool = False
    router_bias: bool = False
    router_score_bias: bool = False
    dense_layers: tuple[int, ...] = Field(
        (), max_length=10_000, description="further layers with a dense MLP (Qwen-MoE mlp_only_layers)"
    )
    shared_expert_gate: bool = Field(False, description="sigmoid gate on the shared expert (Qwen2-MoE)")

    @model_validator(mode="after")
    def _check(self) -> MoEConfig:
        if self.experts_per_token > self.num_experts:
            raise ValueError(
                f"experts_per_token ({self.experts_per_token}) must be ≤ num_experts ({self.num_experts})"
            )
        return self


class MLAConfig(Frozen):
    """DeepSeek multi-head latent attention."""

    q_lora_rank: int | None = Field(None, ge=1, le=1_000_000)
    kv_lora_rank: int = Field(ge=1, le=1_000_000)
    qk_nope_head_dim: int = Field(ge=1, le=100_000)
    qk_rope_head_dim: int = Field(ge=0, le=100_000)
    v_head_dim: int = Field(ge=1, le=100_000)


class LLMArchitecture(Frozen):
    """A decoder-only transformer as far as memory, compute and communication are concerned."""

    id: str = Field(min_length=1, max_length=200)
    name: str = Field(min_length=1, max_length=200)
    model_type: str = Field(min_length=1, max_length=100, description="HF config model_type")
    hidden_size: int = Field(ge=1, le=1_000_000)
    num_layers: int = Field(ge=1, le=10_000)
    num_attention_heads: int = Field(ge=1, le=100_000)
    num_kv_heads: int = Field(ge=1, le=100_000)
    head_dim: int = Field(ge=1, le=100_000)
    intermediate_size: int = Field(ge=1, le=10_000_000, description="dense MLP width")
    vocab_size: int = Field(ge=1, le=100_000_000)
    max_context: int = Field(ge=1, le=100_000_000)
    tie_word_embeddings: bool = False
    attention_bias: bool = False
    attention_out_bias: bool = False
    attention_sinks: bool = False
    qk_norm: bool = False
    gated_mlp: bool = True
    moe: MoEConfig | None = None
    mla: MLAConfig | None = None
    layer_types: tuple[LayerType, ...] | None = Field(None, max_length=10_000)
    sliding_window: int | None = Field(None, ge=1, le=100_000_000)
    mtp_layers: int = Field(
        0, ge=0, le=64,
        description="multi-token-prediction layers kept for speculative decoding (config.json "
        "num_nextn_predict_layers); not counted in num_params",
    )
    precision: ModulePrecision = ModulePrecision()
    hf_model_id: str | None = None
    sources: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _check(self) -> LLMArchitecture:
        if self.num_attention_heads % self.num_kv_heads:
            raise ValueError(
                f"num_kv_heads ({self.num_kv_heads}) must divide num_attention_heads "
                f"({self.num_attention_heads})"
            )
        if self.layer_types is not None:
            if len(self.layer_types) != self.num_layers:
                raise ValueError(
                    f"layer_types has {len(self.layer_types)} entries; num_layers is {self.num_layers}"
                )
            if "sliding" in self.layer_types and self.sliding_window is None:
                raise ValueError("layer_types has sliding layers but sliding_window is not set")
        if self.moe is not None and self.moe.first_dense_layers > self.num_layers:
            raise ValueError("moe.first_dense_layers exceeds num_layers")
        return self

    # ----------------------------------------------------------------- layer classes
    @property
    def is_moe(self) -> bool:
        return self.moe is not None

    def is_moe_layer(self, layer: int) -> bool:
        """Whether layer ``layer`` (0-based) has an MoE feed-forward block."""
        if self.moe is None:
            return False
        if layer < self.moe.first_dense_layers or layer in self.moe.dense_layers:
            return False
        return (layer - self.moe.first_dense_layers) % self.moe.layer_freq == 0

    @property
    def num_moe_layers(self) -> int:
        return sum(self.is_moe_layer(i) for i in range(self.num_layers))

    def is_sliding_layer(self, layer: int) -> bool:
        return self.layer_types is not None and self.layer_types[layer] == "sliding"

    @property
    def num_sliding_layers(self) -> int:
        return 0 if self.layer_types is None else self.layer_types.count("sliding")

    # ----------------------------------------------------------------- parameter counts
    @property
    def q_dim(self) -> int:
        return self.num_attention_heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        return self.num_kv_heads * self.head_dim

    def attention_params(self) -> int:
        """Parameters of one attention block (projections, biases, norms inside attention)."""
        h = self.hidden_size
        if self.mla is not None:
            m = self.mla
            nh = self.num_attention_heads
            qk = m.qk_nope_head_dim + m.qk_rope_head_dim
            if m.q_lora_rank:
                q = h * m.q_lora_rank + m.q_lora_rank + m.q_lora_rank * nh * qk
            else:
                q = h * nh * qk
            kv = h * (m.kv_lora_rank + m.qk_rope_head_dim) + m.kv_lora_rank
            kv += m.kv_lora_rank * nh * (m.qk_nope_head_dim + m.v_head_dim)
            o = nh * m.v_head_dim * h
            return q + kv + o
        p = h * self.q_dim + 2 * h * self.kv_dim + self.q_dim * h
        if self.attention_bias:
            p += self.q_dim + 2 * self.kv_dim
        if self.attention_out_bias:
            p += h
        if self.qk_norm:
            p += 2 * self.head_dim
        if self.attention_sinks:
            p += self.num_attention_heads
        return p

    def mlp_params(self, width: int, bias: bool = False) -> int:
        """Parameters of one (gated or plain) MLP of inner ``width``."""
        h = self.hidden_size
        mats = 3 if self.gated_mlp else 2
        p = mats * h * width
        if bias:
            p += (2 if self.gated_mlp else 1) * width + h
        return p

    def expert_params(self) -> int:
        """Parameters of one routed expert."""
        assert self.moe is not None
        return self.mlp_params(self.moe.expert_intermediate_size, bias=self.moe.expert_bias)

    def shared_expert_params(self) -> int:
        """Parameters of all shared experts of one MoE layer."""
        if self.moe is None or self.moe.num_shared_experts == 0:
            return 0
        width = self.moe.shared_intermediate_size or self.moe.expert_intermediate_size
        gate = self.hidden_size if self.moe.shared_expert_gate else 0
        return self.moe.num_shared_experts * self.mlp_params(width) + gate

    def router_params(self) -> int:
        if self.moe is None:
            return 0
        p = self.hidden_size * self.moe.num_experts
        if self.moe.router_bias or self.moe.router_score_bias:
            p += self.moe.num_experts
        return p

    def layer_params(self, layer: int) -> dict[str, int]:
        """Parameters of layer ``layer`` by module group: attention, mlp (dense), experts (routed),
        shared (shared experts + router, kept replicated/TP-sharded like a dense MLP), norms."""
        out = {"attention": self.attention_params(), "mlp": 0, "experts": 0, "shared": 0}
        out["norms"] = 2 * self.hidden_size
        if self.is_moe_layer(layer):
            assert self.moe is not None
            out["experts"] = self.moe.num_experts * self.expert_params()
            out["shared"] = self.shared_expert_params() + self.router_params()
        else:
            out["mlp"] = self.mlp_params(self.intermediate_size)
        return out

    @property
    def embedding_params(self) -> int:
        return self.vocab_size * self.hidden_size

    @property
    def lm_head_params(self) -> int:
        return 0 if self.tie_word_embeddings else self.vocab_size * self.hidden_size

    @property
    def num_params(self) -> int:
        """Total parameters (routed experts all counted; MTP heads excluded)."""
        total = self.embedding_params + self.lm_head_params + self.hidden_size  # final norm
        # a layer's parameters depend only on whether it is an MoE layer: each kind is counted once
        # (the engine asks for this total on every plan; per layer it was ~20 % of a plan's time)
        per_kind: dict[bool, int] = {}
        for i in range(self.num_layers):
            moe = self.is_moe_layer(i)
            if moe not in per_kind:
                per_kind[moe] = sum(self.layer_params(i).values())
            total += per_kind[moe]
        return total

    @property
    def num_active_params(self) -> int:
        """Parameters touched per token (only ``experts_per_token`` routed experts).

        The DeepSeek-V3 expert-selection bias (``e_score_correction_bias``) only ranks experts
        and is not multiplied with activations, so it is not counted as active (this reproduces
        the published 37.55B active of DeepSeek-V3 exactly)."""
        if self.moe is None:
            return self.num_params
        inactive = (self.moe.num_experts - self.moe.experts_per_token) * self.expert_params()
        if self.moe.router_score_bias and not self.moe.router_bias:
            inactive += self.moe.num_experts
        return self.num_params - inactive * self.num_moe_layers

    # ----------------------------------------------------------------- KV cache shape
    @property
    def kv_heads_stored(self) -> int:
        """KV heads a layer stores per token (MLA stores one shared latent 'head')."""
        return 1 if self.mla is not None else self.num_kv_heads

    @property
    def kv_elements_per_token_per_layer(self) -> int:
        """Elements cached per token per layer, whole model (K and V)."""
        if self.mla is not None:
            return self.mla.kv_lora_rank + self.mla.qk_rope_head_dim
        return 2 * self.num_kv_heads * self.head_dim

    def kv_bytes_per_token(self, kv_dtype: DType | str = DType.BF16) -> float:
        """Whole-model KV bytes per token of context, sliding layers counted as full
        (use the engine for window-capped totals)."""
        return self.num_layers * self.kv_elements_per_token_per_layer * DType(kv_dtype).bytes

    def card_kv_bytes_per_token(self, kv_dtype: DType | str = DType.BF16) -> float:
        """The concept card's formula: layers × hidden × 2 (K+V) × bytes. Ignores GQA and MLA;
        equals :meth:`kv_bytes_per_token` exactly when kv heads = attention heads."""
        return self.num_layers * self.hidden_size * 2 * DType(kv_dtype).bytes
