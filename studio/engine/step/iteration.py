"""One scheduler iteration of a replica: the cost model every serving figure is built from.

Serving engines (vLLM, TensorRT-LLM, SGLang) run continuous batching at iteration level: each
iteration runs one forward pass over the decode token of every running sequence plus chunks of
prompts being prefilled, within a token budget (``max_num_batched_tokens`` / ``max_num_tokens``).
:class:`IterationModel` prices such an iteration from a :class:`~studio.engine.step.costing.LayoutCosts`:

* GEMMs run at the GPU's measured matmul efficiency (MAMF) × the asymptotic kernel efficiency
  (``prefill_efficiency``) × ``T / (T + gemm_half_tokens)``, ``T`` the tokens of the micro-batch:
  a few tokens leave the tensor cores idle, thousands saturate them. Routed experts run grouped
  GEMMs of ``T · k / E`` tokens each (over the EP group), at ``t / (t + expert_gemm_half_tokens)``.
* Weights (all but the embedding table, of which a pass gathers only its tokens' rows; and only
  the routed experts actually touched) and the KV cache of the decoding sequences are
  read once per micro-batch at ``decode_efficiency`` × the achievable memory bandwidth.
* A stage takes ``max(compute, memory) + roofline_blend × min(compute, memory)`` (kernels do not
  overlap perfectly) + fixed costs (per iteration, per layer, and per MoE layer for routing and the
  expert dispatch) + its all-reduces / all-to-alls; stages pass hidden states to the next over the
  drawn links.
* With ``M`` micro-batches the iteration (a "round") takes ``max(Σ_s t_s, M · max_s t_s)``.
* With speculative decoding (``lc.spec``) each decoding sequence brings ``k + 1`` tokens to be
  verified (GEMMs, attention, logits, all-reduces) while its KV cache is still read once, and the
  last stage also runs the drafter's ``k`` passes (:mod:`studio.engine.step.speculative`); an iteration
  then emits :attr:`IterationModel.tokens_per_step` tokens per decoding sequence.

Everything is vectorised over arrays of (prefill tokens, decode sequences), so the closed-form
steady state (:mod:`studio.engine.serving.load`), the sweep and the request simulation
(:mod:`studio.engine.serving.simulate`) share one model.
"""

from __future__ import annotations

import numpy as np

from studio.engine.step.constants import Constants
from studio.engine.step.context_parallel import prefill_split
from studio.engine.step.costing import LayoutCosts, coll_time_us, sliding_avg
from studio.engine.step.records import Record


class IterationTimes(Record):
    """Per-stage times (ms) of one micro-batch, arrays shaped (stages, N)."""

    compute: np.ndarray
    allreduce: np.ndarray
    alltoall: np.ndarray
    p2p: np.ndarray  # to the next stage (0 on the last)
    ar_us: np.ndarray  # one all-reduce of the worst stage, (N,)
    a2a_us: np.ndarray  # one all-to-all of the worst stage, (N,)
    p2p_us: np.ndarray  # one stage boundary, worst, (N,)
    cp: np.ndarray  # context-parallel communication
    cp_us: np.ndarray  # one layer of the worst stage, (N,)

    @property
    def stage(self) -> np.ndarray:
        """Compute + collectives of each stage (without the hand-off)."""
        return self.compute + self.allreduce + self.alltoall + self.cp

    def columns(self, start: int, stop: int) -> IterationTimes:
        """The times of rows ``start:stop`` (each figure's last axis), as arrays of their own."""
        return IterationTimes(**{name: value[..., start:stop].copy() for name, value in self.values().items()})


class IterationModel:
    """Time of one scheduler iteration of one replica of a layout.

    Parameters
    ----------
    lc:
        Batch-independent costs of the layout.
    c:
        Engine constants.
    """

    def __init__(self, lc: LayoutCosts, c: Constants) -> None:
        self.lc = lc
        self.c = c
        self.micro_batches = 1

    @property
    def tokens_per_step(self) -> float:
        """Output tokens one decoding sequence gains per iteration (1 without speculation)."""
        return self.lc.spec.tokens_per_step if self.lc.spec is not None else 1.0

    @property
    def budget_per_seq(self) -> int:
        """Tokens of the iteration's token budget one decoding sequence takes (k + 1 with speculation)."""
        return self.lc.spec.verify_tokens if self.lc.spec is not None else 1

    def micro_batch_times(
        self,
        prefill_tokens: np.ndarray | float,
        decode_seqs: np.ndarray | float,
        decode_ctx: np.ndarray | float,
        prompt_len: np.ndarray | float,
    ) -> IterationTimes:
        """Stage times of ONE micro-batch holding ``prefill_tokens`` prompt tokens (of prompts of
        ``prompt_len`` tokens) and ``decode_seqs`` decoding sequences of mean context ``decode_ctx``."""
        lc, c = self.lc, self.c
        x = np.atleast_1d(np.asarray(prefill_tokens, dtype=float))
        d = np.atleast_1d(np.asarray(decode_seqs, dtype=float))
        if x.shape != d.shape:
            x, d = np.broadcast_arrays(x, d)
        # prefill context parallelism: each GPU takes 1/cp of the prompt tokens and of the context
        split = prefill_split(lc.cp)
        x = x / split
        n = x.shape[0]
        ctx_full = np.broadcast_to(np.asarray(decode_ctx, dtype=float), (n,))
        ctx = ctx_full / split
        plen = np.broadcast_to(np.maximum(np.asarray(prompt_len, dtype=float), 1.0), (n,))
        dv = d * (lc.spec.verify_tokens if lc.spec is not None else 1)  # decode tokens through the model
        tokens = x + dv
        pp = lc.layout.pp
        tp = lc.layout.tp
        act_b = c.activation_bytes
        h = lc.hidden
        working = tokens > 0
        gemm = np.where(working, tokens / (tokens + c.gemm_half_tokens), 1.0)
        route = max(1, lc.layout.ep // tp) if lc.num_experts else 1
        skew = c.moe_imbalance_factor - 1.0 if lc.num_experts else 0.0
        # logits: every decoding sequence, and each prompt whose last chunk is in this micro-batch
        logit_seqs = dv + x / plen
        ar_size = tokens * h * act_b
        comp = np.zeros((pp, n))
        ar = np.zeros((pp, n))
        a2a = np.zeros((pp, n))
        p2p = np.zeros((pp, n))
        ar_worst = np.zeros(n)
        a2a_worst = np.zeros(n)
        p2p_worst = np.zeros(n)
        cpt = np.zeros((pp, n))
        cp_worst = np.zeros(n)
        # what every stage shares, computed once (a pass costs ~0.1 ms of numpy calls, mostly per stage)
        attended = sliding_avg(plen, None)  # per prompt token, full-attention layers
        attended_sliding = sliding_avg(plen, lc.window)
        ctx_sliding = np.minimum(ctx, lc.window) if lc.window else ctx
        # the MoE layer's routing, dispatch and combine synchronisation grows with the tokens routed
        # until the kernels are full: T / (T + moe_overhead_half_tokens) of its full cost
        moe_fill = tokens / (tokens + c.moe_overhead_half_tokens)
        if lc.num_experts:
            # routed experts: grouped GEMMs of tokens × k / E rows each (per EP group), far smaller
            # than the dense GEMMs when experts are many and fine-grained
            tpe = tokens * route * lc.experts_per_token / lc.num_experts
            gemm_e = np.where(tpe > 0, tpe / (tpe + c.expert_gemm_half_tokens), 1.0)
            miss = 1.0 - lc.experts_per_token / lc.num_experts
            touched = 1.0 - miss ** (tokens * route)  # share of the routed experts' weights read
        else:
            gemm_e = gemm
            touched = np.zeros(n)
        for s, sh in enumerate(lc.shapes):
            dense = (tokens * (lc.sec_per_token[s] - lc.sec_expert[s]) / gemm
                     + tokens * lc.sec_expert[s] / gemm_e + dv * skew * lc.sec_expert[s])
            attn = (x * (attended * lc.sec_attn_ctx[s] + attended_sliding * lc.sec_attn_ctx_sliding[s])
                    + dv * (ctx * lc.sec_attn_ctx[s] + ctx_sliding * lc.sec_attn_ctx_sliding[s]))
            cmp_s = dense + logit_seqs * lc.sec_lm_head[s] + attn / c.attention_efficiency
            if lc.num_experts:
                # routing moves every token's hidden state to its k experts and back (permute, combine):
                # memory-bound kernels between the GEMMs, in proportion to tokens × k
                cmp_s = cmp_s + (tokens * sh.moe_layers * lc.experts_per_token * h * act_b
                                 * c.moe_permute_passes / lc.hbm_bps[s])
            dense_w = sh.streamed_bytes - sh.expert_bytes  # the embedding table is gathered, not read
            # the stage's KV bytes are already split by CP; the context each GPU reads is the full one
            kv_read = d * np.asarray(sh.kv_bytes_for(ctx_full, lc.window), dtype=float)
            mem_s = (dense_w + sh.expert_bytes * touched + kv_read) / (lc.hbm_bps[s] * c.decode_efficiency)
            busy = np.maximum(cmp_s, mem_s) + c.roofline_blend * np.minimum(cmp_s, mem_s)
            fixed_us = (c.decode_step_overhead_us + sh.layers * c.layer_overhead_us
                        + sh.moe_layers * c.moe_layer_overhead_us * moe_fill)
            comp[s] = np.where(working, busy * 1e3 + fixed_us / 1e3, 0.0)
            t_ar = coll_time_us(lc.allreduce[s], ar_size)
            ar_worst = np.maximum(ar_worst, t_ar)
            ar[s] = np.where(working, 2 * sh.layers * t_ar / 1e3, 0.0)
            if lc.cp is not None and sh.full_layers:
                pf_attn_us = x * attended * lc.sec_attn_ctx[s] / sh.full_layers \
                    / c.attention_efficiency * 1e6
                t_cp = lc.cp.layer_us(s, x, dv, pf_attn_us)  # every verified token attends
                cp_worst = np.maximum(cp_worst, t_cp)
                cpt[s] = np.where(working, sh.full_layers * t_cp / 1e3, 0.0)
            if lc.alltoall[s]:
                t_a2a = coll_time_us(lc.alltoall[s], tokens * lc.a2a_bytes_per_token)
                a2a_worst = np.maximum(a2a_worst, t_a2a)
                a2a[s] = np.where(working, 2 * sh.moe_layers * t_a2a / 1e3, 0.0)
        if lc.spec is not None and lc.spec.draft is not None:
            d_cmp, d_coll = lc.spec.draft_ms(c, x, d, ctx, plen)
            comp[pp - 1] += d_cmp
            ar[pp - 1] += d_coll
        for s, colls in enumerate(lc.p2p):
            t = coll_time_us(colls, ar_size)
            p2p[s] = np.where(working, t / 1e3, 0.0)
            p2p_worst = np.maximum(p2p_worst, t)
        return IterationTimes(compute=comp, allreduce=ar, alltoall=a2a, p2p=p2p, ar_us=ar_worst,
                              a2a_us=a2a_worst, p2p_us=p2p_worst, cp=cpt, cp_us=cp_worst)

    def round_ms(
        self,
        prefill_tokens: np.ndarray | float,
        decode_seqs: np.ndarray | float,
        decode_ctx: np.ndarray | float,
        prompt_len: np.ndarray | float,
        micro_batches: np.ndarray | float = 1.0,
    ) -> np.ndarray:
        """Time (ms) of one iteration of the whole replica: the tokens split evenly over ``M``
        micro-batches, ``max(Σ_s t_s, M · max_s t_s)`` with ``t_s`` including the hand-off."""
        m = np.atleast_1d(np.asarray(micro_batches, dtype=float))
        x = np.asarray(prefill_tokens, dtype=float)
        d = np.asarray(decode_seqs, dtype=float)
        it = self.micro_batch_times(x / m, d / m, decode_ctx, prompt_len)
        per = it.stage + it.p2p
        return np.maximum(per.sum(axis=0), m * per.max(axis=0))
