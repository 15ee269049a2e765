"""The capacity plan of the documented example: replicas per hour that the request simulation
confirms at every peak hour (the SLO met with the planned replicas, missed with one fewer), the
autoscaler's lead, spot spares, and cost and energy that add up."""

from __future__ import annotations

import numpy as np
import pytest

from studio.engine.fleet.replica import Slo, replica_setup, simulate_rate
from studio.io.fleet_presets import load_traffic
from studio.service.fleet import FleetOptions, capacity_plan

SLO = Slo(2000.0, 50.0)
REQUESTS = 200  # per replica and rate tried: small and fast, the same in the plan and the replay


@pytest.fixture(scope="module")
def chat():
    return load_traffic("business-hours-chat")


@pytest.fixture(scope="module")
def no_lag_plan(example, chat):
    opts = FleetOptions(SLO.ttft_p99_ms, SLO.tpot_p99_ms, headroom=0.0, requests=REQUESTS, engine_start_s=0,
                        graph_capture_s=0, storage_gbps=1e9)
    return capacity_plan(example, chat, opts)


def test_peak_hours_meet_the_slo_with_the_plan_and_miss_it_with_one_fewer(example, chat, no_lag_plan):
    plan = no_lag_plan.plan
    setup = replica_setup(example)
    peaks = np.nonzero(chat.rates_per_s >= 0.95 * chat.peak_per_s)[0]
    assert peaks.size >= 2
    for k in peaks:
        rate, replicas = float(chat.rates_per_s[k]), int(plan.replicas[k])
        assert replicas == plan.needed[k] > 1
        met = simulate_rate(setup, example, rate, replicas, REQUESTS, 0)
        assert SLO.met(met), (k, replicas, met.ttft.p99, met.tpot.p99)
        short = simulate_rate(setup, example, rate, replicas - 1, REQUESTS, 0)
        assert not SLO.met(short), (k, replicas - 1, short.ttft.p99, short.tpot.p99)


def test_the_replica_rate_is_found_within_saturation(no_lag_plan):
    c = no_lag_plan.capacity
    assert 0 < c.rate_per_s < c.failing_rate_per_s <= c.saturation_rate_per_s
    assert c.failing_rate_per_s - c.rate_per_s < 1e-3 * c.saturation_rate_per_s
    assert c.ttft_p99_ms <= SLO.ttft_p99_ms and c.tpot_p99_ms <= SLO.tpot_p99_ms


def test_headroom_lag_and_spot_only_add_replicas(example, chat, no_lag_plan):
    base = no_lag_plan.plan
    opts = FleetOptions(SLO.ttft_p99_ms, SLO.tpot_p99_ms, headroom=0.25, requests=REQUESTS, burst="spot",
                        spot_usd_per_gpu_hour=1.0, spot_preemptions_per_hour=2.0)
    p = capacity_plan(example, chat, opts).plan
    assert p.ready.total_s > 60  # 141 GB from storage, start-up and graph capture
    assert np.all(p.needed >= base.needed) and np.all(p.replicas >= p.needed)
    # the morning ramp is met a ready time ahead: the slot before a rise holds the next slot's need
    rise = int(np.argmax(np.diff(p.needed)))
    assert p.replicas[rise] >= p.needed[rise + 1] > p.needed[rise]
    # preempted spot replicas are replaced after the ready time: spares above the lead in the burst
    assert np.any(p.replicas > np.maximum(p.needed, np.roll(p.needed, -1)))
    assert p.slo_met.all()


def test_cost_and_energy_add_up(example, no_lag_plan):
    p = no_lag_plan.plan
    j = no_lag_plan.to_json()
    assert j["cost"]["usd_per_day"] == pytest.approx(j["cost"]["reserved_usd_per_day"] + j["cost"]["burst_usd_per_day"])
    assert j["cost"]["usd_per_month"] == pytest.approx(j["cost"]["usd_per_day"] * 365.25 / 12)
    price = no_lag_plan.plan.pricing.burst_usd_per_gpu_hour
    assert j["cost"]["usd_per_day"] == pytest.approx(p.gpu_hours_per_day * price)  # reserved = on-demand price
    assert j["energy"]["kwh_per_day"] == pytest.approx(sum(s["watts"] for s in j["slots"]) / 1e3)  # hourly slots
    assert j["energy"]["facility_kwh_per_day"] > j["energy"]["kwh_per_day"]
    board = example.cluster.gpu_specs["h100-sxm"].power_w
    assert np.all(p.watts <= p.gpus * board) and np.all(p.watts > 0.1 * p.gpus * board)  # within idle … board
    tokens = p.traffic.requests_per_day * p.osl
    assert j["energy"]["j_per_output_token"] == pytest.approx(j["energy"]["kwh_per_day"] * 3.6e6 / tokens)
