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
cumulative capacity's ``T_C`` covers its reuse interval. Engines count a hit in whole KV blocks of
the prefix and always compute the prompt's last token, so the expected hit is rounded down to a
block and kept below the prompt (:func:`studio.engine.kv_tiers.tiers.block_tokens`). A hit outside
HBM costs the transfer of its KV over the node's link: SGLang loads it layer by layer while the
missed tokens' prefill runs (the prefill takes the longer of the two), vLLM's connectors and
TensorRT-LLM load it before the prefill (their sum); :class:`PrefixLoad` carries that into the
iteration model.
"""

from __future__ import annotations

import math

import numpy as np

from studio.core.settings.reuse import Reuse
from studio.engine.step.records import frozen_result

TIERS: tuple[str, ...] = ("hbm", "host", "disk")


@frozen_result
class PrefixCacheEstimate:
    """What prefix caching does to the mean request.

    ``hit_rate``: share of prompt tokens served from the cache; ``hit_by_tier``: that share per tier
    (HBM, host, disk); ``computed_tokens``: prompt tokens actually prefilled per request;
    ``shared_tokens``: KV tokens every running request shares (the system prompt, held once).
    ``window_s``: how long each tier (cumulatively) keeps a prefix under the traffic (Che's ``T_C``).
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
    block_tokens: int = 1,
    documents: float | None = None,
    running: float = 0.0,
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
    block_tokens
        Tokens per KV block: the expected hit is rounded down to whole blocks and leaves at least
        the prompt's last token to compute (1 = counted per token, the last token still computed).
    documents
        Documents this replica re-reads (``reuse.documents`` when None); a prefix-aware router
        gives each replica its share of them, each re-read more often there.
    running
        Requests in flight on the replica. Their KV blocks are resident whatever the leftover
        capacity: the shared system prompt hits while any request runs, and a document read by a
        running request hits too (the engines' block hashes match any resident block, vLLM
        ``KVCacheManager.get_computed_blocks``, SGLang's radix tree) — the LRU's recency window
        counts the running requests on top of those the leftover keeps.
    """
    sys_t = float(reuse.system_prompt_tokens)
    hist = reuse.mean_history_tokens()
    rest = max(isl - sys_t - hist, 0.0)
    doc = reuse.document_share * rest
    if reuse.hit_rate is not None:  # measured: served from the tier the workload names
        hit_tokens = _whole_blocks(reuse.hit_rate * isl, isl, block_tokens)
        h = hit_tokens / isl if isl > 0 else 0.0
        tiers = tuple(h if t == reuse.hit_tier else 0.0 for t in TIERS)
        return PrefixCacheEstimate(h, (tiers[0], tiers[1], tiers[2]), isl, isl - hit_tokens, int(sys_t),
                                   (math.inf,) * 3)
    # Tokens each request inserts: its new prompt tokens and its output (the next turn's history).
    inserted = max(rest - doc, 0.0) + osl
    rate = max(rate_per_s, 1e-12)
    n_docs = max(float(documents if documents is not None else reuse.documents), 1.0)
    cumulative: list[float] = []
    total = 0.0
    for cap in capacity_tokens:
        total += max(cap, 0.0)
        cumulative.append(total)
    windows = tuple(c / (rate * max(inserted, 1.0)) for c in cumulative)

    def hits(k: int) -> float:
        cap = cumulative[k]
        held = running >= 1.0  # the shared prompt's blocks are in use, hence resident
        h_sys = sys_t if (cap >= sys_t or held) else 0.0
        kept = cap > sys_t
        h_hist = hist * _reuse_probability(latency_s, reuse.think_time_s, windows[k]) if kept else 0.0
        recent = (rate * windows[k] if kept else 0.0) + max(running, 0.0)
        h_doc = doc * (1.0 - math.exp(-recent / n_docs))
        return h_sys + h_hist + h_doc

    cum_hits = [hits(k) for k in range(3)]
    if cum_hits[-1] > 0:  # whole blocks, the last token computed: trim the deepest tiers' share
        scale = _whole_blocks(cum_hits[-1], isl, block_tokens) / cum_hits[-1]
        cum_hits = [h * scale for h in cum_hits]
    by_tier = tuple(
        (cum_hits[k] - (cum_hits[k - 1] if k else 0.0)) / isl if isl > 0 else 0.0 for k in range(3)
    )
    hit = cum_hits[-1] / isl if isl > 0 else 0.0
    return PrefixCacheEstimate(
        hit_rate=hit, hit_by_tier=(by_tier[0], by_tier[1], by_tier[2]), prompt_tokens=isl,
        computed_tokens=isl - cum_hits[-1], shared_tokens=int(sys_t),
        window_s=(windows[0], windows[1], windows[2]),
    )


def _whole_blocks(hit_tokens: float, isl: float, block_tokens: int) -> float:
    """``hit_tokens`` rounded down to whole blocks of ``block_tokens``, below the prompt's last token."""
    bs = max(int(block_tokens), 1)
    most = math.floor(max(isl - 1.0, 0.0) / bs) * bs
    return float(min(math.floor(max(hit_tokens, 0.0) / bs) * bs, most))


def tier_load_ms(est: PrefixCacheEstimate, kv_bytes_per_token: float, link_gbps: tuple[float, float]) -> float:
    """Time (ms) to load the mean request's hits in host memory / on NVMe over the replica's links
    (GB/s, host then disk)."""
    load = 0.0
    for share, gbps in zip(est.hit_by_tier[1:], link_gbps, strict=True):
        if share > 0:
            load += share * est.prompt_tokens * kv_bytes_per_token / (gbps * 1e9) * 1e3
    return load


def prefill_ms(est: PrefixCacheEstimate, compute_ms_per_token: float, kv_bytes_per_token: float,
               link_gbps: tuple[float, float], overlaps: bool = True) -> float:
    """Prefill time of the mean request with its cached prefix.

    The missed tokens are computed; hits in host memory / on NVMe are loaded over the node's link
    (GB/s, host then disk): layer by layer while that compute runs when ``overlaps`` (the longer of
    the two), before it otherwise (their sum).
    """
    compute = est.computed_tokens * compute_ms_per_token
    load = tier_load_ms(est, kv_bytes_per_token, link_gbps)
    return max(compute, load) if overlaps else compute + load


@frozen_result
class PrefixLoad:
    """What a prefix hit changes in an iteration: the computed suffix attends to ``cached_tokens``
    of cached prefix per request, and each computed prompt token brings ``link_ms_per_token`` of
    host / NVMe load, hidden behind the iteration's compute when ``overlaps``, added to it otherwise."""

    cached_tokens: float
    link_ms_per_token: float = 0.0
    overlaps: bool = True

    def iteration_ms(self, gpu_ms: np.ndarray, prefill_tokens: np.ndarray | float) -> np.ndarray:
        """The iteration time with the loads of its ``prefill_tokens`` computed prompt tokens."""
        link = np.asarray(prefill_tokens, dtype=float) * self.link_ms_per_token
        return np.maximum(gpu_ms, link) if self.overlaps else gpu_ms + link


def prefix_load(est: PrefixCacheEstimate, kv_bytes_per_token: float, link_gbps: tuple[float, float],
                overlaps: bool) -> PrefixLoad:
    """The :class:`PrefixLoad` of the mean request of ``est``: its tier loads spread over the prompt
    tokens it computes."""
    load = tier_load_ms(est, kv_bytes_per_token, link_gbps)
    return PrefixLoad(est.saved_tokens, load / max(est.computed_tokens, 1.0), overlaps)


def batch_with_shared_prefix(cap_tokens: float, seq_tokens: float, shared_tokens: int) -> int:
    """Running sequences a KV cache of ``cap_tokens`` holds when each of ``seq_tokens`` shares its
    first ``shared_tokens`` with the others (their blocks are held once)."""
    shared = min(float(shared_tokens), seq_tokens - 1.0, cap_tokens)
    if seq_tokens <= 0 or cap_tokens < seq_tokens:
        return 0
    return int((cap_tokens - shared) // (seq_tokens - shared))
