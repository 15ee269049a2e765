"""Prefix caching in the request simulation: each request draws a hit (HBM, host, NVMe) or a miss
of its reused prompt; the draws keep the plan's mean, hits prefill less (and wait for a slow link),
and with caching off the run is the one without any reuse."""

from __future__ import annotations

import numpy as np
import pytest

from studio.cli import build_parser
from studio.commands.options.project_args import project_from_args
from studio.core.settings.reuse import KVTiers, Reuse
from studio.core.workload import Load
from studio.engine import evaluate
from studio.engine.kv_tiers.draws import MISS, PrefixDraws, draw
from studio.engine.serving.under_load import serving_setup, simulate_plan

CHAT = Reuse(system_prompt_tokens=2000, turns=8, history_tokens_per_turn=1000, think_time_s=20)


def _chat(tiers: KVTiers, rate: float = 2.0, reuse: Reuse = CHAT):
    """Llama-3.1-70B, TP4 × DP2 on one DGX H100 (host memory and NVMe from its template)."""
    ns = build_parser(["studio.commands.simulate"]).parse_args(
        ["simulate", "--node-template", "dgx-h100", "--model", "llama-3.1-70b", "--tp", "4"])
    p = project_from_args(ns)
    wl = p.workload.replace(isl=8000, osl=300, reuse=reuse,
                            load=Load(mode="rate", rate_per_s=rate, num_requests=400, seed=3))
    return p.replace(workload=wl, serving=p.serving.replace(kv_tiers=tiers))


@pytest.fixture(scope="module")
def runs():
    off = _chat(KVTiers(prefix_cache=False))
    hbm = _chat(KVTiers())
    host = _chat(KVTiers(host_gib=1024))
    return {k: (p, simulate_plan(p)) for k, p in (("off", off), ("hbm", hbm), ("host", host))}


def test_caching_off_is_the_run_without_reuse(runs):
    p, sim = runs["off"]
    plain = simulate_plan(p.replace(workload=p.workload.replace(reuse=Reuse())))
    assert sim.prefix is None and sim == plain


def test_hits_per_tier_and_ttft_follow_the_tiers(runs):
    _, off = runs["off"]
    _, hbm = runs["hbm"]
    p, host = runs["host"]
    for sim in (hbm, host):
        assert sim.prefix is not None and sum(sim.prefix.requests) == sim.requests
    assert host.prefix.requests[1] > 0.8 * host.requests  # the history comes back from host memory
    assert hbm.prefix.requests[1] == hbm.prefix.requests[2] == 0  # no host or NVMe tier
    assert host.ttft.p50 < hbm.ttft.p50 < off.ttft.p50
    assert host.ttft.p99 < off.ttft.p99
    plan = evaluate(p).prefix_cache
    assert host.prefix.hit_rate == pytest.approx(plan["hit_rate"], abs=0.03)


def test_draws_keep_the_plans_mean():
    d = PrefixDraws(shared_share=0.1, reusable_share=0.6, tier_share=(0.1, 0.2, 0.15),
                    load_ms_per_token=(0.001, 0.01), shared_tokens=800)
    lens = np.full(20_000, 8000)
    h = draw(d, lens, np.random.default_rng(0))
    assert h.hit_tokens.mean() / 8000 == pytest.approx(0.1 + 0.45, abs=0.01)
    shares = [(h.tier == k).mean() for k in range(MISS + 1)]
    assert shares == pytest.approx([0.1 / 0.6, 0.2 / 0.6, 0.15 / 0.6, 0.15 / 0.6], abs=0.01)
    assert (h.load_ms[h.tier == 0] == 0).all() and (h.load_ms[h.tier == 2] > h.load_ms[h.tier == 1].max()).all()
    assert (h.computed >= 1).all() and (h.computed[h.tier == MISS] == 8000 - 800).all()


def test_a_slow_host_link_delays_the_first_token():
    fast = _chat(KVTiers(host_gib=1024, host_link_gbps=63.0), rate=0.2)
    slow = _chat(KVTiers(host_gib=1024, host_link_gbps=0.5), rate=0.2)
    s_fast, s_slow = simulate_plan(fast), simulate_plan(slow)
    setup = serving_setup(slow)
    assert setup.prefix is not None
    # the history's KV (~3,500 tokens) over 8 GPUs × 0.5 GB/s takes longer than its prefill
    load_ms = 3500 * setup.prefix.load_ms_per_token[0]
    assert s_slow.prefix.ttft_hit.p50 >= load_ms > s_fast.prefix.ttft_hit.p50
