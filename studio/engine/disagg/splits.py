"""How many prefill and decode workers a split of the drawn GPUs can hold, and which GPUs each
worker of a placed pool gets: the worker counts of every prefill:decode ratio that fits (in closed
form over the ratio grid), and a pool's GPU groups built only for the workers read."""

from __future__ import annotations

from collections.abc import Sequence
from typing import overload

import numpy as np

from studio.core.serving_mode import PoolLayout


def worker_splits(
    p: PoolLayout, d: PoolLayout, budget_p: int, budget_d: int, shared: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Every prefill:decode worker ratio a:b (coprime) that fits, each at the largest multiple
    k·a : k·b the GPUs allow (per-GPU figures hardly change with the multiple; using more of the
    drawn GPUs is what a deployment does). ``shared``: both pools draw on the same GPUs.

    In closed form over the whole (a, b) grid: ``k = ⌊budget / (a·g_p + b·g_d)⌋`` on shared GPUs,
    else the smaller of the two pools' quotients; a ratio fits when ``k ≥ 1``."""
    gp, gd = p.gpus_per_worker, d.gpus_per_worker
    if (p.ep > 1 and p.tp % p.ep) or (d.ep > 1 and d.tp % d.ep):
        walk = _splits_walk(p, d, budget_p, budget_d, shared)
        return np.array([w[2] for w in walk], dtype=int), np.array([w[3] for w in walk], dtype=int)
    a = np.arange(1, budget_p // gp + 1)[:, None]
    b = np.arange(1, budget_d // gd + 1)[None, :]
    if a.size == 0 or b.size == 0:
        return np.zeros(0, dtype=int), np.zeros(0, dtype=int)
    if shared:
        k = budget_p // (a * gp + b * gd)
    else:
        k = np.minimum(budget_p // (a * gp), budget_d // (b * gd))
    ia, ib = np.nonzero((k >= 1) & (np.gcd(a, b) == 1))
    kk = k[ia, ib]
    return (ia + 1) * kk, (ib + 1) * kk


def _splits_walk(
    p: PoolLayout, d: PoolLayout, budget_p: int, budget_d: int, shared: bool
) -> list[tuple]:
    """:func:`worker_splits` one ratio at a time, for expert parallelism that does not divide TP (a
    worker count must then keep ``TP·x`` a multiple of EP)."""
    from math import gcd

    gp, gd = p.gpus_per_worker, d.gpus_per_worker

    def fits(x: int, y: int) -> bool:
        if (p.ep > 1 and (p.tp * x) % p.ep) or (d.ep > 1 and (d.tp * y) % d.ep):
            return False
        if shared:
            return x * gp + y * gd <= budget_p
        return x * gp <= budget_p and y * gd <= budget_d

    out = []
    for a in range(1, budget_p // gp + 1):
        for b in range(1, budget_d // gd + 1):
            if gcd(a, b) != 1 or not fits(a, b):
                continue
            k = 1
            while fits((k + 1) * a, (k + 1) * b):
                k += 1
            out.append((p, d, k * a, k * b))
    return out


class WorkerGroups(Sequence[list[list[str]]]):
    """``Layout.gpu_groups`` of a pool, worker by worker, built only for the workers read."""

    def __init__(self, placement: tuple[str, ...], tp: int, pp: int) -> None:
        self._placement, self._tp, self._pp = placement, tp, pp

    def __len__(self) -> int:
        return len(self._placement) // (self._tp * self._pp)

    @overload
    def __getitem__(self, i: int) -> list[list[str]]: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[list[list[str]]]: ...
    def __getitem__(self, i: int | slice) -> list[list[str]] | Sequence[list[list[str]]]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if not 0 <= i < len(self):
            raise IndexError(i)
        tp, base = self._tp, i * self._pp * self._tp  # rank (d·pp + s)·tp + t
        return [list(self._placement[base + s * tp : base + (s + 1) * tp]) for s in range(self._pp)]
