"""Prefix-cache hit rate from an LRU over the working set, and the reuse fields' checks."""

from __future__ import annotations

import math

import pytest
from pydantic import ValidationError

from studio.core.settings.reuse import KVTiers, Reuse
from studio.core.workload import Workload
from studio.engine.kv_tiers.prefix_cache import batch_with_shared_prefix, estimate, prefill_ms

CHAT = Reuse(system_prompt_tokens=1000, turns=8, history_tokens_per_turn=600, think_time_s=30)


def _hit(cap: tuple[float, float, float], reuse: Reuse = CHAT) -> float:
    return estimate(reuse, 4000, 300, rate_per_s=5, latency_s=5, capacity_tokens=cap).hit_rate


def test_hit_rate_grows_with_capacity_and_is_not_a_constant() -> None:
    rates = [_hit((c, 0, 0)) for c in (500, 2e4, 2e5, 2e6)]
    assert rates[0] == 0.0  # the system prompt does not even fit
    assert rates[1] == pytest.approx(1000 / 4000)  # only the system prompt is kept
    assert rates[1] < rates[2] < rates[3] <= 1.0


def test_host_tier_adds_hits_served_from_host() -> None:
    e = estimate(CHAT, 4000, 300, rate_per_s=5, latency_s=5, capacity_tokens=(2e5, 2e6, 0))
    assert e.hit_by_tier[1] > 0
    assert e.hit_rate == pytest.approx(sum(e.hit_by_tier))
    assert e.hit_rate > _hit((2e5, 0, 0))
    assert e.computed_tokens == pytest.approx(4000 * (1 - e.hit_rate))


def test_documents_follow_poisson_reuse() -> None:
    few = Reuse(document_share=0.5, documents=10)
    many = Reuse(document_share=0.5, documents=100_000)
    assert _hit((1e5, 0, 0), few) > _hit((1e5, 0, 0), many)


def test_no_reuse_means_no_hit() -> None:
    assert _hit((1e9, 1e9, 1e9), Reuse()) == 0.0


def test_measured_hit_rate_overrides_estimate() -> None:
    assert _hit((0, 0, 0), Reuse(hit_rate=0.4)) == pytest.approx(0.4)


def test_host_hit_overlaps_with_compute() -> None:
    e = estimate(CHAT, 4000, 300, rate_per_s=5, latency_s=5, capacity_tokens=(0, 1e7, 0))
    compute_only = e.computed_tokens * 0.1
    assert prefill_ms(e, 0.1, 1e5, (1e6, 1.0)) == pytest.approx(compute_only)  # fast link hides loads
    assert prefill_ms(e, 0.1, 1e5, (0.001, 1.0)) > compute_only  # slow link dominates


def test_shared_system_prompt_fits_more_batch() -> None:
    assert batch_with_shared_prefix(100_000, 5000, 0) == 20
    assert batch_with_shared_prefix(100_000, 5000, 4000) > 90


def test_bad_reuse_settings_name_the_field() -> None:
    with pytest.raises(ValidationError, match="hit_rate"):
        Reuse(hit_rate=1.2)
    with pytest.raises(ValidationError, match="system_prompt_tokens"):
        Reuse(system_prompt_tokens=-1)
    with pytest.raises(ValidationError, match="system_prompt_tokens .* exceed the mean prompt isl"):
        Workload(isl=100, reuse=Reuse(system_prompt_tokens=200))
    with pytest.raises(ValidationError, match="host_gib"):
        KVTiers(host_gib=-1)
    with pytest.raises(ValidationError, match="need prefix_cache on"):
        KVTiers(prefix_cache=False, host_gib=10)


def test_hits_count_whole_blocks_and_leave_the_last_token() -> None:
    sys_only = Reuse(system_prompt_tokens=500)
    e = estimate(sys_only, 1024, 10, rate_per_s=1, latency_s=1, capacity_tokens=(1e6, 0, 0), block_tokens=16)
    assert e.saved_tokens == 496  # 31 whole 16-token blocks of the 500-token system prompt
    per_token = estimate(sys_only, 1024, 10, rate_per_s=1, latency_s=1, capacity_tokens=(1e6, 0, 0))
    assert per_token.saved_tokens == 500
    full = estimate(Reuse(hit_rate=1.0), 512, 1, rate_per_s=1, latency_s=1, capacity_tokens=(0, 0, 0), block_tokens=16)
    assert full.computed_tokens == 16  # the last block holds the last token: computed, never reused
    assert estimate(Reuse(hit_rate=1.0), 512, 1, rate_per_s=1, latency_s=1,
                    capacity_tokens=(0, 0, 0)).computed_tokens == 1


def test_measured_hits_served_from_the_named_tier() -> None:
    e = estimate(Reuse(hit_rate=0.5, hit_tier="host"), 1000, 1, rate_per_s=1, latency_s=1, capacity_tokens=(0, 0, 0))
    assert e.hit_by_tier == (0.0, 0.5, 0.0)
    with pytest.raises(ValidationError, match="hit_tier 'disk' places a measured hit_rate"):
        Reuse(hit_tier="disk")


def test_tier_load_adds_or_hides_as_the_runtime_does() -> None:
    import numpy as np

    from studio.engine.kv_tiers.prefix_cache import PrefixLoad, prefix_load

    gpu = np.array([10.0, 10.0])
    tokens = np.array([100.0, 1000.0])  # 1 ms and 10 ms... of link time at 0.01 ms per token
    assert PrefixLoad(0.0, 0.01, overlaps=True).iteration_ms(gpu, tokens).tolist() == [10.0, 10.0]
    assert PrefixLoad(0.0, 0.01, overlaps=False).iteration_ms(gpu, tokens).tolist() == pytest.approx([11.0, 20.0])
    e = estimate(Reuse(hit_rate=0.75, hit_tier="host"), 1000, 1, rate_per_s=1, latency_s=1, capacity_tokens=(0, 0, 0))
    load = prefix_load(e, 1e6, (1.0, 1.0), overlaps=False)  # 750 tokens × 1 MB at 1 GB/s = 750 ms
    assert load.cached_tokens == 750 and load.link_ms_per_token == pytest.approx(750.0 / 250.0)
    assert prefill_ms(e, 1.0, 1e6, (1.0, 1.0), overlaps=False) == pytest.approx(250.0 + 750.0)


def test_prefix_aware_routing_gives_each_replica_its_share_of_documents() -> None:
    docs = Reuse(document_share=0.9, documents=400)
    spread = estimate(docs, 8000, 100, rate_per_s=2, latency_s=2, capacity_tokens=(2e5, 0, 0))
    routed = estimate(docs, 8000, 100, rate_per_s=2, latency_s=2, capacity_tokens=(2e5, 0, 0), documents=400 / 8)
    assert routed.hit_rate > spread.hit_rate


def test_prefix_routing_flag_sets_the_tiers() -> None:
    import argparse

    from studio.commands.options.reuse_args import add_reuse_args, apply_tier_args

    parser = argparse.ArgumentParser()
    add_reuse_args(parser)
    assert apply_tier_args(parser.parse_args(["--prefix-routing", "on"]), KVTiers()).prefix_routing is True
    assert KVTiers().prefix_routing is False


def test_running_requests_keep_their_prefixes_resident():
    """With no HBM left over, the shared prompt still hits while requests run, and a document read
    by a running request is found in its blocks; with nothing running, neither hits."""
    reuse = Reuse(system_prompt_tokens=1000, document_share=1.0, documents=10)
    kw = dict(rate_per_s=2.0, latency_s=5.0, capacity_tokens=(0.0, 0.0, 0.0))
    idle = estimate(reuse, 9000.0, 200.0, running=0.0, **kw)
    busy = estimate(reuse, 9000.0, 200.0, running=10.0, **kw)
    assert idle.hit_rate == 0.0
    docs_hit = 8000.0 * (1.0 - math.exp(-10.0 / 10.0))
    assert busy.hit_rate == pytest.approx((1000.0 + docs_hit) / 9000.0, abs=1 / 9000)  # whole tokens
    assert busy.hit_by_tier[1] == busy.hit_by_tier[2] == 0.0  # resident blocks are HBM hits
