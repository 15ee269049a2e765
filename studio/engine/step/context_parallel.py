"""Context parallelism (CP): the KV cache sharded along the sequence, and what it costs per layer.

Two variants, both without extra GPUs (:class:`studio.core.layout.Layout` ``cp``, ``cp_mode``):

* **decode** — decode context parallelism as vLLM ``--decode-context-parallel-size`` (DCP), SGLang
  ``--dcp-size`` and TensorRT-LLM Helix run it: the ``cp`` ranks ``tp_rank ≡ j (mod tp / cp)`` of a
  TP group hold the same KV heads (TP duplicates them once TP exceeds the KV heads; MLA's one latent
  head is on every rank) and each keeps every ``cp``-th token. Per layer, a decoding token's
  queries are all-gathered over those ranks, each attends to its shard, the log-sum-exp values
  are all-gathered and the partial outputs reduce-scattered back (vLLM ``dcp_comm_backend="ag_rs"``,
  three collectives). Attention FLOPs per GPU do not change (``cp`` × the heads over ``1 / cp`` of
  the tokens); the KV bytes each GPU stores and reads fall by ``cp``. Prompt tokens gather the chunk's KV shards so each rank
  attends to the whole chunk (SGLang's MHA-extend path, vLLM's chunked-prefill context path).
* **prefill** — ring attention (vLLM ``--prefill-context-parallel-size`` with DCP over the PCP axis,
  TensorRT-LLM ``cp_config.cp_type: RING``): ``cp`` consecutive DP replicas take one sequence; the
  rank of each with the same (stage, TP rank) form a ring. A prompt is split ``cp`` ways (balanced
  causal halves); per layer every rank passes its KV block round the ring ``cp − 1`` times while it
  attends to the block it holds, so only the part of the passes longer than the attention shows.
  A decode step runs every token on each replica of the group (the dense layers are replicated),
  each attends to its ``1 / cp`` of the context, and the partial outputs with log-sum-exp are
  all-gathered.

All messages are per GPU, in the activation format, with the log-sum-exp in FP32 (4 B per head).
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np

from studio.core.architecture import LLMArchitecture
from studio.core.layout import Layout
from studio.core.precision import DType
from studio.engine.fabric.comm import Collective, allgather, ring_pass
from studio.engine.fabric.topology import Topology
from studio.engine.plan.results import CommCost
from studio.engine.step.constants import Constants
from studio.engine.step.records import Record
from studio.engine.step.shapes import kv_bytes_per_token_layer

LSE_BYTES = 4.0  # one FP32 log-sum-exp per head and token
MAX_SAMPLED_GROUPS = 4  # CP groups costed per stage (the slowest counts)


class CpCosts(Record, frozen=True):
    """Batch-independent figures of a layout's context parallelism (``degree`` > 1)."""

    mode: str  # "decode" or "prefill"
    degree: int
    groups: list[list[list[str]]]  # [stage] -> sampled CP groups (GPU ids)
    gather: list[list[Collective]]  # [stage] -> all-gather / reduce-scatter of each sampled group
    ring: list[list[Collective]]  # [stage] -> ring passes (prefill mode; empty lists otherwise)
    q_bytes: float  # query bytes of one token on one GPU (decode mode all-gathers cp of them)
    out_bytes: float  # partial output + log-sum-exp of one token on one GPU
    kv_layer_bytes: float  # KV bytes of one token in one layer on one GPU before the sequence split
    #: the log-sum-exp part of ``out_bytes`` (decode CP gathers it on its own)
    lse_bytes: float = 0.0

    def layer_us(
        self,
        s: int,
        prefill_tokens: np.ndarray,
        decode_seqs: np.ndarray,
        attn_us_per_layer: np.ndarray,
    ) -> np.ndarray:
        """Exposed CP communication (µs) of one full-attention layer of stage ``s``, per row.

        ``prefill_tokens`` are the prompt tokens one GPU works on (already split in prefill mode),
        ``attn_us_per_layer`` the prompt attention one GPU computes in that layer (what the ring
        passes hide behind)."""
        x = np.asarray(prefill_tokens, dtype=float)
        d = np.asarray(decode_seqs, dtype=float)
        n = self.degree
        out = np.zeros(np.broadcast(x, d).shape)
        if self.mode == "decode":
            # vLLM ag_rs: all-gather Q, all-gather the LSE, reduce-scatter the partial outputs
            q = _worst(self.gather[s], d * self.q_bytes * n)
            lse = _worst(self.gather[s], d * self.lse_bytes * n)
            o = _worst(self.gather[s], d * (self.out_bytes - self.lse_bytes) * n)
            kv = _worst(self.gather[s], x * self.kv_layer_bytes)
            out += np.where(d > 0, q + lse + o, 0.0) + np.where(x > 0, kv, 0.0)
        else:
            passes = (n - 1) * _worst(self.ring[s], x * self.kv_layer_bytes)
            out += np.where(x > 0, np.maximum(passes - attn_us_per_layer, 0.0), 0.0)
            o = _worst(self.gather[s], d * self.out_bytes * n)
            out += np.where(d > 0, o, 0.0)
        return out

    def bottleneck(self) -> tuple[str | None, str | None, str]:
        """(link id, link kind, algorithm) of the slowest sampled CP group's collective."""
        cols = [
            c
            for st in (self.ring if self.mode == "prefill" else self.gather)
            for c in st
            if c.algos
        ]
        if not cols:
            return None, None, ""
        worst = max(cols, key=lambda col: float(col.time_us(2**20)))
        a = worst.algos[0]
        return a.bottleneck_link, a.bottleneck_kind, a.name


def _worst(cols: list[Collective], size: np.ndarray) -> np.ndarray:
    size = np.asarray(size, dtype=float)
    if not cols:
        return np.zeros_like(size)
    out = cols[0].time_us(size)
    for col in cols[1:]:
        out = np.maximum(out, col.time_us(size))
    return out


def cp_groups(
    layout: Layout, groups: list[list[list[str]]], replicas: list[int], sample: bool = True
) -> list[list[list[str]]]:
    """The CP groups of every stage (``[stage] -> [group] -> GPU ids``), at most
    :data:`MAX_SAMPLED_GROUPS` per stage when ``sample``.

    Decode: inside each TP group, ranks ``j, j + tp/cp, …`` (vLLM builds its DCP groups with this
    stride). Prefill: the same (stage, TP rank) in ``cp`` consecutive replicas."""
    cp, tp = layout.cp, layout.tp
    out: list[list[list[str]]] = []
    for s in range(layout.pp):
        found: list[list[str]] = []
        if layout.cp_mode == "decode":
            stride = tp // cp
            for d in replicas:
                for j in range(stride):
                    found.append([groups[d][s][j + k * stride] for k in range(cp)])
        else:
            for d0 in range(0, layout.dp, cp):
                if not any(d0 <= d < d0 + cp for d in replicas):
                    continue
                for t in range(tp):
                    found.append([groups[d][s][t] for d in range(d0, d0 + cp)])
        if sample and len(found) > MAX_SAMPLED_GROUPS:
            idx = sorted(
                {int(round(v)) for v in np.linspace(0, len(found) - 1, MAX_SAMPLED_GROUPS)}
            )
            found = [found[i] for i in idx]
        out.append(found)
    return out


def message_bytes(
    model: LLMArchitecture, tp: int, kv_dtype: DType, act_bytes: float
) -> tuple[float, float, float]:
    """(query, partial output + LSE, unsplit KV per layer) bytes of one token on one GPU.

    MLA decodes in the latent space (absorbed weights): a query head is ``kv_lora_rank +
    qk_rope_head_dim`` wide and a partial output ``kv_lora_rank``; otherwise both are ``head_dim``."""
    heads = math.ceil(model.num_attention_heads / tp)
    if model.mla is not None:
        q_dim = model.mla.kv_lora_rank + model.mla.qk_rope_head_dim
        v_dim = model.mla.kv_lora_rank
    else:
        q_dim = v_dim = model.head_dim
    q = heads * q_dim * act_bytes
    out = heads * (v_dim * act_bytes + LSE_BYTES)
    return q, out, kv_bytes_per_token_layer(model, tp, kv_dtype)


def cp_costs(
    model: LLMArchitecture,
    kv_dtype: DType,
    layout: Layout,
    groups: list[list[list[str]]],
    topo: Topology,
    c: Constants,
    replicas: list[int],
) -> CpCosts | None:
    """CP figures of ``layout`` (``None`` without context parallelism)."""
    if layout.cp <= 1:
        return None
    sampled = cp_groups(layout, groups, replicas)
    gather = [[allgather(topo, g, c) for g in st] for st in sampled]
    ring = (
        [[ring_pass(topo, g, c) for g in st] for st in sampled]
        if layout.cp_mode == "prefill"
        else [[] for _ in sampled]
    )
    q, out, kv = message_bytes(model, layout.tp, kv_dtype, c.activation_bytes)
    lse = math.ceil(model.num_attention_heads / layout.tp) * LSE_BYTES
    return CpCosts(
        mode=layout.cp_mode,
        degree=layout.cp,
        groups=sampled,
        gather=gather,
        ring=ring,
        q_bytes=q,
        out_bytes=out,
        kv_layer_bytes=kv,
        lse_bytes=lse,
    )


def prefill_split(lc_cp: CpCosts | None) -> int:
    """How many ways a prompt's tokens (and a decode step's context) are split per GPU: ``cp`` in
    prefill mode, else 1 (decode CP keeps every prompt token and the FLOPs of each GPU)."""
    return lc_cp.degree if lc_cp is not None and lc_cp.mode == "prefill" else 1


def cp_comm_costs(lc: object, micro_batch: int, isl: float) -> list[CommCost]:
    """The CP collectives of a plan (one per phase, the slowest sampled group), for ``comm``:
    decode = the query all-gather of a decode micro-batch (decode mode) or the partial-output
    all-gather (prefill mode); prefill = the prompt's KV all-gather (decode mode) or one ring pass of
    a KV block (prefill mode)."""
    cpx: CpCosts | None = getattr(lc, "cp", None)
    if cpx is None:
        return []
    n = cpx.degree
    out: list[CommCost] = []
    items: tuple[tuple[Literal["prefill", "decode"], list[list[Collective]], float], ...]
    if cpx.mode == "decode":
        items = (
            ("decode", cpx.gather, micro_batch * cpx.q_bytes * n),
            ("prefill", cpx.gather, micro_batch * isl * cpx.kv_layer_bytes),
        )
    else:
        items = (
            ("decode", cpx.gather, micro_batch * cpx.out_bytes * n),
            ("prefill", cpx.ring, micro_batch * isl / n * cpx.kv_layer_bytes),
        )
    for phase, cols, size in items:
        col = max(
            (cc for st in cols for cc in st if cc.algos),
            key=lambda cc: float(cc.time_us(size)),
            default=None,
        )
        if col is None:
            continue
        algo = col.pick(size)
        if algo is None:
            continue
        out.append(CommCost.of("cp", phase, col.group, size, algo))
    return out
