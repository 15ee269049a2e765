"""Each simulated request's prefix-cache outcome: a hit in HBM, host memory or on NVMe, or a miss.

The plan's estimate (:mod:`studio.engine.kv_tiers.prefix_cache`) gives the share of prompt tokens
each tier serves on average. The request simulation turns those shares into one outcome per request
with the same mean:

* the system prompt, when the cache holds it, is a hit for every request (it is in use all the
  time, so it stays in HBM);
* the rest of the reusable prompt (the conversation's history, a re-read document) is one prefix
  that either comes back from one tier or is missed: request ``i`` finds it in tier ``k`` with
  probability ``h_k / r`` (``h_k`` that tier's share of prompt tokens beyond the system prompt,
  ``r`` the reusable share), so the expected hits equal the plan's;
* a hit outside HBM is loaded over the node's link with the missed tokens' prefill: the simulation
  spreads the load over the iterations that compute them, hidden behind their compute (SGLang's
  layer-by-layer loads) or added to it (vLLM's connectors, TensorRT-LLM), as the plan's iteration
  model does (:class:`studio.engine.kv_tiers.prefix_cache.PrefixLoad`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Outcome codes of :func:`draw`: index into (HBM, host, NVMe), or MISS.
MISS = 3


@dataclass(frozen=True)
class PrefixDraws:
    """What the simulation needs to draw each request's prefix hit.

    ``shared_share``: share of a prompt that is the system prompt, a hit for every request;
    ``reusable_share``: share of a prompt beyond it that may come back from the cache;
    ``tier_share``: share of prompt tokens each tier serves beyond the system prompt (HBM, host,
    NVMe), ``sum ≤ reusable_share``; ``load_ms_per_token``: transfer time of one token's KV from
    host memory and from NVMe to the replica's GPUs; ``shared_tokens``: KV tokens the running
    requests share (held once); ``overlaps``: the runtime hides a load behind the prefill's
    compute (else the load adds to it); ``block_tokens``: a hit counts whole KV blocks of this many
    tokens.
    """

    shared_share: float
    reusable_share: float
    tier_share: tuple[float, float, float]
    load_ms_per_token: tuple[float, float]
    shared_tokens: int
    overlaps: bool = True
    block_tokens: int = 1

    @property
    def tier_probability(self) -> np.ndarray:
        """Chance that a request's reusable part is a hit in each tier (HBM, host, NVMe)."""
        h = np.clip(np.asarray(self.tier_share, dtype=float), 0.0, None)
        r = max(self.reusable_share, float(h.sum()), 1e-12)
        return h / r


@dataclass(frozen=True)
class RequestHits:
    """Per-request outcome: ``tier`` (0 HBM, 1 host, 2 NVMe, 3 miss of the reusable part),
    ``computed`` prompt tokens prefilled and ``load_ms`` spent loading a host / NVMe hit."""

    tier: np.ndarray
    computed: np.ndarray
    load_ms: np.ndarray
    hit_tokens: np.ndarray


def draw(p: PrefixDraws, prompt: np.ndarray, rng: np.random.Generator) -> RequestHits:
    """One outcome per request of ``prompt`` tokens (at least one token is always computed, as the
    engines recompute the last prompt token to get its logits)."""
    lens = np.asarray(prompt, dtype=np.int64)
    n = lens.size
    bs = max(int(p.block_tokens), 1)
    most = (lens - 1) // bs * bs  # whole blocks, below the prompt's last token
    shared = np.minimum(np.rint(p.shared_share * lens).astype(np.int64), most) // bs * bs
    reusable = np.minimum(np.rint(p.reusable_share * lens).astype(np.int64), most - shared)
    reusable = np.maximum(reusable, 0)
    probs = p.tier_probability
    u = rng.random(n)
    edges = np.cumsum(probs)
    tier = np.searchsorted(edges, u, side="right").astype(np.int64)
    tier = np.minimum(tier, MISS)
    hit = np.where(tier < MISS, shared + reusable, shared) // bs * bs
    hit_rest = hit - shared
    per_token = np.array([0.0, p.load_ms_per_token[0], p.load_ms_per_token[1], 0.0])
    load_ms = hit_rest * per_token[tier]
    return RequestHits(tier=tier, computed=np.maximum(lens - hit, 1), load_ms=load_ms, hit_tokens=hit)
