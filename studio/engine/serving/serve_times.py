"""Latency and throughput of a replica at a given batch, vectorised over rows (a sweep's
candidates, or one plan): the closed loop of :mod:`studio.engine.serving.load` on the iteration
model, with the step times behind it.
"""

from __future__ import annotations

import numpy as np

from studio.engine.serving.load import closed_loop
from studio.engine.step.constants import Constants
from studio.engine.step.costing import LayoutCosts
from studio.engine.step.iteration import IterationModel
from studio.engine.step.records import Record
from studio.engine.step.step_times import StepTimes, step_times


class ServeTimes(Record):
    """Latency and throughput per row (arrays shaped (N,)), and the step times behind them."""

    ttft_ms: np.ndarray
    tpot_ms: np.ndarray
    request_ms: np.ndarray
    prefill_round_ms: np.ndarray
    tokens_per_s_replica: np.ndarray
    steps: StepTimes  # for the unique micro-batch sizes
    index: np.ndarray  # row -> column of ``steps``
    one: int  # column of ``steps`` holding a micro-batch of one sequence
    decode_allreduce_ms: np.ndarray  # per row, all stages, one decode round
    iteration_ms: np.ndarray  # mean scheduler iteration under the load
    decode_seqs: np.ndarray  # sequences decoding in a mean iteration
    prefill_tokens: np.ndarray  # prompt tokens in a mean iteration
    budget_bound: np.ndarray  # the token budget limits the decoding sequences


def serve_times(lc: LayoutCosts, batch: np.ndarray, micro_batches: np.ndarray, isl: int, osl: int,
                c: Constants, budget: float | None = None, cached: float = 0.0) -> ServeTimes:
    """Steady state of continuous batching with ``batch`` sequences per replica (a closed loop of
    that many users; see :func:`studio.engine.serving.load.closed_loop`).

    * TPOT = the mean scheduler iteration: the decode token of every decoding sequence plus the
      prompt chunks of the requests that replace finished ones (prefill interference);
    * TTFT = the iterations that carry the new prompt (+ waiting for token budget when it binds);
    * throughput per replica = batch × osl / end-to-end latency (Little's law).
    """
    B = np.asarray(batch, dtype=float)
    M = np.asarray(micro_batches, dtype=float)
    mb = np.ceil(B / M)
    uniq, inv = np.unique(np.concatenate((mb, [1.0])), return_inverse=True)
    one = int(inv[-1])
    inv = inv[:-1]
    st = step_times(lc, uniq, isl, osl, c, cached)
    pf = st.prefill_stage + st.prefill_p2p
    pf_round = np.maximum(pf.sum(axis=0)[inv], M * pf.max(axis=0)[inv])
    k = float(budget if budget is not None else c.max_num_batched_tokens)
    ss = closed_loop(IterationModel(lc, c), B, M, isl, osl, k, cached=cached)
    ar = (st.decode_allreduce + st.decode_alltoall).sum(axis=0)[inv] * np.maximum(1.0, M / max(1, lc.layout.pp))
    return ServeTimes(ttft_ms=ss.ttft_ms, tpot_ms=ss.tpot_ms, request_ms=ss.e2e_ms, prefill_round_ms=pf_round,
                      tokens_per_s_replica=ss.output_tokens_per_s, steps=st, index=inv, one=one,
                      decode_allreduce_ms=ar, iteration_ms=ss.iteration_ms, decode_seqs=ss.decode_seqs,
                      prefill_tokens=ss.prefill_tokens, budget_bound=ss.budget_bound)
