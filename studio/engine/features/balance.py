"""Data-parallel load balancing and the attention-DP ranks of one expert-parallel group.

When the EP group spans ``n`` data-parallel ranks (``ep > tp``), every MoE layer's all-to-all waits
for all of them, so a step takes the time of the rank with the most running sequences. The plan
costs every rank at the mean batch, which is what a load-aware balancer keeps (vLLM internal / hybrid,
SGLang total_requests / total_tokens: the least loaded rank takes the next request). A balancer
blind to the ranks' loads (SGLang round_robin or follow_bootstrap_room, vLLM external) leaves each
rank's count varying like a Poisson count about the mean ``d``: the busiest of ``n`` holds about
``d + z_n·√d``, ``z_n`` the expected largest of ``n`` standard normals.
"""

from __future__ import annotations

import numpy as np

from studio.engine.features.data import figure
from studio.engine.step.kernels import _max_normal


def is_blind(mode: str | None) -> bool:
    """Whether ``mode`` places requests without looking at the ranks' loads."""
    return mode is not None and mode in set(figure("load_balance", "blind"))


def busiest(decode_seqs: np.ndarray, ranks: int) -> np.ndarray:
    """Running sequences of the busiest of ``ranks`` ranks whose mean is ``decode_seqs``."""
    d = np.asarray(decode_seqs, dtype=float)
    if ranks <= 1:
        return d
    return d + _max_normal(int(ranks)) * np.sqrt(np.maximum(d, 0.0))
