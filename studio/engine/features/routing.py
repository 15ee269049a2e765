"""MoE routing skew and expert-parallel load balancing (EPLB): how many token-expert pairs the most
loaded EP rank computes, relative to an even spread.

The plan's ``routing_skew`` is the hottest expert's share of a MoE layer's token-expert pairs over the
mean expert's (a property of the model and the traffic, the same whatever the EP size). The experts'
loads are taken as a power law ``l_i ∝ (i + 1)^-a`` whose ``a`` gives that max/mean.

* Without EPLB an EP rank holds a contiguous block of expert ids, whatever their loads; the most
  loaded rank is the one holding the hottest expert with average company.
* With EPLB (``presets/engines/effects.json`` ``eplb.algorithm``) the ``R`` redundant slots go one by
  one to the expert of highest load per replica, then the replicas are packed heaviest first onto
  the least loaded rank that has a free slot (every rank holds ``(E + R) / ep`` slots).

The result, the most loaded rank's pairs over the mean rank's, multiplies the FLOPs of the fused MoE
layer (``moe_imbalance_factor``); the redundant experts add ``R / E`` to each GPU's expert weights.
"""

from __future__ import annotations

import heapq
from functools import lru_cache

import numpy as np


@lru_cache(maxsize=256)
def expert_loads(experts: int, skew: float) -> tuple[float, ...]:
    """Loads of ``experts`` experts, mean 1, heaviest first, the heaviest ``skew`` × the mean
    (``skew`` is clipped to ``[1, experts]``)."""
    n = max(1, int(experts))
    s = min(max(float(skew), 1.0), float(n))
    ranks = np.arange(1, n + 1, dtype=float)
    if s <= 1.0 or n == 1:
        return tuple(np.ones(n))

    def ratio(a: float) -> float:
        w = ranks ** -a
        return float(w[0] / w.mean())

    lo, hi = 0.0, 1.0
    while ratio(hi) < s and hi < 1e3:
        hi *= 2.0
    for _ in range(80):
        mid = (lo + hi) / 2.0
        lo, hi = (mid, hi) if ratio(mid) < s else (lo, mid)
    w = ranks ** -((lo + hi) / 2.0)
    return tuple(w / w.mean())


def rank_skew_contiguous(experts: int, ep: int, skew: float) -> float:
    """Most loaded rank / mean rank without EPLB: the rank holding the hottest expert, with the
    mean load of the others for its other ``E/ep − 1`` experts."""
    loads = np.asarray(expert_loads(experts, skew))
    local = experts / max(ep, 1)
    if ep <= 1 or local <= 0:
        return 1.0
    rest = (loads.sum() - loads[0]) / max(experts - 1, 1)
    hot = loads[0] + max(local - 1.0, 0.0) * rest
    return float(max(hot / local, 1.0))


@lru_cache(maxsize=512)
def rank_skew_eplb(experts: int, ep: int, skew: float, redundant: int) -> float:
    """Most loaded rank / mean rank after EPLB's replicate-then-pack with ``redundant`` extra slots."""
    if ep <= 1:
        return 1.0
    loads = list(expert_loads(experts, skew))
    replicas = [1] * len(loads)
    heap = [(-w, i) for i, w in enumerate(loads)]
    heapq.heapify(heap)
    for _ in range(max(0, int(redundant))):
        _, i = heapq.heappop(heap)
        replicas[i] += 1
        heapq.heappush(heap, (-loads[i] / replicas[i], i))
    items = sorted((loads[i] / replicas[i] for i in range(len(loads)) for _ in range(replicas[i])), reverse=True)
    slots = -(-len(items) // ep)  # every rank holds the same number of slots (the last may be short)
    total = np.zeros(ep)
    used = np.zeros(ep, dtype=int)
    for w in items:
        free = np.flatnonzero(used < slots)
        r = int(free[np.argmin(total[free])])
        total[r] += w
        used[r] += 1
    return float(max(total.max() / total.mean(), 1.0))


def rank_skew(experts: int, ep: int, skew: float | None, eplb: bool, redundant: int) -> float:
    """The factor on the most loaded EP rank's token-expert pairs (1 = even)."""
    if skew is None or ep <= 1 or experts <= 1:
        return 1.0
    if eplb:
        return rank_skew_eplb(int(experts), int(ep), float(skew), int(redundant))
    return rank_skew_contiguous(int(experts), int(ep), float(skew))
