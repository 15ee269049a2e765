"""The steady state of many (prefill pool, decode pool) pairs at once, as arrays.

:func:`studio.engine.disagg.pools.serve` solves one pair of pools; a sweep pairs thousands. This
module solves them together: each row is one pair (a prefill worker curve, a decode worker curve at
its batch cap, ``x`` and ``y`` workers, the KV transfer time, the load), the closed loop is solved
on the same load grid dense near saturation, and every look-up is one vectorised interpolation over
all rows — the prefill curves share one load grid, the decode curves are padded to one width. The
figures are those of ``serve`` row by row (the same grid, the same interpolation).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from studio.engine.disagg.pools import _U, DecodeCurve, PrefillCurve
from studio.engine.step.records import frozen_result

#: Load-grid points solved at a time: a row leaves the closed loop once its users are placed.
CHUNK = 100
#: Rows solved in one block (bounds the (rows × load grid) arrays to a few tens of MB: ~72 MB at
#: the peak of the 1,024-GPU sweep's 27,000 rows; 1,024 rows a block cost ~20 % more time in
#: per-block numpy calls, and the figures of a row do not depend on its block).
BLOCK = 4096
LIMITERS = ("prefill", "decode", "kv-transfer")


@frozen_result
class PrefillTables:
    """Prefill curves stacked on their common load grid ``rho`` (shape (P, G))."""

    rho: np.ndarray
    own: np.ndarray
    residual: np.ndarray
    wait: np.ndarray
    mu: np.ndarray  # (P,)

    @classmethod
    def of(cls, curves: Sequence[PrefillCurve]) -> PrefillTables:
        rho = curves[0]._rho
        for c in curves[1:]:
            if c._rho.shape != rho.shape or not np.array_equal(c._rho, rho):
                raise ValueError("prefill curves must share one load grid")
        return cls(
            rho=rho,
            own=np.stack([c._own for c in curves]),
            residual=np.stack([c._residual for c in curves]),
            wait=np.stack([c._wait for c in curves]),
            mu=np.array([c.mu for c in curves], dtype=float),
        )

    def times(self, idx: np.ndarray, lam: np.ndarray, scv: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(own prefill ms, queue wait ms) of rows using curve ``idx`` (N,) at ``lam`` (N, K)."""
        rho = np.clip(lam / self.mu[idx][:, None], 0.0, self.rho[-1])
        g = self.rho
        j = np.clip(np.searchsorted(g, rho, side="right") - 1, 0, g.size - 2)
        x0, x1 = g[j], g[j + 1]
        at = idx[:, None] * g.size + j  # flat positions in a (P, G) table
        top = rho >= g[-1]

        def look(table: np.ndarray) -> np.ndarray:
            flat = table.ravel()
            f0, f1 = flat.take(at), flat.take(at + 1)
            out = (f1 - f0) / (x1 - x0) * (rho - x0) + f0
            return np.where(top, table[idx, -1][:, None], out)

        own = look(self.own)
        wait = np.maximum(look(self.residual), look(self.wait))
        return own, scv[:, None] * wait


@frozen_result
class DecodeTables:
    """Decode curves padded to one width (shape (D, M); the last value repeated)."""

    seqs: np.ndarray
    tpot: np.ndarray
    rate0: np.ndarray  # (D, M + 1): 0 then the curve's rates
    seqs0: np.ndarray  # (D, M + 1): 0 then the curve's sequences
    mu: np.ndarray  # (D,)
    decode_iters: float

    @classmethod
    def of(cls, curves: Sequence[DecodeCurve]) -> DecodeTables:
        m = max(c.seqs.size for c in curves)

        def pad(a: np.ndarray) -> np.ndarray:
            return np.concatenate((a, np.full(m - a.size, a[-1])))

        seqs = np.stack([pad(c.seqs) for c in curves])
        rate = np.stack([pad(c.rate) for c in curves])
        zero = np.zeros((len(curves), 1))
        return cls(
            seqs=seqs,
            tpot=np.stack([pad(c.tpot) for c in curves]),
            rate0=np.hstack((zero, rate)),
            seqs0=np.hstack((zero, seqs)),
            mu=rate[:, -1].copy(),
            decode_iters=curves[0].decode_iters,
        )

    def at(self, idx: np.ndarray, lam: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(decoding sequences, TPOT ms) of rows using curve ``idx`` (N,) at ``lam`` (N, K)."""
        d = interp_rows(lam, self.rate0[idx], self.seqs0[idx])
        return d, interp_rows(np.maximum(d, 1.0), self.seqs[idx], self.tpot[idx])


def interp_rows(x: np.ndarray, xp: np.ndarray, fp: np.ndarray) -> np.ndarray:
    """``np.interp(x[i], xp[i], fp[i])`` for every row ``i`` (``xp`` rows non-decreasing)."""
    n, m = xp.shape
    lo, hi = xp[:, :1], xp[:, -1:]
    span = np.where(hi > lo, hi - lo, 1.0)
    base = np.arange(n, dtype=float)[:, None] * 4.0
    keys = ((xp - lo) / span + base).ravel()
    q = np.clip((x - lo) / span, 0.0, 1.0) + base
    start = np.arange(n)[:, None] * m
    j = np.searchsorted(keys, q.ravel(), side="right").reshape(x.shape) - 1
    at = np.clip(j - start, 0, m - 2) + start  # flat position of each bracket's left end
    xf, ff = xp.ravel(), fp.ravel()
    x0, x1 = xf.take(at), xf.take(at + 1)
    f0, f1 = ff.take(at), ff.take(at + 1)
    dx = x1 - x0
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(dx > 0, (f1 - f0) / np.where(dx > 0, dx, 1.0) * (x - x0) + f0, f0)
    out = np.where(x >= hi, fp[:, -1:], out)
    return np.where(x < lo, fp[:, :1], out)


@frozen_result
class ManyStates:
    """Steady state of each row (arrays shaped (N,)); rates in requests per ms over all workers."""

    rate: np.ndarray
    ttft: np.ndarray
    tpot: np.ndarray
    saturated: np.ndarray
    limiter: np.ndarray  # index into LIMITERS


def serve_many(
    pt: PrefillTables,
    p_idx: np.ndarray,
    dt: DecodeTables,
    d_idx: np.ndarray,
    x: np.ndarray,
    y: np.ndarray,
    transfer_ms: np.ndarray,
    *,
    users: np.ndarray | None = None,
    rate_per_ms: float | None = None,
    poisson: bool = True,
) -> ManyStates:
    """:func:`~studio.engine.disagg.pools.serve` for every row: prefill curve ``p_idx``, decode
    curve ``d_idx``, ``x`` / ``y`` workers, ``transfer_ms``; a closed loop of ``users`` (N,) or an
    open loop at ``rate_per_ms`` (all workers, every row)."""
    n = p_idx.size
    parts = [
        _block(pt, dt, slice(s, min(s + BLOCK, n)), p_idx, d_idx, x, y, transfer_ms,
               users, rate_per_ms, poisson)
        for s in range(0, n, BLOCK)
    ]
    if not parts:
        e = np.zeros(0)
        return ManyStates(e, e, e, e.astype(bool), e.astype(int))
    return ManyStates(*(np.concatenate([getattr(p, f) for p in parts]) for f in
                        ("rate", "ttft", "tpot", "saturated", "limiter")))


def _block(
    pt: PrefillTables,
    dt: DecodeTables,
    s: slice,
    p_idx: np.ndarray,
    d_idx: np.ndarray,
    x_all: np.ndarray,
    y_all: np.ndarray,
    tr_all: np.ndarray,
    users: np.ndarray | None,
    rate_per_ms: float | None,
    poisson: bool,
) -> ManyStates:
    pi, di = p_idx[s], d_idx[s]
    x, y, tr = x_all[s].astype(float), y_all[s].astype(float), tr_all[s].astype(float)
    with np.errstate(divide="ignore"):
        caps = np.stack((x * pt.mu[pi], y * dt.mu[di], np.where(tr > 0, x / tr, np.inf)), axis=1)
    limiter = np.argmin(caps, axis=1)
    cap = caps[np.arange(caps.shape[0]), limiter]
    grid = cap[:, None] * np.concatenate(([1e-9], _U))[None, :]
    scv = 1.0 / x if poisson else np.zeros_like(x)
    xc, yc = x[:, None], y[:, None]
    if rate_per_ms is not None:
        r = np.full((x.size, 1), float(rate_per_ms))
        sat = r[:, 0] >= cap * 0.9999
        r = np.minimum(r, grid[:, -1:])
        extra = np.zeros_like(r)
    else:
        assert users is not None
        n_users = np.asarray(users, dtype=float)[s]
        r1, held_last = _closed_loop(pt, dt, pi, di, cap, grid, x, y, scv, tr, n_users)
        r = r1[:, None]
        sat = n_users > held_last
        extra = np.where(sat, (n_users - held_last) / grid[:, -1], 0.0)[:, None]
    own_r, wait_r = pt.times(pi, r / xc, scv)
    _, tpot_r = dt.at(di, r / yc)
    ttft_r = own_r + (wait_r + extra) + tr[:, None]
    return ManyStates(
        rate=r[:, 0], ttft=ttft_r[:, 0], tpot=tpot_r[:, 0], saturated=np.asarray(sat, dtype=bool),
        limiter=limiter,
    )


def _unique_rows(idx: np.ndarray, cap: np.ndarray, workers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(first row of each distinct (curve, capacity, workers), each row's position among them)."""
    order = np.lexsort((workers, cap, idx))  # stable: a group's first row is its first occurrence
    i, c, w = idx[order], cap[order], workers[order]
    new = np.ones(order.size, dtype=bool)
    new[1:] = (i[1:] != i[:-1]) | (c[1:] != c[:-1]) | (w[1:] != w[:-1])
    group = np.cumsum(new) - 1
    inv = np.empty(order.size, dtype=np.intp)
    inv[order] = group
    return order[new], inv


def _closed_loop(
    pt: PrefillTables,
    dt: DecodeTables,
    pi: np.ndarray,
    di: np.ndarray,
    cap: np.ndarray,
    grid: np.ndarray,
    x: np.ndarray,
    y: np.ndarray,
    scv: np.ndarray,
    tr: np.ndarray,
    n: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """(rate, users held at saturation) of each row's closed loop of ``n`` users: the rate where
    the users the pools hold (``max`` so far of ``rate · end-to-end latency`` along the load grid)
    reach ``n``, linear between grid points as ``np.interp``. The grid is walked :data:`CHUNK`
    points at a time and a row stops once it is placed (its held users at saturation are then
    ``inf``: more than ``n``); a row never placed runs at the grid's last rate."""
    rows = n.size
    r = np.empty(rows)
    held_last = np.full(rows, np.inf)
    run = np.full(rows, -np.inf)  # users held up to the previous chunk
    active = np.arange(rows)
    for lo in range(0, grid.shape[1], CHUNK):
        if active.size == 0:
            break
        a = active
        g = grid[a, lo : lo + CHUNK]
        # rows sharing a curve, a capacity and a worker count read the same values: look each up once
        up, inv_p = _unique_rows(pi[a], cap[a], x[a])
        sel = a[up]
        own_u, wait_u = pt.times(pi[sel], g[up] / x[sel][:, None], scv[sel])
        ud, inv_d = _unique_rows(di[a], cap[a], y[a])
        sel = a[ud]
        tpot = dt.at(di[sel], g[ud] / y[sel][:, None])[1][inv_d]
        e2e = own_u[inv_p] + wait_u[inv_p] + tr[a][:, None] + dt.decode_iters * tpot
        held = np.maximum(np.maximum.accumulate(g * e2e, axis=1), run[a][:, None])
        above = held > n[a][:, None]
        found = above.any(axis=1)
        f = np.flatnonzero(found)
        c = above[f].argmax(axis=1)  # first grid point holding more than n users
        h1, g1 = held[f, c], g[f, c]
        back = np.maximum(c - 1, 0)
        h0 = np.where(c > 0, held[f, back], run[a[f]])
        g0 = np.where(c > 0, g[f, back], grid[a[f], max(lo - 1, 0)])
        nn = n[a[f]]
        with np.errstate(invalid="ignore", divide="ignore"):
            between = (g1 - g0) / (h1 - h0) * (nn - h0) + g0
        r[a[f]] = np.where((c == 0) & (lo == 0), g1, between)
        run[a] = held[:, -1]
        active = a[~found]
    r[active] = grid[active, -1]
    held_last[active] = run[active]
    return r, held_last
