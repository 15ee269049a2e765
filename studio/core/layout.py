"""Parallel layout: TP × PP × DP ranks (EP inside them) and where each rank runs.

Rank order is ``rank = (dp_index * pp + stage) * tp + tp_rank``: a TP group is ``tp`` consecutive
ranks, a stage's TP groups of all replicas are the ranks with the same ``stage``. ``placement[r]``
is the GPU id that runs rank ``r``; without a placement the engine assigns GPUs in cluster order
(node by node, slot by slot), which keeps each TP group inside a node whenever ``tp`` divides the
GPUs per node.

Experts: ``ep`` GPUs of a stage hold disjoint expert sets. ``ep`` must divide ``tp × dp`` and be a
divisor or a multiple of ``tp``; each expert is TP-sharded ``max(1, tp // ep)`` ways, so a GPU
holds ``1 / max(tp, ep)`` of a stage's routed-expert weights.

Context parallelism (``cp``, ``cp_mode``) shards the KV cache along the sequence and adds no GPUs:

* ``cp_mode="decode"`` (decode context parallelism, vLLM ``--decode-context-parallel-size``): the
  ``cp`` ranks ``tp_rank ≡ j (mod tp / cp)`` of a TP group each hold every ``cp``-th token of the
  KV cache that TP would otherwise duplicate on them.
* ``cp_mode="prefill"`` (ring attention / prefill context parallelism): ``cp`` consecutive DP
  replicas serve one sequence together, each with ``1 / cp`` of its prompt and of its KV cache; the
  independent replicas are ``dp / cp``.

Which ``cp`` a model and layout allow is decided in :mod:`studio.core.parallelism` only.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer, model_validator

from studio.core.base import Frozen
from studio.core.hardware import MAX_CLUSTER_GPUS

#: Largest tensor-parallel size and pipeline depth a layout may have.
MAX_TP = 4096
MAX_PP = 4096


class Layout(Frozen):
    """How the model is split over the GPUs."""

    tp: int = Field(1, ge=1, le=MAX_TP, description="tensor-parallel size")
    pp: int = Field(1, ge=1, le=MAX_PP, description="pipeline-parallel stages")
    dp: int = Field(1, ge=1, le=100_000, description="data-parallel replicas")
    ep: int = Field(1, ge=1, le=100_000, description="expert-parallel size (MoE)")
    micro_batches: int = Field(1, ge=1, le=100_000, description="pipeline micro-batches (M)")
    layers_per_stage: tuple[int, ...] | None = Field(
        None, description="layers of each stage; None = as even as possible"
    )
    placement: tuple[str, ...] | None = Field(None, description="GPU id of each rank")
    cp: int = Field(1, ge=1, le=MAX_TP, description="context-parallel size (KV cache sharded along the sequence)")
    cp_mode: Literal["decode", "prefill"] = Field(
        "decode", description="decode: inside the TP group (DCP); prefill: ring attention over cp DP replicas"
    )

    @model_validator(mode="after")
    def _check(self) -> Layout:
        if self.world_size > MAX_CLUSTER_GPUS:
            raise ValueError(
                f"tp × pp × dp = {self.world_size:,} GPUs; a cluster holds at most {MAX_CLUSTER_GPUS:,}"
            )
        if self.layers_per_stage is not None:
            if len(self.layers_per_stage) != self.pp:
                raise ValueError(
                    f"layers_per_stage has {len(self.layers_per_stage)} entries; pp is {self.pp}"
                )
            if any(n < 1 for n in self.layers_per_stage):
                raise ValueError("layers_per_stage: every stage needs at least one layer")
        from studio.core.parallelism import ep_shape_reason  # it imports this module

        why = ep_shape_reason(self.ep, self.tp, self.dp)
        if why is not None:
            raise ValueError(why)
        if self.placement is not None:
            if len(self.placement) != self.world_size:
                raise ValueError(
                    f"placement lists {len(self.placement)} GPUs; tp × pp × dp = {self.world_size}"
                )
            if len(set(self.placement)) != len(self.placement):
                raise ValueError("placement lists a GPU twice")
        return self

    @model_serializer(mode="wrap")
    def _drop_default_cp(self, handler: SerializerFunctionWrapHandler) -> dict:
        """Without context parallelism a saved layout reads as before CP existed (files unchanged)."""
        data = handler(self)
        if isinstance(data, dict) and self.cp == 1 and self.cp_mode == "decode":
            data.pop("cp", None)
            data.pop("cp_mode", None)
        return data

    @property
    def world_size(self) -> int:
        """GPUs used: tp × pp × dp."""
        return self.tp * self.pp * self.dp

    @property
    def label(self) -> str:
        parts = [f"TP{self.tp}", f"PP{self.pp}"]
        if self.dp > 1:
            parts.append(f"DP{self.dp}")
        if self.ep > 1:
            parts.append(f"EP{self.ep}")
        if self.cp > 1:
            parts.append(f"{'DCP' if self.cp_mode == 'decode' else 'PCP'}{self.cp}")
        return "×".join(parts)

    @property
    def replicas(self) -> int:
        """Independent replicas: DP, or DP / CP when ``cp`` replicas share a sequence (prefill CP)."""
        return self.dp // self.cp if self.cp_mode == "prefill" and self.cp > 1 else self.dp

    def stage_layers(self, num_layers: int) -> tuple[int, ...]:
        """Layers per stage: the explicit split, else as even as possible (earlier stages get the
        extra layer, as vLLM does)."""
        if self.layers_per_stage is not None:
            return self.layers_per_stage
        base, extra = divmod(num_layers, self.pp)
        return tuple(base + (1 if s < extra else 0) for s in range(self.pp))

    def rank(self, dp_index: int, stage: int, tp_rank: int) -> int:
        return (dp_index * self.pp + stage) * self.tp + tp_rank

    def tp_groups(self) -> list[list[int]]:
        """Ranks of each TP group, ordered (replica, stage)."""
        return [
            [self.rank(d, s, t) for t in range(self.tp)] for d in range(self.dp) for s in range(self.pp)
        ]
