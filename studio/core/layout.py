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

from typing import Literal, NamedTuple

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer, model_validator

from studio.core.base import Frozen
from studio.core.hardware import MAX_CLUSTER_GPUS

#: Largest tensor-parallel size and pipeline depth a layout may have.
MAX_TP = 4096
MAX_PP = 4096



def ep_shape_reason(ep: int, tp: int, dp: int) -> str | None:
    """Why ``ep`` cannot sit in TP = ``tp`` × DP = ``dp`` ranks whatever the model, or ``None``:
    EP divides ``tp × dp`` and is a divisor or a multiple of TP."""
    if ep == 1:
        return None
    if ep < 1:
        return f"EP must be at least 1 (got {ep})"
    if (tp * dp) % ep:
        return f"EP={ep} does not divide TP×DP = {tp * dp}"
    if ep % tp and tp % ep:
        return f"EP={ep} is neither a divisor nor a multiple of TP={tp}"
    return None


class RankCoords(NamedTuple):
    """Where one rank sits in the layout (:meth:`Layout.coords`, the inverse of :meth:`Layout.rank`).

    ``group`` is the TP group (``dp_index * pp + stage``, the order of :meth:`Layout.tp_groups`).
    ``ep_group`` / ``ep_rank``: with ``ep > tp`` an expert group is ``ep // tp`` consecutive
    replicas' TP groups of one stage (the ranks of one all-to-all), numbered like TP groups
    (``(dp_index // (ep // tp)) * pp + stage``), ``ep_rank = (dp_index mod ep // tp) * tp + tp_rank``;
    with ``ep ≤ tp`` the expert group is the TP group and ``ep_rank = tp_rank // (tp // ep)``
    (each expert set TP-sharded over ``tp // ep`` consecutive TP ranks).
    """

    rank: int
    dp_index: int
    stage: int
    tp_rank: int
    group: int
    ep_group: int
    ep_rank: int


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

    def coords(self, rank: int) -> RankCoords:
        """The replica, stage, TP rank, TP group and expert coordinates of ``rank`` (the inverse of
        :meth:`rank`). Raises ``ValueError`` for a rank outside ``0 .. world_size - 1``."""
        if not 0 <= rank < self.world_size:
            raise ValueError(f"rank {rank} is outside this layout's {self.world_size} ranks")
        group, tp_rank = divmod(rank, self.tp)
        dp_index, stage = divmod(group, self.pp)
        if self.ep > self.tp:
            per = self.ep // self.tp
            ep_group = (dp_index // per) * self.pp + stage
            ep_rank = (dp_index % per) * self.tp + tp_rank
        else:
            ep_group, ep_rank = group, tp_rank // (self.tp // self.ep)
        return RankCoords(rank, dp_index, stage, tp_rank, group, ep_group, ep_rank)

    def tp_groups(self) -> list[list[int]]:
        """Ranks of each TP group, ordered (replica, stage)."""
        return [
            [self.rank(d, s, t) for t in range(self.tp)] for d in range(self.dp) for s in range(self.pp)
        ]

    def gpu_groups(self, placement: tuple[str, ...]) -> list[list[list[str]]]:
        """GPU ids of every TP group when rank ``r`` runs on ``placement[r]``:
        ``[replica][stage] -> [GPU of TP rank 0, ...]`` (the rank order of :meth:`rank`)."""
        return [
            [[placement[self.rank(d, s, t)] for t in range(self.tp)] for s in range(self.pp)]
            for d in range(self.dp)
        ]
