"""Request-level simulation of disaggregated serving at a request rate: the TTFT distribution.

The closed form (:mod:`studio.engine.disagg.pools`) gives means; a latency SLO is a percentile.
Here ``num_requests`` requests arrive (Poisson or evenly spaced) and go, as the vLLM proxy and the
SGLang / TensorRT-LLM routers do by default, round-robin to the prefill workers:

* a prefill worker, when free, takes every prompt that has arrived (up to the prompts one iteration
  holds, ``⌊K / ISL⌋``, or one prompt in ``⌈ISL / K⌉`` chunks) and runs them for
  :meth:`IterationModel.round_ms` of that many prompt tokens per chunk;
* the KV cache then moves to a decode worker (round-robin) in the transfer time of
  :mod:`studio.engine.disagg.kv_transfer`;
* a decode worker holds at most its cap of sequences; a request whose KV arrives when all are taken
  waits for the first to finish. A sequence decodes for (OSL − 1) iterations of the closed form's
  TPOT at that rate.

TTFT = arrival → the decode worker takes the request (prefill queue + prefill + transfer + any wait
for a decode slot), as a client of the proxy sees its first streamed token.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

from studio.core.project import Project
from studio.core.serving_mode import ServingMode
from studio.engine.disagg.evaluate import cost_pools
from studio.engine.disagg.pools import DecodeCurve, PrefillCurve
from studio.engine.serving.simulate import Distribution


@dataclass(frozen=True)
class DisaggSimulation:
    """What the simulated requests saw (times in ms)."""

    rate_per_s: float
    requests: int
    ttft: Distribution
    prefill_wait: Distribution  # arrival → its prefill starts
    decode_wait: Distribution  # KV arrived → a decode slot is free
    tpot_ms: float
    saturation_rate_per_s: float


def simulate_disaggregated(
    project: Project,
    rate_per_s: float,
    mode: ServingMode | None = None,
    *,
    num_requests: int | None = None,
    seed: int | None = None,
    poisson: bool = True,
) -> DisaggSimulation:
    """Simulate ``num_requests`` (default: the project's load) requests at ``rate_per_s`` (all workers).

    Raises
    ------
    StudioError
        As :func:`studio.engine.disagg.evaluate.evaluate_disaggregated` for pools that cannot run.
    """
    costed = cost_pools(project, mode)
    m = costed.mode
    assert m.prefill is not None and m.decode is not None
    pf, dc = costed.prefill.curve, costed.decode.curve
    assert isinstance(pf, PrefillCurve) and isinstance(dc, DecodeCurve)
    ld = project.workload.load
    n = int(num_requests or ld.num_requests)
    rng = np.random.default_rng(ld.seed if seed is None else seed)
    lam = float(rate_per_s) / 1e3  # per ms
    gaps = rng.exponential(1.0 / lam, n) if poisson else np.full(n, 1.0 / lam)
    arrive = np.cumsum(gaps) - gaps[0]
    x, y = m.prefill.workers, m.decode.workers
    # time of a prefill batch of k prompts (all its chunks)
    one = min(pf.isl, pf.budget)
    ks = np.arange(1, pf.slots + 1, dtype=float)
    t_batch = pf.chunks * pf.im.round_ms(
        ks * one, 0.0, pf.isl, pf.isl, np.full(ks.shape, pf.micro_batches)
    )
    done = np.empty(n)
    start = np.empty(n)
    for w in range(x):
        mine = np.arange(w, n, x)  # round-robin
        free, i = 0.0, 0
        while i < mine.size:
            s = max(free, arrive[mine[i]])
            j = i
            while j < mine.size and j - i < pf.slots and arrive[mine[j]] <= s:
                j += 1
            t = float(t_batch[j - i - 1])
            start[mine[i:j]] = s
            done[mine[i:j]] = s + t
            free = s + t
            i = j
    ready = done + costed.transfer.time_ms
    _, tpot = dc.at(np.array([lam / y]))
    busy_ms = dc.decode_iters * float(tpot[0])
    taken = np.empty(n)
    slots: list[list[float]] = [
        [0.0] * dc.cap for _ in range(y)
    ]  # each worker's slot free times (heap)
    order = np.argsort(ready, kind="stable")
    for k, r in enumerate(order):
        heap = slots[int(r) % y]
        t0 = max(float(ready[r]), heapq.heappop(heap))
        taken[r] = t0
        heapq.heappush(heap, t0 + busy_ms)
        del k
    ttft = taken - arrive
    return DisaggSimulation(
        rate_per_s=float(rate_per_s),
        requests=n,
        ttft=Distribution.of(ttft),
        prefill_wait=Distribution.of(start - arrive),
        decode_wait=Distribution.of(taken - ready),
        tpot_ms=float(tpot[0]),
        saturation_rate_per_s=min(x * pf.mu, y * dc.mu) * 1e3,
    )
