"""The two pools of disaggregated serving as queueing curves built from the iteration model.

* :class:`PrefillCurve`: one prefill worker runs prompt-only iterations of up to the token budget
  ``K`` (``⌊K / ISL⌋`` whole prompts, or one prompt in ``⌈ISL / K⌉`` chunks). Its capacity is
  ``μ_p = prompts per full iteration / (chunks × full-iteration time)``. At a rate ``λ`` per worker
  the prompts that arrive while a batch runs form the next one (``k = λ·T(k)`` prompts, between one
  and a full iteration); a prompt runs in such a batch and waits the larger of half a batch (when it
  finds the worker busy) and the M/D/c wait near saturation (:func:`studio.engine.serving.load.mdc_waits_ms`,
  ``c`` = prompts per iteration, ``ρ = λ / μ_p``), scaled by the variability of the worker's
  arrivals (a round-robin router over ``x`` workers: ``1/x`` of Poisson's). The request simulation
  (:mod:`studio.engine.disagg.simulate`) checks these means.
* :class:`DecodeCurve`: one decode worker runs decode-only iterations of ``D`` sequences — no
  prompt chunk ever joins them (no prefill interference). ``TPOT = t(D)``; it sustains
  ``D / ((OSL − 1) · t(D))`` requests per ms; its capacity is that rate at ``D`` = the sequences its
  KV cache and ``max_batch`` allow.

Both call :class:`~studio.engine.step.iteration.IterationModel.round_ms` — the same per-iteration
model (compute / memory roofline, collectives over the drawn links) aggregated serving uses.
"""

from __future__ import annotations

import math
from functools import cached_property

import numpy as np

from studio.engine.serving.load import mdc_waits_ms
from studio.engine.step.iteration import IterationModel
from studio.engine.step.records import frozen_result

#: Points of the batch-time curve ``T(k)`` (k prompts per batch, 1 … prompts per iteration) the
#: gated-batch fixed point is solved on: linear between them, ``k`` is within ~1e-4 of ``λ·T(k)``.
BATCH_GRID = 257


def least_fixed_point(lam: np.ndarray, k_grid: np.ndarray, t_grid: np.ndarray) -> np.ndarray:
    """The least ``k`` in ``[k_grid[0], k_grid[-1]]`` with ``k = λ·T(k)`` at each rate ``λ``, ``T``
    linear between the points ``(k_grid, t_grid)``; ``k_grid[0]`` when ``λ·T`` is at or below it
    there, ``k_grid[-1]`` when ``λ·T`` stays above ``k`` all the way.

    This is where the gated-batch iteration ``k ← clip(λ·T(k), k_grid[0], k_grid[-1])`` started at
    ``k_grid[0]`` converges (``T`` grows with ``k``, so the iterates rise to the first crossing),
    solved in closed form on each segment: near saturation (``λ·T′ ≈ 1``) the iteration needs
    hundreds of rounds, and 30 of them stopped up to a third short of it.
    """
    # λ·T(k) ≤ k where λ ≤ k / T(k): the first such grid point is the first where the running
    # maximum of k / T(k) reaches λ, found by bisection for every λ at once
    reach = np.maximum.accumulate(k_grid / t_grid)
    first = np.searchsorted(reach, lam, side="left")
    never = first == k_grid.size
    k = np.where(never, k_grid[-1], k_grid[0])
    inside = ~never & (first > 0)
    j = first[inside]
    lo, hi = k_grid[j - 1], k_grid[j]
    g0 = lam[inside] * t_grid[j - 1] - lo  # λ·T − k at both ends of the segment: > 0, then ≤ 0
    g1 = lam[inside] * t_grid[j] - hi
    k[inside] = np.clip(lo + g0 * (hi - lo) / np.maximum(g0 - g1, 1e-300), lo, hi)
    return k
#: Fractions of saturation the closed loop is solved on: 0 … 0.9999, dense near 1.
_U = (1.0 - np.logspace(-4, 0, 400)[::-1])[1:]


@frozen_result
class PrefillCurve:
    """Latency and capacity of one prefill worker (times in ms, rates in requests per ms)."""

    im: IterationModel
    isl: float
    budget: float
    slots: int  # prompts per full iteration
    chunks: int  # iterations one prompt needs (> 1 when ISL > budget)
    micro_batches: float
    full_ms: float  # one full iteration
    mu: float  # capacity, requests per ms

    @classmethod
    def build(
        cls, im: IterationModel, isl: float, budget: float, kv_prompts: int, micro_batches: float
    ) -> PrefillCurve:
        """``kv_prompts``: prompts of ISL tokens the worker's KV cache holds at once."""
        L = float(isl)
        slots, chunks, full = cls._capacity(im, L, budget, kv_prompts, micro_batches)
        return cls(
            im=im,
            isl=L,
            budget=budget,
            slots=slots,
            chunks=chunks,
            micro_batches=float(micro_batches),
            full_ms=full,
            mu=slots / (chunks * full),
        )

    @cached_property
    def single_ms(self) -> float:
        """One prompt alone, all its chunks (computed when first read: a sweep never reads it)."""
        return self._alone(self.im, self.isl, self.budget, self.chunks, self.micro_batches)

    @staticmethod
    def head(
        im: IterationModel, isl: float, budget: float, kv_prompts: int, micro_batches: float
    ) -> tuple[int, int, float, float]:
        """(prompts per full iteration, iterations per prompt, full-iteration ms, one prompt alone ms)
        of :meth:`build`, without its load tables: the capacity is ``slots / (chunks · full)``."""
        slots, chunks, full = PrefillCurve._capacity(im, isl, budget, kv_prompts, micro_batches)
        return slots, chunks, full, PrefillCurve._alone(im, isl, budget, chunks, micro_batches)

    @staticmethod
    def _capacity(
        im: IterationModel, isl: float, budget: float, kv_prompts: int, micro_batches: float
    ) -> tuple[int, int, float]:
        L = float(isl)
        chunks = max(1, math.ceil(L / budget))
        slots = max(1, min(int(budget // L), max(kv_prompts, 1))) if L <= budget else 1
        m = np.array([float(micro_batches)])
        return slots, chunks, float(im.round_ms(min(slots * L, budget), 0.0, L, L, m)[0])

    @staticmethod
    def _alone(im: IterationModel, isl: float, budget: float, chunks: int, micro_batches: float) -> float:
        L = float(isl)
        m = np.array([float(micro_batches)])
        return float(im.round_ms(min(L, budget), 0.0, L, L, m)[0]) * chunks

    # the load tables are built on first read: a sweep that ranks a worker by its capacity (``mu``)
    # alone never pays for them
    @property
    def _rho(self) -> np.ndarray:
        return self._tables[0]

    @property
    def _k(self) -> np.ndarray:
        return self._tables[1]

    @property
    def _own(self) -> np.ndarray:
        return self._tables[2]

    @property
    def _residual(self) -> np.ndarray:
        return self._tables[3]

    @property
    def _wait(self) -> np.ndarray:
        return self._tables[4]

    @cached_property
    def _tables(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(load grid ρ, prompts per batch, own prefill ms, residual wait ms, M/D/c wait ms)."""
        # batch size, own prefill and waits tabulated once on a load grid dense near saturation; a
        # sweep then reads them by interpolation
        rho = np.concatenate(([0.0], (1.0 - np.logspace(-6, 0, 600))[::-1][1:]))
        lam = rho * self.mu
        one = min(self.isl, self.budget)
        m = self.micro_batches

        def batch_ms(k: np.ndarray) -> np.ndarray:  # k prompts (continuous), all their chunks
            return self.chunks * self.im.round_ms(k * one, 0.0, self.isl, self.isl, np.full(k.shape, m))

        # gated batches: the prompts that arrive while a batch runs form the next one, k = λ·T(k)
        if self.slots > 1:
            grid = np.linspace(1.0, float(self.slots), BATCH_GRID)
            k = least_fixed_point(lam, grid, batch_ms(grid))
        else:
            k = np.ones_like(rho)
        t = batch_ms(k)
        busy = np.minimum(1.0, lam * t / k)
        # a Poisson arrival finds the worker busy with probability `busy` and waits half a batch;
        # near saturation prompts also queue beyond one batch (M/D/c, c = prompts per batch)
        residual = busy * 0.5 * t
        wait = mdc_waits_ms(rho, float(self.slots), self.chunks * self.full_ms)
        return rho, k, t, residual, wait

    def times(
        self, lam: np.ndarray, arrival_scv: float = 1.0
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(own prefill ms, queue wait ms, prompts per batch) at ``lam`` requests per ms per worker.

        Own prefill = the batch the prompt runs in (``k`` prompts, ``k = λ·T(k)`` between one and the
        prompts an iteration holds). The wait is the larger of half a batch when the worker is busy
        on arrival and the M/D/c wait near saturation, scaled by the squared coefficient of variation
        of the worker's arrivals (Kingman): 1 for Poisson arrivals at one worker, ``1/x`` when a
        round-robin router spreads them over ``x`` workers, 0 for evenly spaced arrivals."""
        lam = np.atleast_1d(np.asarray(lam, dtype=float))
        rho = np.clip(lam / self.mu, 0.0, self._rho[-1])
        own = np.interp(rho, self._rho, self._own)
        k = np.interp(rho, self._rho, self._k)
        wait = np.maximum(
            np.interp(rho, self._rho, self._residual), np.interp(rho, self._rho, self._wait)
        )
        return own, arrival_scv * wait, k


@frozen_result
class DecodeCurve:
    """TPOT and capacity of one decode worker: decode-only iterations of ``D`` sequences."""

    seqs: np.ndarray  # grid of decoding sequences
    tpot: np.ndarray  # ms per output token at each (the iteration / tokens per step)
    rate: np.ndarray  # requests per ms sustained at each (non-decreasing)
    cap: int  # most sequences (KV cache, max_batch)
    decode_iters: float  # OSL − 1

    @classmethod
    def build(
        cls, im: IterationModel, isl: float, osl: float, cap: int, micro_batches: float
    ) -> DecodeCurve:
        cap = max(1, int(cap))
        grid = np.sort(
            np.concatenate((np.geomspace(1.0, cap, min(cap, 96)).round(), [1.0, float(cap)]))
        )
        grid = grid[np.concatenate(([True], grid[1:] != grid[:-1]))]  # np.unique without numpy.ma
        ctx = float(isl) + float(osl) / 2.0
        # one iteration emits tokens_per_step tokens per sequence (1; more with speculation)
        t = im.round_ms(0.0, grid, ctx, float(isl), np.full(grid.shape, float(micro_batches))) / im.tokens_per_step
        o1 = max(float(osl) - 1.0, 0.0)
        rate = grid / (max(o1, 1.0) * t) if o1 > 0 else np.full(grid.shape, np.inf)
        return cls(seqs=grid, tpot=t, rate=np.maximum.accumulate(rate), cap=cap, decode_iters=o1)

    def capped(self, cap: int) -> DecodeCurve:
        """The same worker running at most ``cap`` sequences (≤ its own cap)."""
        cap = max(1, min(int(cap), self.cap))
        keep = self.seqs < cap
        t_cap = float(np.interp(cap, self.seqs, self.tpot))
        seqs = np.concatenate((self.seqs[keep], [float(cap)]))
        tpot = np.concatenate((self.tpot[keep], [t_cap]))
        o1 = self.decode_iters
        rate = seqs / (max(o1, 1.0) * tpot) if o1 > 0 else np.full(seqs.shape, np.inf)
        return DecodeCurve(
            seqs=seqs, tpot=tpot, rate=np.maximum.accumulate(rate), cap=cap, decode_iters=o1
        )

    @property
    def mu(self) -> float:
        """Capacity, requests per ms."""
        return float(self.rate[-1])

    def at(self, lam: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(decoding sequences, TPOT ms) at ``lam`` requests per ms per worker (below capacity)."""
        lam = np.atleast_1d(np.asarray(lam, dtype=float))
        if self.decode_iters == 0:
            return np.zeros_like(lam), np.full(lam.shape, float(self.tpot[0]))
        d = np.interp(lam, np.concatenate(([0.0], self.rate)), np.concatenate(([0.0], self.seqs)))
        t = np.interp(np.maximum(d, 1.0), self.seqs, self.tpot)
        return d, t


@frozen_result
class ServeState:
    """Steady state of the two pools (arrays shaped (N,)); rates in requests per ms over all workers."""

    rate: np.ndarray
    ttft: np.ndarray
    prefill_ms: np.ndarray  # the prefill batch the prompt runs in
    queue_ms: np.ndarray  # prefill queue + users waiting beyond saturation
    tpot: np.ndarray
    e2e: np.ndarray
    decode_seqs: np.ndarray  # per decode worker
    prefill_util: np.ndarray
    decode_util: np.ndarray
    saturated: np.ndarray  # bool
    capacity: float  # requests per ms: the slower pool (or the transfer)
    limiter: str  # "prefill", "decode" or "kv-transfer"


def capacity(
    pf: PrefillCurve, dc: DecodeCurve, x: int, y: int, transfer_ms: float
) -> tuple[float, str]:
    """Requests per ms the two pools sustain together and which one limits it.

    The transfer bound assumes each prefill worker sends one request's KV at a time."""
    caps = {
        "prefill": x * pf.mu,
        "decode": y * dc.mu,
        "kv-transfer": x / transfer_ms if transfer_ms > 0 else np.inf,
    }
    limiter = min(caps, key=lambda k: caps[k])
    return float(caps[limiter]), limiter


def serve(
    pf: PrefillCurve,
    dc: DecodeCurve,
    x: int,
    y: int,
    transfer_ms: float,
    *,
    users: np.ndarray | None = None,
    rate_per_ms: float | None = None,
    poisson: bool = True,
) -> ServeState:
    """Steady state of ``x`` prefill and ``y`` decode workers under a closed loop of ``users``
    (array; all workers) or an open loop at ``rate_per_ms`` (all workers).

    Closed loop: the rate ``r`` solves ``users = r · (TTFT(r) + (OSL − 1) · TPOT(r))`` (Little's law)
    on a grid dense near saturation; users beyond what the pools hold at saturation wait, and their
    wait counts in TTFT. Open loop at or above saturation: figures at saturation, ``saturated`` set.
    """
    cap, limiter = capacity(pf, dc, x, y, transfer_ms)
    grid = cap * np.concatenate(([1e-9], _U))
    scv = 1.0 / x if poisson else 0.0  # round-robin over x workers: Erlang-x gaps at each
    own, wait, _ = pf.times(grid / x, scv)
    d, tpot = dc.at(grid / y)
    ttft = own + wait + transfer_ms
    e2e = ttft + dc.decode_iters * tpot
    if rate_per_ms is not None:
        r = np.array([float(rate_per_ms)])
        sat = r >= cap * 0.9999
        r = np.minimum(r, grid[-1])
        extra = np.zeros(1)
    else:
        n_users = np.atleast_1d(np.asarray(users, dtype=float))
        held = np.maximum.accumulate(grid * e2e)  # users the pools hold at each rate
        r = np.interp(n_users, held, grid)
        sat = n_users > held[-1]
        extra = np.where(sat, (n_users - held[-1]) / grid[-1], 0.0)
    own_r, wait_r, _ = pf.times(r / x, scv)
    d_r, tpot_r = dc.at(r / y)
    queue = wait_r + extra
    ttft_r = own_r + queue + transfer_ms
    return ServeState(
        rate=r,
        ttft=ttft_r,
        prefill_ms=own_r,
        queue_ms=queue,
        tpot=tpot_r,
        e2e=ttft_r + dc.decode_iters * tpot_r,
        decode_seqs=d_r,
        prefill_util=np.minimum(r / (x * pf.mu), 1.0),
        decode_util=np.minimum(r / (y * dc.mu), 1.0),
        saturated=np.asarray(sat, dtype=bool),
        capacity=cap,
        limiter=limiter,
    )


def balanced_ratio(pf: PrefillCurve, dc: DecodeCurve) -> float:
    """Prefill workers per decode worker at which both pools saturate together: ``μ_d / μ_p``."""
    return dc.mu / pf.mu if pf.mu > 0 else float("inf")


def best_split(
    pf: PrefillCurve,
    dc: DecodeCurve,
    gpus_p: int,
    gpus_d: int,
    budget_p: int,
    budget_d: int,
    budget_total: int,
    transfer_ms: float,
) -> tuple[int, int, float]:
    """The integer ``(x, y)`` with the most requests per ms per GPU at saturation within the GPU
    budgets (``x·gpus_p ≤ budget_p``, ``y·gpus_d ≤ budget_d``, ``x·gpus_p + y·gpus_d ≤ budget_total``),
    and that rate per GPU. Ties go to more workers (more throughput)."""
    best = (0, 0, 0.0)
    for x in range(1, budget_p // gpus_p + 1):
        room = min(budget_d, budget_total - x * gpus_p)
        for y in range(1, room // gpus_d + 1):
            r, _ = capacity(pf, dc, x, y, transfer_ms)
            per = r / (x * gpus_p + y * gpus_d)
            if per > best[2] * (1 + 1e-9) or (
                abs(per - best[2]) <= best[2] * 1e-9 and x + y > best[0] + best[1]
            ):
                best = (x, y, per)
    return best
