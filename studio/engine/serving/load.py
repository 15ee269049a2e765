"""Closed-form steady state of continuous batching under load (the live path).

One replica runs iterations (see :mod:`studio.engine.step.iteration`) that carry the decode token of
every decoding sequence plus prompt chunks within a token budget ``K``. With ``L`` prompt tokens
and ``O`` output tokens per request (``O − 1`` decode iterations after the first token):

* **Closed loop** (``B`` users, each sending its next request when the last one ends; also what a
  fixed batch means): in steady state ``a = D / (O − 1)`` requests finish per iteration and as many
  start, so an iteration carries ``D`` decode tokens and ``P = a · L`` prompt tokens. If
  ``D + P ≤ K`` a prompt is prefilled in ``⌈L / (K − D)⌉`` iterations and
  ``D = B (O − 1) / (O − 1 + n_pf)``; otherwise the budget binds, ``D = K (O − 1) / (L + O − 1)``
  and the other users wait for prefill budget (their wait counts in TTFT).
* **Open loop** (Poisson or evenly spaced arrivals at ``λ`` per replica): ``D = λ (O − 1) t(D)``
  solved on a grid; queueing before admission follows M/D/c (``c`` = the sequence slots) against the
  saturation rate (the closed loop at the largest concurrency the KV cache and ``max_batch`` allow).
  A rate at or above saturation has no steady state: :attr:`SteadyState.saturated` says so.

With speculative decoding an iteration emits ``E`` tokens per decoding sequence and each takes
``w = k + 1`` tokens of the budget: a request needs ``(O − 1) / E`` decode iterations, the budget
holds ``w · D + P ≤ K``, and TPOT = the iteration time / ``E``.

TTFT counts queueing + the prefill iterations; in an open loop a request finds the engine idle with
probability ``exp(−λ · E2E)`` and starts alone, else waits for the length-biased iteration in
progress and shares its first iteration with the prompts that arrived during it
(:func:`first_token`);
with one output token per request TPOT is the iteration time (no second token follows);
TPOT = the iteration time (first token excluded, as vLLM ``bench serve`` defines it); throughput
counts every output token (trtllm-bench / ``bench serve`` ``output_throughput``).
"""

from __future__ import annotations

import numpy as np

from studio.engine.step.iteration import IterationModel, per_row
from studio.engine.step.records import Record


class FirstToken(Record, frozen=True):
    """How an open-loop request meets the iterations before its first token (:func:`first_token`)."""

    ms: float  # mean arrival → first token, queueing for a sequence slot excluded
    idle_share: float  # share of arrivals that find the engine idle
    wait_ms: float  # mean wait for the iteration in progress, over all arrivals
    prompts: float  # prompts in a busy arrival's first iteration, its own included (within the budget)


class SteadyState(Record):
    """Mean figures of one replica in steady state; arrays shaped (N,)."""

    concurrency: np.ndarray  # requests in the system (running + waiting)
    decode_seqs: np.ndarray  # sequences decoding in an iteration
    prefill_tokens: np.ndarray  # prompt tokens per iteration
    iteration_ms: np.ndarray
    ttft_ms: np.ndarray
    tpot_ms: np.ndarray
    e2e_ms: np.ndarray
    output_tokens_per_s: np.ndarray  # per replica
    requests_per_s: np.ndarray  # per replica
    budget_bound: np.ndarray  # bool: the token budget limits how many sequences decode
    saturated: np.ndarray  # bool: open loop at or above the saturation rate
    arrival: FirstToken | None = None  # open loop: how a new request meets the iterations


def _decode_iters(osl: float) -> float:
    return max(float(osl) - 1.0, 0.0)


def mdc_wait_ms(rho: float, servers: float, service_ms: float) -> float:
    """Mean wait before admission of an M/D/c queue (Poisson arrivals, ``servers`` sequence slots,
    deterministic service), by Sakasegawa's approximation of the M/M/c wait halved for a
    deterministic service: ``Wq ≈ ½ · ρ^(√(2(c+1)) − 1) / (c (1 − ρ)) · S``. With hundreds of slots
    requests barely wait until close to saturation, unlike a single-server M/D/1."""
    if rho <= 0.0:
        return 0.0
    return mdc_waits_ms(np.array([float(rho)]), servers, service_ms)[0]


def mdc_waits_ms(rho: np.ndarray, servers: float, service_ms: float) -> np.ndarray:
    """:func:`mdc_wait_ms` at every load of ``rho`` (each below 1), as one array operation: the
    formula lives here."""
    c = max(1.0, float(servers))
    rho = np.asarray(rho, dtype=float)
    busy = rho > 0.0
    r = np.where(busy, rho, 0.5)  # idle points are 0 and must not divide or raise 0 to a power
    return np.where(busy, 0.5 * r ** (np.sqrt(2.0 * (c + 1.0)) - 1.0) / (c * (1.0 - r)) * service_ms, 0.0)


def mean_iteration(
    im: IterationModel,
    prefill_tokens: np.ndarray | float,
    decode_seqs: np.ndarray | float,
    ctx: float,
    prompt: float,
    m: np.ndarray,
    n_pf: np.ndarray | float,
    room: np.ndarray | float,
) -> tuple[np.ndarray, np.ndarray]:
    """Mean iteration time and the time of an iteration that carries a prompt chunk.

    With fewer than one prompt chunk per iteration on average, iterations are of two kinds —
    with a chunk of ``prompt / n_pf`` tokens (compute-heavy) and without (memory-bound) — and the
    mean is their mixture, not the time of an average-sized iteration (the roofline is not linear).
    """
    mix = iteration_mix(im, prefill_tokens, decode_seqs, ctx, prompt, m, n_pf, room)
    return mix[0], mix[1]


def iteration_mix(
    im: IterationModel,
    prefill_tokens: np.ndarray | float,
    decode_seqs: np.ndarray | float,
    ctx: float,
    prompt: float,
    m: np.ndarray,
    n_pf: np.ndarray | float,
    room: np.ndarray | float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`mean_iteration`'s mean and prompt-chunk iteration, plus the iteration without a chunk
    and the share of iterations that carry one (1 when every iteration does)."""
    p = np.asarray(prefill_tokens, dtype=float)
    chunk = np.minimum(room, np.maximum(prompt / np.asarray(n_pf, dtype=float), p))
    share = np.minimum(1.0, p / np.maximum(chunk, 1e-9))  # iterations that carry a chunk
    n = max(np.size(chunk), np.size(decode_seqs), np.size(p), np.size(m))
    d = per_row(decode_seqs, n)
    mm = per_row(m, n)
    chunk = per_row(chunk, n)
    p = per_row(p, n)
    share = per_row(share, n)
    both = im.round_ms(np.concatenate((chunk, np.zeros(n), p)), np.tile(d, 3), ctx, prompt, np.tile(mm, 3))
    t_pf, t_dec, t_avg = both[:n], both[n:2 * n], both[2 * n:]
    mean = np.where(share < 1.0, share * t_pf + (1.0 - share) * t_dec, t_avg)
    return mean, t_pf, t_dec, share


class Iterations(Record, frozen=True):
    """The iterations of an open-loop steady state, as a new request meets them (times in ms)."""

    mean: float  # the mean iteration
    prompt: float  # an iteration carrying one prompt chunk
    plain: float  # an iteration carrying none
    share: float  # share of iterations carrying a chunk (1: all of them)
    decode_seqs: float
    room: float  # prompt tokens the budget leaves beside the decode tokens
    chunks: float  # iterations a prompt needs


def first_token_ms(im: IterationModel, it: Iterations, lam_ms: float, isl: float, ctx: float, m: np.ndarray,
                   budget: float, o1: float, poisson: bool) -> float:
    """Mean time from a request's arrival to its first token in an open loop (:func:`first_token`'s ``ms``)."""
    return first_token(im, it, lam_ms, isl, ctx, m, budget, o1, poisson).ms


def first_token(im: IterationModel, it: Iterations, lam_ms: float, isl: float, ctx: float, m: np.ndarray,
                budget: float, o1: float, poisson: bool) -> FirstToken:
    """Mean time from a request's arrival to its first token in an open loop, queueing for a
    sequence slot excluded, and its parts.

    Three parts of arrival at iteration level (the schedulers of vLLM, SGLang and TensorRT-LLM
    admit new requests only between iterations; :mod:`studio.engine.serving.simulate` does the same
    request by request):

    * **idle engine**: with nobody in the system the request starts at once, alone. Continuous
      batching serves every admitted request at the same time, so the requests in the system are
      those of an M/G/∞ queue, whose number is Poisson with mean ``λ · E2E``: the engine is idle
      at a Poisson arrival with probability ``exp(−λ · E2E)``. Evenly spaced arrivals find it idle
      whenever ``λ · E2E < 1`` (the previous request has finished);
    * **the iteration in progress**: a busy engine finishes its iteration first. Arrivals fall
      into long iterations more often than short ones, so the iteration a request lands in is the
      length-biased one, ``E[T²] / E[T]``, and the mean wait for its end half of that (renewal
      theory's residual life), not half the mean iteration: iterations with a prompt chunk are
      several times the plain ones;
    * **prompts admitted together**: the requests that arrived during that same iteration,
      ``λ · E[T²] / E[T]`` on average, are admitted with it, and their prompts share its first
      iteration (up to the token budget).
    """
    L = float(isl)
    s = it.share
    if s < 1.0:
        second = s * it.prompt ** 2 + (1.0 - s) * it.plain ** 2
        landed = second / max(s * it.prompt + (1.0 - s) * it.plain, 1e-12)
    else:
        landed = it.mean
    others = lam_ms * landed
    own = L / it.chunks
    alone_chunks = max(1.0, float(np.ceil(L / max(budget, 1.0))))
    tagged = min(it.room, own + others * L)
    t = im.round_ms(np.array([tagged, L / alone_chunks]), np.array([it.decode_seqs, 0.0]), ctx, L,
                    np.broadcast_to(m, (2,)))
    busy = 0.5 * landed + float(t[0]) + (it.chunks - 1.0) * it.prompt
    idle = alone_chunks * float(t[1])
    e2e = busy + o1 * it.mean
    p_idle = float(np.exp(-lam_ms * e2e)) if poisson else (1.0 if lam_ms * e2e < 1.0 else 0.0)
    return FirstToken(ms=p_idle * idle + (1.0 - p_idle) * busy, idle_share=p_idle,
                      wait_ms=(1.0 - p_idle) * 0.5 * landed, prompts=tagged / max(own, 1e-12))


def closed_loop(
    im: IterationModel,
    users: np.ndarray,
    micro_batches: np.ndarray,
    isl: float,
    osl: float,
    budget: float,
    running_cap: np.ndarray | None = None,
    cached: float = 0.0,
) -> SteadyState:
    """Steady state of ``users`` closed-loop users per replica.

    Parameters
    ----------
    running_cap:
        Most sequences running at once (KV cache / ``max_batch``); users beyond it wait in the queue.
    cached:
        Prompt tokens per request served from the prefix cache: not prefilled (``isl`` is the part
        that is), but attended to by every decode step.
    """
    c_users = np.atleast_1d(np.asarray(users, dtype=float))
    m = np.broadcast_to(np.asarray(micro_batches, dtype=float), c_users.shape)
    cap = c_users if running_cap is None else np.minimum(c_users, np.asarray(running_cap, dtype=float))
    b = np.maximum(cap, 1.0)
    L = float(isl)
    E, w = im.tokens_per_step, float(im.budget_per_seq)
    o1 = _decode_iters(osl) / E  # decode iterations per request
    ctx = L + cached + float(osl) / 2.0
    if o1 == 0.0:  # prefill only: every request is one prompt
        p = np.minimum(b * L, budget)
        t = im.round_ms(p, 0.0, ctx, L, m)
        n_pf = np.ceil(b * L / budget)
        # full iterations, then the last one carries only the prompt tokens left (a chunked prompt's
        # last chunk is not a full budget's worth of compute)
        left = b * L - (n_pf - 1.0) * budget
        t_last = np.where(n_pf > 1.0, im.round_ms(np.minimum(left, budget), 0.0, ctx, L, m), t)
        ttft = (n_pf - 1.0) * t + t_last
        e2e = ttft
        rps = b / e2e * 1e3
        wait = np.maximum(c_users - b, 0.0) / np.maximum(rps, 1e-12) * 1e3
        return SteadyState(
            concurrency=c_users, decode_seqs=np.zeros_like(b), prefill_tokens=p, iteration_ms=t,
            ttft_ms=ttft + wait, tpot_ms=t, e2e_ms=e2e + wait, output_tokens_per_s=rps * osl,
            requests_per_s=rps, budget_bound=b * L > budget, saturated=np.zeros(b.shape, bool),
        )
    d_max = budget * o1 / (L + w * o1)
    d = b * o1 / (o1 + 1.0)
    for _ in range(3):  # n_pf depends weakly on D through the budget left for prompts
        room = np.maximum(budget - w * np.minimum(d, d_max), 1.0)
        n_pf = np.maximum(1.0, np.ceil(L / room))
        d = b * o1 / (o1 + n_pf)
    bound = d > d_max
    d = np.minimum(d, d_max)
    p = d * L / o1
    room = np.maximum(budget - w * d, 1.0)
    n_pf = np.maximum(1.0, np.ceil(L / room))
    t, t_pf = mean_iteration(im, p, d, ctx, L, m, n_pf, room)
    # users in prefill (or waiting for budget) = completions per iteration × iterations to first token
    n_wait = np.maximum((b - d) * o1 / np.maximum(d, 1e-9), n_pf)
    ttft = (n_wait - n_pf) * t + n_pf * t_pf
    tpot = t / E
    e2e = ttft + o1 * t
    rps = b / e2e * 1e3
    # users beyond the running cap wait (fewer than one user per replica never queue)
    queue = np.maximum(c_users - b, 0.0) / np.maximum(rps, 1e-12) * 1e3
    return SteadyState(
        concurrency=c_users, decode_seqs=d, prefill_tokens=p, iteration_ms=t, ttft_ms=ttft + queue,
        tpot_ms=tpot, e2e_ms=e2e + queue, output_tokens_per_s=rps * osl, requests_per_s=rps,
        budget_bound=bound, saturated=np.zeros(b.shape, bool),
    )


def open_loop(
    im: IterationModel,
    rate_per_s: float,
    micro_batches: float,
    isl: float,
    osl: float,
    budget: float,
    running_cap: float,
    poisson: bool = True,
    saturation: SteadyState | None = None,
    cached: float = 0.0,
) -> tuple[SteadyState, float]:
    """Steady state of one replica fed ``rate_per_s`` requests per second, and the saturation rate.

    Returns
    -------
    (state, saturation_rate_per_s)
        ``state.saturated`` is True when the rate is at or above saturation; its figures are then
        those at saturation and the queue (so TTFT) grows without bound.
    saturation:
        The closed loop at ``running_cap`` when the caller has it already.
    """
    sat = saturation or closed_loop(im, np.array([running_cap]), np.array([micro_batches]), isl, osl, budget,
                                   cached=cached)
    lam_max = float(sat.requests_per_s[0])
    lam = float(rate_per_s)
    L = float(isl)
    E, w = im.tokens_per_step, float(im.budget_per_seq)
    o1 = _decode_iters(osl) / E
    ctx = L + cached + float(osl) / 2.0
    m = np.array([float(micro_batches)])
    if lam >= lam_max * 0.999:
        return sat.replace(saturated=np.array([True])), lam_max
    lam_ms = lam / 1e3
    t_lo = float(im.round_ms(0.0, 1.0, ctx, L, m)[0])
    t_hi = max(float(sat.iteration_ms[0]), t_lo) * 1.5

    def residual(t: np.ndarray) -> tuple[np.ndarray, ...]:
        d = lam_ms * o1 * t
        p = lam_ms * t * L
        room = np.maximum(budget - w * d, 1.0)
        n_pf = np.maximum(1.0, np.ceil(L / room))
        mean, pf, dec, share = iteration_mix(im, p, d, ctx, L, m, n_pf, room)
        return mean - t, pf, n_pf, dec, share

    # the iteration time t solves t = mean_iteration(D = λ (O−1) t, P = λ t L): bracket the root on a
    # grid (one vectorised call), then refine on a finer grid inside the bracket
    for _ in range(2):
        grid = np.linspace(t_lo, t_hi, 64)
        r, pf, npf, dec, shr = residual(grid)
        sign = np.nonzero(r <= 0)[0]
        k = int(sign[0]) if sign.size else grid.size - 1
        t_lo, t_hi = float(grid[max(k - 1, 0)]), float(grid[k])
    t, t_pf, n_pf = float(grid[k]), float(pf[k]), float(npf[k])
    d = lam_ms * o1 * t
    p = lam_ms * t * L
    rho = lam / lam_max
    service_ms = n_pf * t_pf + o1 * t
    queue_ms = mdc_wait_ms(rho, running_cap, service_ms) if poisson else 0.0
    iters = Iterations(mean=t, prompt=t_pf, plain=float(dec[k]), share=float(shr[k]), decode_seqs=d,
                       room=max(budget - w * d, 1.0), chunks=n_pf)
    arrival = first_token(im, iters, lam_ms, L, ctx, m, budget, o1, poisson)
    ttft = arrival.ms + queue_ms
    e2e = ttft + o1 * t
    conc = lam_ms * e2e
    state = SteadyState(
        concurrency=np.array([conc]), decode_seqs=np.array([d]), prefill_tokens=np.array([p]),
        iteration_ms=np.array([t]), ttft_ms=np.array([ttft]), tpot_ms=np.array([t / E]), e2e_ms=np.array([e2e]),
        output_tokens_per_s=np.array([lam * osl]), requests_per_s=np.array([lam]),
        budget_bound=np.array([w * d + p > budget]), saturated=np.array([False]), arrival=arrival,
    )
    return state, lam_max
