"""Expected prefix-cache hit rate of a workload from an LRU over its working set.

The cache is an LRU of KV blocks. Under Che's approximation an LRU of ``C`` tokens keeps whatever
was touched in the last ``T_C`` seconds, ``T_C`` being the time the traffic takes to insert ``C``
new tokens. A reused prefix is then a hit when its next use comes within ``T_C``:

* the system prompt is used by every request: a hit whenever the cache holds it;
* a conversation's history comes back after the turn's own latency plus the user's think time
  (exponential around its mean): hit with probability ``1 - exp(-(T_C - latency) / think)``;
* each of ``D`` equally popular documents is re-read at rate ``λ / D``: hit with probability
  ``1 - exp(-λ T_C / D)`` (Poisson reuse).

Tiers fill in order (HBM, then host DRAM, then NVMe), so a hit is served from the first tier whose
cumulative capacity's ``T_C`` covers its reuse interval. A hit outside HBM costs the transfer of
its KV over the node's link; engines load it layer by layer while the missed tokens' prefill runs,
so the prefill takes the longer of the two, not their sum.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from studio.core.settings.reuse import Reuse

TIERS: tuple[str, ...] = ("hbm", "host", "disk")


@dataclass(frozen=True)
class PrefixCacheEstimate:
    """What prefix caching does to the mean request.

    ``hit_rate``: share of prompt tokens served from the cache; ``hit_by_tier``: that share per tier
    (HBM, host, disk); ``computed_tokens``: prompt tokens actually prefilled per request;
    ``shared_tokens``: KV tokens every running request shares (the system prompt, held once).
    """

    hit_rate: float
    hit_by_tier: tuple[float, float, float]
    prompt_tokens: float
    computed_tokens: float
    shared_tokens: int
    window_s: tuple[float, float, float]

    @property
    def saved_tokens(self) -> float:
        """Prompt tokens per request that are not prefilled."""
        return self.prompt_tokens - self.computed_tokens


def _reuse_probability(interval_s: float, think_s: float, window_s: float) -> float:
    """Chance a prefix used again ``interval_s`` (+ exponential think time) later is still cached."""
    if window_s <= interval_s:
        return 0.0
    if think_s <= 0.0:
        return 1.0
    return 1.0 - math.exp(-(window_s - interval_s) / think_s)


def estimate(
    reuse: Reuse,
    isl: float,
    osl: float,
    *,
    rate_per_s: float,
    latency_s: float,
    capacity_tokens: tuple[float, float, float],
) -> PrefixCacheEstimate:
    """Expected hits of ``reuse`` for one replica.

    Parameters
    ----------
    reuse, isl, osl
        The workload's reuse and mean prompt / output lengths (tokens).
    rate_per_s
        Requests per second the replica serves (> 0).
    latency_s
        Mean end-to-end time of a request (the part of a turn-to-turn interval before think time).
    capacity_tokens
        Tokens each tier can keep for reuse: HBM left over by running requests, host DRAM, NVMe.
    """
    sys_t = float(reuse.system_prompt_tokens)
    hist = reuse.mean_history_tokens()
    rest = max(isl - sys_t - hist, 0.0)
    doc = reuse.document_share * rest
    if reuse.hit_rate is not None:
        h = reuse.hit_rate
        return PrefixCacheEstimate(h, (h, 0.0, 0.0), isl, isl * (1.0 - h), int(sys_t), (math.inf,) * 3)
    # Tokens each request inserts: its new prompt tokens and its output (the next turn's history).
    inserted = max(rest - doc, 0.0) + osl
    rate = max(rate_per_s, 1e-12)
    cumulative: list[float] = []
    total = 0.0
    for cap in capacity_tokens:
        total += max(cap, 0.0)
        cumulative.append(total)
    windows = tuple(c / (rate * max(inserted, 1.0)) for c in cumulative)

    def hits(k: int) -> float:
        cap = cumulative[k]
        h_sys = sys_t if cap >= sys_t else 0.0
        h_hist = hist * _reuse_probability(latency_s, reuse.think_time_s, windows[k]) if cap > sys_t else 0.0
        h_doc = doc * (1.0 - math.exp(-rate * windows[k] / reuse.documents)) if cap > sys_t else 0.0
        return h_sys + h_hist + h_doc

    cum_hits = [hits(k) for k in range(3)]
    by_tier = tuple(
        (cum_hits[k] - (cum_hits[k - 1] if k else 0.0)) / isl if isl > 0 else 0.0 for k in range(3)
    )
    hit = cum_hits[-1] / isl if isl > 0 else 0.0
    return PrefixCacheEstimate(
        hit_rate=hit, hit_by_tier=(by_tier[0], by_tier[1], by_tier[2]), prompt_tokens=isl,
        computed_tokens=isl - cum_hits[-1], shared_tokens=int(sys_t),
        window_s=(windows[0], windows[1], windows[2]),
    )


def prefill_ms(est: PrefixCacheEstimate, compute_ms_per_token: float, kv_bytes_per_token: float,
               link_gbps: tuple[float, float]) -> float:
    """Prefill time of the mean request with its cached prefix.

    The missed tokens are computed; hits in host memory / on NVMe are loaded over the node's link
    (GB/s, host then disk) while that compute runs, so the prefill takes the longer of the two.
    """
    compute = est.computed_tokens * compute_ms_per_token
    load = 0.0
    for share, gbps in zip(est.hit_by_tier[1:], link_gbps, strict=True):
        if share > 0:
            load += share * est.prompt_tokens * kv_bytes_per_token / (gbps * 1e9) * 1e3
    return max(compute, load)


def batch_with_shared_prefix(cap_tokens: float, seq_tokens: float, shared_tokens: int) -> int:
    """Running sequences a KV cache of ``cap_tokens`` holds when each of ``seq_tokens`` shares its
    first ``shared_tokens`` with the others (their blocks are held once)."""
    shared = min(float(shared_tokens), seq_tokens - 1.0, cap_tokens)
    if seq_tokens <= 0 or cap_tokens < seq_tokens:
        return 0
    return int((cap_tokens - shared) // (seq_tokens - shared))
