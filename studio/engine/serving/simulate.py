"""Discrete-event simulation of requests through one replica (percentiles, offline runs).

The scheduler follows what vLLM, TensorRT-LLM and SGLang do at iteration level:

* a request is admitted when a sequence slot is free (``running_cap``: ``max_batch`` / the
  engine's ``max_num_seqs``) and the KV cache can reserve its prompt + output tokens
  (TensorRT-LLM's ``GUARANTEED_NO_EVICT``; vLLM allocates pages as it goes but preempts when
  full, which at steady state admits about as many);
* each iteration carries the decode token of every decoding sequence plus prompt chunks, first
  come first served, up to the token budget (chunked prefill);
* the iteration takes :meth:`IterationModel.round_ms` for its prompt tokens and decoding
  sequences (interpolated on a grid computed once, so a 2,000-request run stays well under
  200 ms); spans with only decoding sequences and no arrival are advanced in one step;
* with speculative decoding a sequence gains ``E`` tokens per iteration on average (it decodes for
  ``⌈(O − 1) / E⌉`` iterations) and takes ``k + 1`` tokens of the budget;
* with prefix caching each request draws whether its reused prompt is found in HBM, host memory or
  on NVMe, or missed (:mod:`studio.engine.kv_tiers.draws`); it prefills only its missed tokens, and
  a host / NVMe hit's load rides on the iterations that compute them, hidden behind their compute or
  added to it as the runtime loads (:data:`studio.engine.kv_tiers.tiers.LOAD_OVERLAPS`); the shared
  system prompt's KV is held once.

Requests are spread evenly over the ``dp`` replicas, so one replica is simulated with its share
of the requests and of the rate. A closed loop's users join one after another over one request's
decode time (not as one synchronised wave, which fixed lengths would repeat all run long); when the
run has at least twice as many requests as users, their first requests are warm-up and are left out
of the latency figures (throughput counts the whole run). Definitions of the figures follow the benchmark tools: TTFT from
arrival to the first token, TPOT = (end − first token) / (output tokens − 1), ITL = the gaps
between tokens of a sequence, throughput = all output tokens / time from the first arrival to
the last completion (trtllm-bench, vLLM ``bench serve``).
"""

from __future__ import annotations

import dataclasses
import heapq
import math
from bisect import bisect_right
from collections import deque
from dataclasses import dataclass

import numpy as np

from studio.core.errors import StudioError
from studio.core.workload import LengthDistribution, Load
from studio.engine.kv_tiers.draws import MISS, PrefixDraws, draw
from studio.engine.step.iteration import IterationModel

PERCENTILES = (50.0, 90.0, 99.0)


@dataclass(frozen=True)
class Distribution:
    """Mean and percentiles of one figure (ms)."""

    mean: float
    p50: float
    p90: float
    p99: float

    @staticmethod
    def of(values: np.ndarray, weights: np.ndarray | None = None) -> Distribution:
        v = np.asarray(values, dtype=float)
        if v.size == 0:
            return Distribution(math.nan, math.nan, math.nan, math.nan)
        if weights is None:
            p = np.percentile(v, PERCENTILES)
            return Distribution(float(v.mean()), float(p[0]), float(p[1]), float(p[2]))
        w = np.asarray(weights, dtype=float)
        order = np.argsort(v)
        v, w = v[order], w[order]
        cum = np.cumsum(w)
        total = cum[-1]
        ps = [float(v[min(int(np.searchsorted(cum, q / 100.0 * total)), v.size - 1)]) for q in PERCENTILES]
        return Distribution(float((v * w).sum() / total), ps[0], ps[1], ps[2])


@dataclass(frozen=True)
class SimulationResult:
    """What a benchmark run of ``requests`` requests would report (whole deployment)."""

    requests: int
    duration_ms: float
    output_tokens: int
    ttft: Distribution
    tpot: Distribution
    itl: Distribution
    e2e: Distribution
    output_tokens_per_s: float
    requests_per_s: float
    mean_running: float  # sequences running per replica, time-averaged
    peak_waiting: int  # most requests waiting for admission at once (per replica)
    prefix: PrefixOutcome | None = None  # each request's prefix-cache hit (None: caching off)


@dataclass(frozen=True)
class PrefixOutcome:
    """The prefix-cache outcomes of the measured requests (one replica's, scaled to the deployment).

    ``requests``: how many found their reusable prefix in HBM, host memory, on NVMe, or missed it;
    ``hit_rate``: share of their prompt tokens served from the cache; ``ttft_hit`` / ``ttft_miss``:
    TTFT of the requests with a hit of the reusable part and of those without (ms).
    """

    requests: tuple[int, int, int, int]
    hit_rate: float
    ttft_hit: Distribution
    ttft_miss: Distribution


def sample_lengths(dist: LengthDistribution, nominal: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` request lengths (tokens, ≥ 1) drawn from ``dist`` around ``nominal``."""
    if dist.kind == "fixed":
        return np.full(n, int(nominal), dtype=np.int64)
    if dist.kind == "uniform":
        lo = max(1.0, nominal * (1.0 - dist.spread))
        hi = max(lo, nominal * (1.0 + dist.spread))
        return np.maximum(1, np.rint(rng.uniform(lo, hi, n))).astype(np.int64)
    assert dist.histogram is not None
    lengths = np.array([h[0] for h in dist.histogram], dtype=np.int64)
    weights = np.array([h[1] for h in dist.histogram], dtype=float)
    return rng.choice(lengths, size=n, p=weights / weights.sum())


class _Grid:
    """``round_ms(P, D)`` on a log-spaced grid, bilinear lookup in pure Python."""

    def __init__(self, im: IterationModel, budget: float, cap: float, ctx: float, prompt: float, m: float) -> None:
        def axis(top: float) -> list[float]:
            pts = {0.0, 1.0, float(top)}
            pts.update(float(x) for x in np.geomspace(1.0, max(top, 1.0), 24))
            return sorted(p for p in pts if p <= top)

        self.p = axis(budget)
        self.d = axis(max(cap, 1.0))
        pg, dg = np.meshgrid(self.p, self.d, indexing="ij")
        vals = im.round_ms(pg.ravel(), dg.ravel(), ctx, prompt, m)
        self.t = vals.reshape(len(self.p), len(self.d)).tolist()
        # a run asks again and again for the same few (prompt tokens, decoding sequences): each
        # answer is kept (the lookup is a pure function of them), so repeats cost one dict look-up
        self._seen: dict[tuple[float, float], float] = {}

    @staticmethod
    def _locate(axis: list[float], x: float) -> tuple[int, float]:
        i = min(max(bisect_right(axis, x) - 1, 0), len(axis) - 2) if len(axis) > 1 else 0
        if len(axis) == 1:
            return 0, 0.0
        lo, hi = axis[i], axis[i + 1]
        f = 0.0 if hi == lo else min(max((x - lo) / (hi - lo), 0.0), 1.0)
        return i, f

    def __call__(self, p: float, d: float) -> float:
        key = (p, d)
        seen = self._seen.get(key)
        if seen is None:
            seen = self._seen[key] = self._lookup(p, d)
        return seen

    def _lookup(self, p: float, d: float) -> float:
        """The bilinear interpolation of :meth:`__call__` (not memoised)."""
        i, fi = self._locate(self.p, p)
        j, fj = self._locate(self.d, d)
        t = self.t
        if len(self.p) == 1 or len(self.d) == 1:
            return t[i][j]
        a = t[i][j] * (1 - fj) + t[i][j + 1] * fj
        b = t[i + 1][j] * (1 - fj) + t[i + 1][j + 1] * fj
        return a * (1 - fi) + b * fi


def simulate(
    im: IterationModel,
    load: Load,
    isl: int,
    osl: int,
    *,
    budget: int,
    running_cap: int,
    kv_tokens: float,
    micro_batches: int,
    replicas: int = 1,
    default_concurrency: int = 1,
    prefix: PrefixDraws | None = None,
) -> SimulationResult:
    """Simulate ``load.num_requests`` requests served by ``replicas`` identical replicas.

    Parameters
    ----------
    budget:
        Token budget of one iteration.
    running_cap:
        Most sequences running at once in one replica.
    kv_tokens:
        KV-cache capacity of one replica in tokens (each admitted request reserves prompt + output).
    default_concurrency:
        Users of a closed loop whose ``load.concurrency`` is unset (the workload's batch).
    prefix:
        Prefix caching: each request draws a hit (HBM, host, NVMe) or a miss of its reusable prompt
        (:mod:`studio.engine.kv_tiers.draws`); only its missed tokens are prefilled, a host / NVMe
        hit's load is spread over the iterations that compute them (hidden behind each iteration's
        compute or added to it, ``prefix.overlaps``), and the shared system prompt's KV is held once.
        None = every prompt is prefilled whole (the draws come after the lengths, so the lengths
        are the same either way).

    Raises
    ------
    StudioError
        If a request can never be admitted (its prompt + output exceed the KV cache).
    """
    rng = np.random.default_rng(load.seed)
    n_total = int(load.num_requests)
    if load.mode == "concurrency" and load.concurrency is not None:
        # fewer users than replicas keep only that many replicas busy; the rest idle
        replicas = max(1, min(replicas, int(load.concurrency)))
    n = max(1, math.ceil(n_total / replicas))
    lens_in = sample_lengths(load.isl_dist, isl, n, rng)
    lens_out = sample_lengths(load.osl_dist, osl, n, rng)
    hits = draw(prefix, lens_in, rng) if prefix is not None else None
    shared = float(prefix.shared_tokens) if prefix is not None else 0.0
    need = lens_in + lens_out
    if float(need.max()) > kv_tokens:
        raise StudioError(
            f"a request of {int(need.max()):,} tokens (prompt + output) does not fit the KV cache of "
            f"{int(kv_tokens):,} tokens per replica; nothing can be simulated"
        )
    cap = max(1, int(running_cap))
    per_step, w = im.tokens_per_step, im.budget_per_seq
    mean_in = float(lens_in.mean())
    mean_out = float(lens_out.mean())
    computed = hits.computed if hits is not None else lens_in
    if hits is not None and im.lc.prefix is not None and im.lc.prefix.link_ms_per_token:
        # the mean request's loads leave the iteration model: each request brings its own below
        im = IterationModel(im.lc.replace(prefix=dataclasses.replace(im.lc.prefix, link_ms_per_token=0.0)), im.c)
    grid = _Grid(im, float(budget), float(cap), mean_in + mean_out / 2.0, float(computed.mean()), float(micro_batches))
    key = _run_key(grid, im, load, isl, osl, budget, running_cap, kv_tokens, micro_batches, replicas,
                   default_concurrency, prefix)
    seen = _RUNS.get(key)
    if seen is not None:
        return seen
    # host / NVMe load of each computed prompt token of a request (its hit's load over its chunks)
    load_per_token = (hits.load_ms / hits.computed).tolist() if hits is not None else [0.0] * n
    overlaps = prefix.overlaps if prefix is not None else True

    # arrivals (ms); a closed loop issues its next request when one ends
    closed = load.mode == "concurrency"
    arrival = np.zeros(n)
    if load.mode == "rate":
        assert load.rate_per_s is not None  # Workload refuses mode 'rate' without a rate
        rate = float(load.rate_per_s) / replicas / 1e3  # per ms per replica
        if load.arrival == "poisson":
            arrival = np.cumsum(rng.exponential(1.0 / rate, n))
            arrival -= arrival[0]
        else:
            arrival = np.arange(n) / rate
    users = max(1, math.ceil((load.concurrency or default_concurrency * replicas) / replicas)) if closed else n
    issued = min(users, n) if closed else n
    arr = arrival.tolist()
    lo, lc = lens_out.tolist(), computed.tolist()
    # KV each request reserves: the system prompt's blocks are shared (held once for the replica)
    held = (need.astype(float) - shared).tolist()
    kv_room = kv_tokens - shared
    first = [0.0] * n
    end = [0.0] * n
    if closed:
        # users join one after another over the time one request takes at that load, so the run
        # starts near the steady state instead of as one synchronised wave of prompts (with fixed
        # lengths such a wave would repeat for the whole run)
        span = grid(0.0, float(min(users, cap))) * max((mean_out - 1.0) / per_step, 1.0)
        for i in range(issued):
            arr[i] = span * i / issued
        for i in range(issued, n):
            arr[i] = math.inf
    n_open = issued if closed else n  # requests whose arrival time is known in advance
    next_arrival = 0
    waiting: deque[int] = deque()
    prefilling: deque[list[int]] = deque()  # [request, prompt tokens left]
    decoding: list[tuple[int, int]] = []  # (iteration count at which it ends, request)
    kv_used = 0.0
    t = 0.0
    g = 0  # iterations run
    done = 0
    itl_t: list[float] = []
    itl_w: list[float] = []
    running_area = 0.0
    peak_wait = 0

    # iterations each request decodes for after its first token (used when it has more than one)
    decode_iters = np.maximum(1, np.ceil((lens_out - 1) / per_step - 1e-9)).astype(np.int64).tolist()
    heappush, heappop = heapq.heappush, heapq.heappop
    # a request that ends (inlined below, twice: the loop runs ~10^6 times over a test run) sets its
    # end time, frees its KV and, in a closed loop, its user issues the next request at once

    while done < n:
        while next_arrival < n_open and arr[next_arrival] <= t:
            waiting.append(next_arrival)
            next_arrival += 1
        while waiting and len(prefilling) + len(decoding) < cap and kv_used + held[waiting[0]] <= kv_room:
            i = waiting.popleft()
            kv_used += held[i]
            prefilling.append([i, lc[i]])
        if len(waiting) > peak_wait:
            peak_wait = len(waiting)
        d = len(decoding)
        if not prefilling and d == 0:
            if next_arrival < n_open:
                t = max(t, arr[next_arrival])
                continue
            if waiting:
                raise StudioError("a waiting request cannot be admitted (internal limit)")
            break
        if prefilling:
            room = max(budget - w * d, 1)
            p = 0
            link = 0.0  # the host / NVMe loads of the prompt tokens this iteration computes
            started: list[int] = []
            for entry in prefilling:
                take = min(entry[1], room - p)
                if take <= 0:
                    break
                entry[1] -= take
                p += take
                link += take * load_per_token[entry[0]]
                if entry[1] == 0:
                    started.append(entry[0])
            dt = grid(float(p), float(d))
            if link:  # hidden behind the iteration's compute, or added to it, as the runtime loads
                dt = max(dt, link) if overlaps else dt + link
            running_area += dt * (d + len(prefilling) + len(started))
            t += dt
            g += 1
            if d:
                itl_t.append(dt)
                itl_w.append(float(d))
            for i in started:
                first[i] = t
                if lo[i] <= 1:
                    end[i] = t
                    kv_used -= held[i]
                    done += 1
                    if closed and issued < n:
                        arr[issued] = t
                        waiting.append(issued)
                        issued += 1
                else:
                    heappush(decoding, (g + decode_iters[i], i))
            # the chunks are taken first come first served, so the prompts that finished are the
            # front of the queue (every prompt computes at least one token): dropping them is
            # O(finished), not a rebuild of the whole queue (thousands long under a closed loop)
            for _ in started:
                prefilling.popleft()
        else:
            dt = grid(0.0, float(d))
            k = decoding[0][0] - g
            if next_arrival < n_open:
                k = min(k, max(1, math.ceil((arr[next_arrival] - t) / dt)))
            k = max(1, k)
            running_area += dt * k * d
            t += dt * k
            g += k
            itl_t.append(dt)
            itl_w.append(float(d * k))
        while decoding and decoding[0][0] <= g:
            _, i = heappop(decoding)
            end[i] = t
            kv_used -= held[i]
            done += 1
            if closed and issued < n:
                arr[issued] = t
                waiting.append(issued)
                issued += 1

    arr_np = np.array(arr[:n])
    first_np = np.array(first)
    end_np = np.array(end)
    out_np = lens_out.astype(float)
    duration = float(end_np.max() - arr_np.min()) if n else 0.0
    tokens = int(out_np.sum())
    # the users' first requests meet a system still filling up: warm-up (as GenAI-Perf's warm-up
    # requests), left out of the latency figures when the run is long enough to have others
    warm = users if closed and n >= 2 * users else 0
    arr_np, first_np, end_np, out_np = arr_np[warm:], first_np[warm:], end_np[warm:], out_np[warm:]
    # a served request also spends the front end's time before its first token reaches the client
    front = im.c.request_overhead_ms if load.mode != "offline" else 0.0
    ttft = first_np - arr_np + front
    outcome = None
    if hits is not None:
        tier = hits.tier[warm:]
        counts = tuple(int((tier == k).sum()) * replicas for k in range(MISS + 1))
        hit_rate = float(hits.hit_tokens[warm:].sum() / max(lens_in[warm:].sum(), 1))
        outcome = PrefixOutcome(requests=(counts[0], counts[1], counts[2], counts[3]), hit_rate=hit_rate,
                                ttft_hit=Distribution.of(ttft[tier < MISS]),
                                ttft_miss=Distribution.of(ttft[tier == MISS]))
    multi = out_np > 1
    tpot = (end_np[multi] - first_np[multi]) / (out_np[multi] - 1)
    tps = tokens / duration * 1e3 * replicas if duration > 0 else 0.0
    result = SimulationResult(
        requests=n * replicas, duration_ms=duration, output_tokens=tokens * replicas,
        ttft=Distribution.of(ttft), tpot=Distribution.of(tpot),
        itl=Distribution.of(np.array(itl_t), np.array(itl_w)), e2e=Distribution.of(end_np - arr_np + front),
        output_tokens_per_s=tps, requests_per_s=n * replicas / duration * 1e3 if duration > 0 else 0.0,
        mean_running=running_area / duration if duration > 0 else 0.0, peak_waiting=peak_wait, prefix=outcome,
    )
    if len(_RUNS) >= _RUNS_KEPT:
        _RUNS.clear()
    _RUNS[key] = result
    return result


#: Runs already simulated in this process, by everything a run reads (:func:`_run_key`); a
#: :class:`SimulationResult` is immutable, so one is handed to every caller that asks for that run.
_RUNS: dict[tuple, SimulationResult] = {}
_RUNS_KEPT = 1024  # the corpus alone simulates ~220 runs; a key is ~20 kB (its grid)


def clear_runs() -> None:
    """Forget the runs simulated so far (the next :func:`simulate` of each runs it again)."""
    _RUNS.clear()


def _run_key(grid: _Grid, im: IterationModel, load: Load, isl: int, osl: int, budget: int, running_cap: int,
             kv_tokens: float, micro_batches: int, replicas: int, default_concurrency: int,
             prefix: PrefixDraws | None) -> tuple:
    """Everything :func:`simulate` reads, as one hashable key.

    The run reads the iteration model only through the grid of iteration times it is sampled on
    (and its tokens per step, budget per sequence and per-request overhead), so the grid's values,
    not the model, go into the key: the same plan costed again (another test, the same corpus under
    other engine hooks that change nothing) is simulated once, while any change of an iteration
    time on the grid makes another run.

    Parameters
    ----------
    grid:
        The run's table of iteration times.
    im:
        The iteration model the grid was sampled from.
    load, isl, osl, budget, running_cap, kv_tokens, micro_batches, replicas, default_concurrency, prefix:
        :func:`simulate`'s own arguments.

    Returns
    -------
    tuple
        The key (the grid as tuples of floats, the load as its JSON).
    """
    return (tuple(grid.p), tuple(grid.d), tuple(tuple(row) for row in grid.t), im.tokens_per_step,
            im.budget_per_seq, im.c.request_overhead_ms, load.model_dump_json(), isl, osl, budget, running_cap,
            kv_tokens, micro_batches, replicas, default_concurrency, prefix)
