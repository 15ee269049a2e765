"""Dual-batch overlap (vLLM ``enable_dbo``, SGLang ``enable_two_batch_overlap``): a step is split
into two halves so that one half's expert all-to-all runs while the other half computes.

Per stage, with ``C``, ``R``, ``P`` and ``A`` the compute, all-reduce, context-parallel and all-to-all
times of the two halves together (each half costed at its own size, so the GEMMs read their weights
twice: the overhead of splitting)::

    overlapped stage = C + R + P + max(0, A − C)

against ``C₁ + R₁ + P₁ + A₁`` for the whole batch in one pass. An engine splits only a step of at
least its threshold of tokens (``presets/engines/effects.json`` ``dual_batch_overlap``); smaller steps
run whole.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from studio.engine.step.iteration import IterationTimes


def overlapped(whole: IterationTimes, half: IterationTimes, split: np.ndarray) -> IterationTimes:
    """The step's times with the rows where ``split`` is true run as two overlapped halves
    (``half`` = the times of one half)."""
    comp = 2.0 * half.compute
    ar = 2.0 * half.allreduce
    cp = 2.0 * half.cp
    exposed = np.maximum(2.0 * half.alltoall - comp, 0.0)
    return whole.replace(
        compute=np.where(split, comp, whole.compute),
        allreduce=np.where(split, ar, whole.allreduce),
        cp=np.where(split, cp, whole.cp),
        alltoall=np.where(split, exposed, whole.alltoall),
    )


def split_rows(prefill_tokens: np.ndarray, decode_tokens: np.ndarray, decode_threshold: float,
               prefill_threshold: float) -> np.ndarray:
    """Rows an engine splits: a decode-only step of at least ``decode_threshold`` tokens, a step
    with prompt tokens of at least ``prefill_threshold``."""
    tokens = prefill_tokens + decode_tokens
    return np.where(prefill_tokens > 0, tokens >= prefill_threshold, decode_tokens >= decode_threshold)
