"""Prompt reuse in a disaggregated plan: the prefill pool's prefix cache, the decode pool's shared
system prompt and what the KV transfer carries, with the model aggregated plans use
(:mod:`studio.engine.kv_tiers.prefix_cache`, :func:`studio.engine.plan.costs.with_prefix_load`).

* **Prefill pool.** Each prefill worker is an LRU of KV blocks over the HBM its running prompts
  leave, then its GPUs' share of the host-DRAM and NVMe tiers of its node
  (:func:`~studio.engine.kv_tiers.tiers.tier_tokens`, as an aggregated replica's). The hit rate is
  :func:`~studio.engine.kv_tiers.prefix_cache.estimate`'s at the traffic the worker takes when its
  pool limits the plan: its own capacity (or the workload's rate, when lower). That capacity grows
  with the hits, so the estimate is taken twice — at the capacity without hits, then at the
  capacity those hits give — and the second, lower hit rate is kept (a worker at that capacity
  inserts more new tokens per second than any fixed point between the two). The worker then
  prefills only the missed tokens, attending to the cached prefix, with the host / NVMe loads
  charged per iteration as the runtime does (added for vLLM and TensorRT-LLM, hidden for SGLang).
* **KV transfer.** The decode worker needs every block of the context. vLLM's P/D connectors pull
  only the blocks its own prefix cache lacks (``NixlConnector`` / ``MooncakeConnector``
  ``get_num_new_matched_tokens``: ``len(prompt_token_ids) - num_computed_tokens``, the local hits
  excluded; ``update_state_after_alloc`` reads only ``get_unhashed_block_ids()``), and every
  running request there shares the system prompt, so its whole blocks stay resident and are not
  sent. Other runtimes are costed sending the whole prompt.
* **Decode pool.** The system prompt's KV blocks are held once for all running sequences
  (:func:`~studio.engine.kv_tiers.prefix_cache.batch_with_shared_prefix`), so a worker runs more.

With prefix caching off, or nothing repeating, every function here returns what the plan had
without it, so no figure moves.
"""

from __future__ import annotations

from studio.core.project import Project
from studio.engine.disagg.pools import PrefillCurve
from studio.engine.kv_tiers.prefix_cache import (
    PrefixCacheEstimate,
    batch_with_shared_prefix,
    estimate,
    tier_load_ms,
)
from studio.engine.kv_tiers.tiers import block_tokens, load_gbps, prefix_cache_on, tier_tokens
from studio.engine.plan.costs import with_prefix_load
from studio.engine.step.constants import Constants
from studio.engine.step.costing import LayoutCosts
from studio.engine.step.iteration import IterationModel
from studio.engine.step.records import frozen_result

#: Runtimes whose disaggregated connector pulls only the prompt blocks the decode worker does not
#: already cache (vLLM ``NixlConnector`` and ``MooncakeConnector``, sources in the module text).
PULLS_MISSING_BLOCKS: frozenset[str] = frozenset({"vllm"})


@frozen_result
class PrefillReuse:
    """A prefill worker with its prefix cache: the hits, its curve over the missed tokens, the
    host / NVMe load of the mean request and what each tier holds for reuse (tokens)."""

    estimate: PrefixCacheEstimate
    curve: PrefillCurve
    tier_load_ms: float
    capacity_tokens: tuple[float, float, float]


def _shared(project: Project, prompt: float) -> float:
    """System-prompt tokens every running request shares, below the prompt's last token."""
    return min(float(project.workload.reuse.system_prompt_tokens), prompt - 1.0)


def prefill_reuse(
    project: Project,
    lc: LayoutCosts,
    c: Constants,
    budget: float,
    kv_prompts: int,
    micro_batches: float,
    cap_tokens: int,
) -> PrefillReuse | None:
    """The prefill worker of ``lc`` with its prefix cache, or None when the project caches no
    prefix (its :meth:`PrefillCurve.build` over the whole prompt then stands). ``budget``: its
    token budget; ``kv_prompts`` / ``cap_tokens``: whole prompts / tokens its KV cache holds."""
    if not prefix_cache_on(project):
        return None
    wl = project.workload
    isl = float(wl.isl)
    sv = project.serving
    layout = lc.layout
    gpus = layout.tp * layout.pp
    kv = project.model.kv_bytes_per_token(sv.kv_dtype)
    host, disk = tier_tokens(project, gpus, kv)
    shared = _shared(project, isl)
    # the prompts it holds at once (their cached prefix loaded into HBM too), the system prompt once
    held = max(batch_with_shared_prefix(cap_tokens, isl, int(shared)), kv_prompts, 1)
    ld = wl.load
    # the turn's latency before the user thinks: its prefill and, at the TPOT target, its decode
    decode_ms = max(wl.osl - 1, 0) * (wl.tpot_ms or 0.0)

    def head(im: IterationModel, prompt: float) -> tuple[int, float, float]:
        """(prompts per iteration, capacity req/s, one prompt alone ms) of ``prompt`` computed tokens."""
        slots, chunks, full, one = PrefillCurve.head(im, prompt, budget, held, micro_batches)
        return slots, slots / (chunks * full) * 1e3, one

    def hits(slots: int, rate: float, one_ms: float) -> tuple[PrefixCacheEstimate, tuple[float, float, float]]:
        if ld.mode == "rate" and ld.rate_per_s:
            rate = min(rate, float(ld.rate_per_s))
        running = slots * isl - max(slots - 1, 0) * shared
        caps = (max(cap_tokens - running, 0.0), host, disk)
        est = estimate(wl.reuse, isl, float(wl.osl), rate_per_s=rate, latency_s=(one_ms + decode_ms) / 1e3,
                       capacity_tokens=caps, block_tokens=block_tokens(sv.runtime), running=float(slots))
        return est, caps

    def with_hits(est: PrefixCacheEstimate) -> tuple[IterationModel, int]:
        return IterationModel(with_prefix_load(project, layout, lc, est), c), max(1, round(est.computed_tokens))

    first, _ = hits(*head(IterationModel(lc, c), isl))  # at the capacity without hits
    im1, computed1 = with_hits(first)
    est, caps = hits(*head(im1, computed1))  # at the capacity those hits give
    im, computed = with_hits(est)
    load = tier_load_ms(est, kv, load_gbps(gpus, sv.kv_tiers.host_link_gbps))
    curve = PrefillCurve.build(im, computed, budget, held, micro_batches)
    return PrefillReuse(estimate=est, curve=curve, tier_load_ms=load, capacity_tokens=caps)


def decode_sequences(project: Project, cap_tokens: int, seq_len: int, seqs: int) -> int:
    """Sequences of ``seq_len`` tokens a decode worker's KV cache of ``cap_tokens`` holds: ``seqs``,
    or more when the running requests share the system prompt's blocks."""
    if not prefix_cache_on(project) or not project.workload.reuse.system_prompt_tokens:
        return seqs
    return batch_with_shared_prefix(cap_tokens, seq_len, project.workload.reuse.system_prompt_tokens)


def shared_tokens(project: Project, seq_len: int) -> float:
    """Tokens of each running decode sequence of ``seq_len`` held once for all (the system prompt
    when the project caches prefixes, else 0)."""
    if not prefix_cache_on(project):
        return 0.0
    return max(_shared(project, float(seq_len)), 0.0)


def transfer_tokens(project: Project) -> int:
    """Prompt tokens whose KV goes from the prefill to the decode worker: the whole prompt, less
    the system prompt's whole KV blocks that a vLLM decode worker already caches."""
    wl = project.workload
    runtime = project.serving.runtime
    if not prefix_cache_on(project) or runtime not in PULLS_MISSING_BLOCKS:
        return wl.isl
    bs = block_tokens(runtime)
    resident = int(_shared(project, float(wl.isl)) // bs) * bs
    return wl.isl - max(resident, 0)


def summary(pr: PrefillReuse, project: Project) -> dict[str, float]:
    """The ``prefix_cache`` object of a disaggregated plan (the aggregated plan's keys, per prefill
    worker, and the tokens the KV transfer carries)."""
    e = pr.estimate
    return {
        "hit_rate": e.hit_rate, "hit_rate_hbm": e.hit_by_tier[0], "hit_rate_host": e.hit_by_tier[1],
        "hit_rate_disk": e.hit_by_tier[2], "prompt_tokens": e.prompt_tokens,
        "prefilled_tokens": e.computed_tokens, "saved_prefill_tokens": e.saved_tokens,
        "shared_tokens": float(e.shared_tokens), "tier_load_ms": pr.tier_load_ms,
        "capacity_tokens_hbm": pr.capacity_tokens[0], "capacity_tokens_host": pr.capacity_tokens[1],
        "capacity_tokens_disk": pr.capacity_tokens[2], "kv_transfer_tokens": float(transfer_tokens(project)),
    }
