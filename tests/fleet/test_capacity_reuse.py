"""Capacity with prompt reuse: the replica rate within the SLO comes from the simulation with each
request's prefix hit, so prefix caching and a host tier need fewer replicas for the same traffic."""

from __future__ import annotations

from studio.core.settings.reuse import KVTiers, Reuse
from studio.io.fleet_presets import load_traffic
from studio.service.fleet import FleetOptions, capacity_plan

CHAT = Reuse(system_prompt_tokens=2000, turns=8, history_tokens_per_turn=1000, think_time_s=20)


def test_reuse_raises_the_replica_rate_and_lowers_the_fleet(example):
    chat = example.replace(workload=example.workload.replace(isl=8000, osl=300, reuse=CHAT))
    opts = FleetOptions(3000.0, 60.0, requests=200)
    traffic = load_traffic("business-hours-chat")
    plans = [capacity_plan(chat.replace(serving=chat.serving.replace(kv_tiers=t)), traffic, opts)
             for t in (KVTiers(prefix_cache=False), KVTiers(), KVTiers(host_gib=1024, host_link_gbps=63.0))]
    rates = [p.capacity.rate_per_s for p in plans]
    assert rates[0] < rates[1] < rates[2], rates
    assert plans[0].prefix_hit_rate is None and "prefix_cache_hit_rate" not in plans[0].to_json()["replica"]
    assert 0 < plans[1].prefix_hit_rate < plans[2].prefix_hit_rate <= 1
    assert plans[2].to_json()["replica"]["prefix_cache_hit_rate"] == plans[2].prefix_hit_rate
    peaks = [int(p.plan.replicas.max()) for p in plans]
    assert peaks[2] < peaks[0], peaks
