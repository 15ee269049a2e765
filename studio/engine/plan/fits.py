"""What "fits" means, once: the plan of one layout and every row of the sweep ask these.

A layout fits for a batch when every stage holds its weights, activations and runtime with room
left for KV cache (:func:`memory_fit`), the cache holds the batch's sequences of ``isl + osl``
tokens, the attention heads split over TP, and a sequence is no longer than the model's context
window. The plan also says why not in words; the sweep marks the rows.
"""

from __future__ import annotations

import numpy as np

from studio.core import parallelism
from studio.core.architecture import LLMArchitecture
from studio.engine.step.costing import LayoutCosts


def memory_fit(lc: LayoutCosts, seq_len: int) -> tuple[np.ndarray, np.ndarray, int, int, float]:
    """KV pool per stage, KV bytes per sequence per stage, sequences and tokens the pool holds,
    and KV bytes per token per GPU of the most loaded stage."""
    pool = lc.usable - lc.weights - lc.activations - lc.overhead
    seq_bytes = lc.kv_seq_bytes(seq_len)
    per_tok = seq_bytes / seq_len
    with np.errstate(divide="ignore", invalid="ignore"):
        seqs = np.where(seq_bytes > 0, np.floor(np.maximum(pool, 0) / seq_bytes), np.inf)
        toks = np.where(per_tok > 0, np.floor(np.maximum(pool, 0) / per_tok), np.inf)
    max_seqs = int(min(seqs.min(), 10**9))
    cap_tokens = int(min(toks.min(), 10**12))
    return pool, seq_bytes, max_seqs, cap_tokens, float(per_tok.max())


def heads_split(model: LLMArchitecture, tp: int) -> bool:
    """Whether TP = ``tp`` splits ``model``'s attention heads (:func:`parallelism.heads_reason`)."""
    return parallelism.heads_reason(model, tp) is None


def fits(pool: np.ndarray, max_seqs: int, batch: np.ndarray | int, model: LLMArchitecture, tp: int,
         seq_len: int) -> np.ndarray:
    """Whether a layout with KV pool ``pool`` per stage and room for ``max_seqs`` sequences fits
    ``batch`` sequences (an array of batches gives an array) of ``seq_len`` tokens of ``model``
    at TP = ``tp``."""
    b = np.asarray(batch)
    ok = bool((pool > 0).all()) and max_seqs >= 1 and heads_split(model, tp) and seq_len <= model.max_context
    return ok & (b <= max_seqs)
