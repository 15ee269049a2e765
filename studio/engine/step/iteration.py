"""One scheduler iteration of a replica: the cost model every serving figure is built from.

Serving engines (vLLM, TensorRT-LLM, SGLang) run continuous batching at iteration level: each
iteration runs one forward pass over the decode token of every running sequence plus chunks of
prompts being prefilled, within a token budget (``max_num_batched_tokens`` / ``max_num_tokens``).
:class:`IterationModel` prices such an iteration from a :class:`~studio.engine.step.costing.LayoutCosts`:

* Every kernel is timed at the iteration's real size from measured tables
  (:mod:`studio.engine.step.kernels`, :mod:`studio.engine.step.ops`): the GEMMs of every token
  (QKV, output, MLP, shared experts, router) at m = the micro-batch's tokens, so a small-m GEMM
  costs its weight bytes once; the LM head at m = the sequences emitting a token; the fused MoE
  layer at the tokens routed in the EP group (distinct experts touched on the most loaded rank,
  tokens per expert); paged decode attention over the KV bytes of every running sequence; causal
  prefill attention over each chunk's prefix.
* A stage takes the sum of its kernels (GEMMs, attention, MoE and the memory-bound norms,
  activations and RoPE / KV writes) + the GPU work outside the layers (:func:`step_overhead_us`; the
  one fitted per-iteration figure left is TensorRT-LLM 0.12-0.17's, see ``--explain``) + its
  all-reduces / all-to-alls; stages pass hidden states to the next over the drawn links.
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

import math
from typing import TYPE_CHECKING

import numpy as np

from studio.engine.step.constants import Constants
from studio.engine.step.context_parallel import prefill_split
from studio.engine.step.costing import LayoutCosts, coll_time_us, sliding_avg
from studio.engine.step.records import Record

if TYPE_CHECKING:
    from studio.engine.runtime.step import RuntimeStep


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


def step_overhead_us(lc: LayoutCosts, c: Constants) -> float:
    """The per-iteration remainder outside the layers, per stage: ``decode_step_overhead_us``, the
    GPU work every engine does there (embedding, final norm, sampling: derived, not fitted; a
    calibration profile may fit it to the user's runs); the host time of an iteration is the engine
    profile's scheduler (:class:`~studio.engine.runtime.step.RuntimeStep`). Only an engine whose
    profile cites no host time and does not overlap it with the GPU step (TensorRT-LLM's C++ batch
    manager, 0.12-0.17) pays the fitted ``decode_step_overhead_sync_us`` instead, which stands for
    both."""
    rt = lc.runtime
    if rt is not None and rt.scheduler.cpu_base_us <= 0 and not rt.scheduler.overlap:
        return c.decode_step_overhead_sync_us
    return c.decode_step_overhead_us


def step_overhead_name(lc: LayoutCosts) -> str:
    """The constant :func:`step_overhead_us` reads."""
    rt = lc.runtime
    if rt is not None and rt.scheduler.cpu_base_us <= 0 and not rt.scheduler.overlap:
        return "decode_step_overhead_sync_us"
    return "decode_step_overhead_us"


def per_row(value: np.ndarray | float, n: int) -> np.ndarray:
    """``value`` (a number or ``n`` of them) as ``n`` floats, one per row of an iteration."""
    a = np.asarray(value, dtype=float)
    if a.shape == (n,):
        return a
    if a.ndim == 0:
        return np.full(n, float(a))
    return np.broadcast_to(a, (n,))


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
        if lc.features is not None:  # the engine features' step (it calls this on lc.features' own costs)
            return lc.features.micro_batch_times(c, prefill_tokens, decode_seqs, decode_ctx, prompt_len)
        x = np.atleast_1d(np.asarray(prefill_tokens, dtype=float))
        d = np.atleast_1d(np.asarray(decode_seqs, dtype=float))
        if x.shape != d.shape:
            x, d = np.broadcast_arrays(x, d)
        # prefill context parallelism: each GPU takes 1/cp of the prompt tokens and of the context
        split = prefill_split(lc.cp)
        x = x / split
        n = x.shape[0]
        ctx_full = per_row(decode_ctx, n)
        plen = per_row(np.maximum(np.asarray(prompt_len, dtype=float), 1.0), n)
        dv = d * (lc.spec.verify_tokens if lc.spec is not None else 1)  # decode tokens through the model
        tokens = x + dv
        pp = lc.layout.pp
        tp = lc.layout.tp
        act_b = c.activation_bytes
        h = lc.hidden
        working = tokens > 0
        route = max(1, lc.layout.ep // tp) if lc.num_experts else 1
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
        # per prompt token, full-attention layers; a suffix after a cached prefix attends to it too
        cached = lc.prefix.cached_tokens if lc.prefix is not None else 0.0
        attended = sliding_avg(plen, None) + cached
        attended_sliding = sliding_avg(plen, lc.window) if lc.window else attended  # read with a window only
        if cached and lc.window:
            attended_sliding = np.minimum(attended_sliding + cached, float(lc.window))
        ctx_sliding = np.minimum(ctx_full, lc.window) if lc.window else ctx_full
        pf_eff, dec_eff = c.prefill_efficiency, c.decode_efficiency
        has_d, has_x, has_l = d > 0, x > 0, logit_seqs > 0
        ops = lc.ops
        assert ops is not None
        log_tok = np.log(np.maximum(tokens, 1e-30))
        log_route = np.log(float(route))
        log_logits = np.log(np.maximum(logit_seqs, 1e-30))
        log_dctx = np.log(np.maximum(d * ctx_full, 1e-30))
        log_dctx_sl = np.log(np.maximum(d * ctx_sliding, 1e-30)) if lc.window else log_dctx
        log_pf = np.log(np.maximum(x * attended, 1e-30))
        log_pf_sl = np.log(np.maximum(x * attended_sliding, 1e-30)) if lc.window else log_pf
        step_us = step_overhead_us(lc, c)
        zero = np.zeros(n)  # read only: a stage without full or sliding layers attends to nothing
        # stages alike in what they compute (the same curves, layer counts and collectives: a
        # uniform model's PP stages but the last) share one row, costed once per call
        comp_of: dict[tuple, np.ndarray] = {}
        ar_of: dict[tuple, np.ndarray] = {}
        for s, sh in enumerate(lc.shapes):
            o = ops[s]
            ar_key = (frozenset(col.cost_terms for col in lc.allreduce[s]), sh.layers)
            comp_key = (id(o), sh.full_layers, sh.sliding_layers, sh.layers)
            done = comp_of.get(comp_key)
            if done is not None and ar_key in ar_of and lc.cp is None and not lc.alltoall[s]:
                comp[s] = done
                t_ar = ar_of[ar_key]
                ar_worst = np.maximum(ar_worst, t_ar)
                ar[s] = np.where(working, 2 * sh.layers * t_ar / 1e3, 0.0)
                continue
            # every kernel at the iteration's real size: the tables' time for m tokens; a calibration
            # profile may scale the part a token count above one adds (prefill_efficiency) and the
            # weight-streaming floor of one token (decode_efficiency), both 1 by default
            # (a division by an efficiency of 1, the default, is left out: x / 1.0 is x)
            g1 = o.per_token_one  # the GEMMs and the elementwise kernels every token goes through
            above = np.maximum(o.per_token.at_log(log_tok) - g1, 0.0)
            gemm = g1 / dec_eff + (above if pf_eff == 1.0 else above / pf_eff)
            if o.moe is not None:
                m1 = o.moe_one
                gemm = gemm + m1 / dec_eff + np.maximum(o.moe.at_log(log_tok + log_route) - m1, 0.0) / pf_eff
            if o.lm_head is not None:
                head = np.where(has_l, o.lm_head.at_log(log_logits), 0.0)
                gemm = gemm + (head if dec_eff == 1.0 else head / dec_eff)
            # paged decode attention reads every running sequence's KV (the stage's bytes are split by
            # CP already; the context each GPU reads is the full one); prefill chunks attend to their prefix
            dec = pre = pf_layer = zero
            if sh.full_layers:
                dec = sh.full_layers * o.decode_attention.at_log(log_dctx + math.log(o.kv_layer_full or 1e-30))
                pf_layer = o.prefill_attention.at_log(log_pf + math.log(o.attn_flops_layer or 1e-30))
                pre = sh.full_layers * pf_layer
            if sh.sliding_layers:
                dec = dec + sh.sliding_layers * o.decode_attention.at_log(
                    log_dctx_sl + math.log(o.kv_layer_sliding or 1e-30))
                pre = pre + sh.sliding_layers * o.prefill_attention.at_log(
                    log_pf_sl + math.log(o.attn_flops_layer or 1e-30))
            dec_t, pre_t = np.where(has_d, dec, 0.0), np.where(has_x, pre, 0.0)
            attn = (dec_t if dec_eff == 1.0 else dec_t / dec_eff) + (pre_t if pf_eff == 1.0 else pre_t / pf_eff)
            fixed_us = step_us + sh.layers * c.layer_overhead_us
            comp[s] = comp_of[comp_key] = np.where(working, gemm + attn + fixed_us / 1e3, 0.0)
            t_ar = ar_of[ar_key] = coll_time_us(lc.allreduce[s], ar_size)
            ar_worst = np.maximum(ar_worst, t_ar)
            ar[s] = np.where(working, 2 * sh.layers * t_ar / 1e3, 0.0)
            if lc.cp is not None and sh.full_layers:
                pf_attn_us = np.where(has_x, pf_layer, 0.0) / pf_eff * 1e3
                t_cp = lc.cp.layer_us(s, x, dv, pf_attn_us)  # every verified token attends
                cp_worst = np.maximum(cp_worst, t_cp)
                cpt[s] = np.where(working, sh.full_layers * t_cp / 1e3, 0.0)
            if lc.alltoall[s]:
                t_a2a = coll_time_us(lc.alltoall[s], tokens * lc.a2a_bytes_per_token)
                a2a_worst = np.maximum(a2a_worst, t_a2a)
                a2a[s] = np.where(working, 2 * sh.moe_layers * t_a2a / 1e3, 0.0)
        if lc.spec is not None and lc.spec.draft is not None:
            d_cmp, d_coll = lc.spec.draft_ms(c, x, d, ctx_full / split, plen)
            comp[pp - 1] += d_cmp
            ar[pp - 1] += d_coll
        p2p_of: dict[frozenset, np.ndarray] = {}  # hand-offs over alike links cost the same
        for s, colls in enumerate(lc.p2p):
            p2p_key = frozenset(col.cost_terms for col in colls)
            t = p2p_of.get(p2p_key)
            if t is None:
                t = p2p_of[p2p_key] = coll_time_us(colls, ar_size)
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
        rt = self.lc.runtime
        if rt is None:
            it = self.micro_batch_times(x / m, d / m, decode_ctx, prompt_len)
            per = it.stage + it.p2p
            gpu = np.maximum(per.sum(axis=0), m * per.max(axis=0))
            return gpu if self.lc.prefix is None else self.lc.prefix.iteration_ms(gpu, x)
        return self._engine_rounds(x, d, decode_ctx, prompt_len, m, (rt,))[0]

    def rounds_under(
        self,
        runtimes: tuple[RuntimeStep, ...],
        prefill_tokens: np.ndarray | float,
        decode_seqs: np.ndarray | float,
        decode_ctx: np.ndarray | float,
        prompt_len: np.ndarray | float,
        micro_batches: np.ndarray | float = 1.0,
        *,
        bare: bool = False,
    ) -> list[np.ndarray]:
        """:meth:`round_ms` of this model with its runtime replaced by each of ``runtimes`` in turn,
        the GPU step costed once: each runtime must capture the same CUDA graphs with the same
        padding as this model's (the rows the GPU runs), and leave :func:`step_overhead_us` as it
        is (the GPU work outside the layers), so only the host time differs.

        With ``bare``, the list starts with one more round: the GPU step of the rows as they are
        (no graph padding) and no host time, which is :meth:`round_ms` of this model without its
        runtime where the constants make :func:`step_overhead_us` the same with and without it;
        its rows are costed in the same call as the padded ones."""
        rt = self.lc.runtime
        assert rt is not None
        for other in runtimes:
            assert other.graph_sizes == rt.graph_sizes and other.padding == rt.padding
            assert step_overhead_us(self.lc.replace(runtime=other), self.c) == step_overhead_us(self.lc, self.c)
        m = np.atleast_1d(np.asarray(micro_batches, dtype=float))
        x = np.asarray(prefill_tokens, dtype=float)
        d = np.asarray(decode_seqs, dtype=float)
        return self._engine_rounds(x, d, decode_ctx, prompt_len, m, runtimes, bare=bare)

    def _engine_rounds(
        self,
        x: np.ndarray,
        d: np.ndarray,
        decode_ctx: np.ndarray | float,
        prompt_len: np.ndarray | float,
        m: np.ndarray,
        runtimes: tuple[RuntimeStep, ...],
        *,
        bare: bool = False,
    ) -> list[np.ndarray]:
        """:meth:`round_ms` with an engine, its host time taken from each of ``runtimes`` (and,
        with ``bare``, first the unpadded GPU round of :meth:`rounds_under`)."""
        rt = self.lc.runtime
        assert rt is not None
        # the engine: a pure-decode micro-batch runs padded to its CUDA graph's size (the padded
        # rows read no KV cache: the context per row shrinks so the real rows' reads stay), then
        # the iteration waits for the scheduler CPU work the GPU step does not hide
        xm, dm = np.broadcast_arrays(np.atleast_1d(x / m), np.atleast_1d(d / m))
        rows = rt.decode_rows(xm, dm)
        ctx = np.broadcast_to(np.asarray(decode_ctx, dtype=float), rows.shape)
        ctx_rows = np.where(rows > 0, ctx * dm / np.maximum(rows, 1e-12), ctx)
        n = rows.shape[0]
        if bare:  # the rows as they are, then as the engine pads them, in one costing
            plen_rows = per_row(np.maximum(np.asarray(prompt_len, dtype=float), 1.0), n)
            it = self.micro_batch_times(np.concatenate((xm, xm)), np.concatenate((dm, rows)),
                                        np.concatenate((ctx, ctx_rows)), np.concatenate((plen_rows, plen_rows)))
            m_rows = np.concatenate((np.broadcast_to(m, (n,)),) * 2)
        else:
            it = self.micro_batch_times(xm, rows, ctx_rows, prompt_len)
            m_rows = m
        per = it.stage + it.p2p
        costed = np.maximum(per.sum(axis=0), m_rows * per.max(axis=0))
        gpus = [costed[:n], costed[n:]] if bare else [costed]  # (unpadded,) padded
        if self.lc.prefix is not None:  # the prompt tokens' host / NVMe loads (hidden or added)
            gpus = [self.lc.prefix.iteration_ms(g, x) for g in gpus]
        gpu = gpus[-1]
        plen = np.maximum(np.asarray(prompt_len, dtype=float), 1.0)
        running = d + np.ceil(x / plen)  # decoding sequences + the prompts being prefilled
        return gpus[:-1] + [gpu + r.exposed_ms(running, gpu) + r.pipeline_ms(running, m, self.lc.layout.pp)
                            for r in runtimes]
