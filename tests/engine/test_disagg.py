"""Disaggregated prefill/decode: pools, KV transfer, latency, throughput, balance, bad input."""

from __future__ import annotations

import numpy as np
import pytest

from studio.commands.options.flags import cli_message
from studio.core.edits import add_template_node, connect_nodes_to_fabric
from studio.core.errors import StudioError
from studio.core.layout import Layout
from studio.core.precision import DType
from studio.core.serving_mode import PoolLayout, ServingMode, parse_pools
from studio.core.workload import Load, Workload
from studio.engine import evaluate
from studio.engine.disagg.evaluate import evaluate_disaggregated, place_pools
from studio.engine.disagg.kv_transfer import request_flows
from studio.engine.fabric.topology import topology_of
from studio.engine.step.iteration import IterationModel
from studio.io.project_file import project_from_json, project_to_json
from tests.engine.fixtures import (
    H200,
    HGX_H200,
    KINDS,
    L40S,
    L40S_BOX,
    LLAMA_8B,
    LLAMA_70B,
    cluster,
    llama,
    project,
)

WL = Workload(isl=2048, osl=256, max_batch=256)


def _h200(nodes: int = 2):
    return project(cluster(HGX_H200, nodes, H200), LLAMA_70B, workload=WL)


# ----------------------------------------------------------------------------- the spec
def test_parse_pools_reads_workers_layouts_and_gpu_types():
    m = parse_pools("2P:tp4,1D:tp8pp2@l40s")
    assert m.disaggregated and m.prefill == PoolLayout(workers=2, tp=4)
    assert (m.decode.workers, m.decode.tp, m.decode.pp, m.decode.gpu_type) == (1, 8, 2, "l40s")
    assert m.label == "2P(TP4)+1D(TP8×PP2)@l40s"
    assert parse_pools(m.spec()) == m


@pytest.mark.parametrize(
    "text, says",
    [
        ("2P:tp4", "lacks a decode (D) pool"),
        ("2P:tp4,1P:tp2,1D:tp8", "two prefill pools"),
        ("2X:tp4,1D:tp8", "cannot read '2X:tp4'"),
        ("0P:tp4,1D:tp8", "workers"),
        ("1P:tp4ep3,1D:tp8", "EP=3 does not divide TP×DP = 4"),
    ],
)
def test_parse_pools_names_the_form_and_the_cli_its_flag(text, says):
    with pytest.raises(StudioError) as e:
        parse_pools(text)
    assert e.value.field == "disagg" and says in e.value.message
    assert cli_message(e.value).startswith("--disagg: ")
    with pytest.raises(StudioError) as e:
        parse_pools(text, "Pools")  # a window names its own control
    assert e.value.message.startswith("Pools: ") and "--disagg" not in e.value.message


def test_project_without_serving_mode_loads_aggregated_and_the_mode_round_trips():
    p = _h200()
    assert not p.serving_mode.disaggregated
    q = p.replace(serving_mode=parse_pools("2P:tp4,1D:tp8"))
    back = project_from_json(project_to_json(q))
    assert back.serving_mode == q.serving_mode
    # an aggregated project is written as before (no serving_mode key), a disaggregated one with it
    assert '"serving_mode"' not in project_to_json(p) and '"serving_mode"' in project_to_json(q)


# ----------------------------------------------------------------------------- KV transfer
@pytest.mark.parametrize("tp_p, tp_d", [(4, 8), (8, 4), (2, 2), (8, 8), (1, 4)])
def test_transfer_moves_exactly_the_requests_kv_whatever_the_tp_sizes(tp_p, tp_d):
    # layers × KV heads × head dim × 2 (K, V) × bytes × ISL; heads replicated past 8 ranks are sent once
    m = LLAMA_70B
    expect = 80 * 8 * 128 * 2 * 2 * 2048
    pf = [[f"p{t}" for t in range(tp_p)]]
    dc = [[f"d{t}" for t in range(tp_d)]]
    flows = request_flows(m, DType.BF16, 2048, pf, dc, (80,), (80,))
    assert sum(flows.values()) == pytest.approx(expect)
    assert len(flows) == max(tp_p, tp_d)  # every rank of the larger side in exactly one flow
    assert {a for a, _ in flows} == set(pf[0]) and {b for _, b in flows} == set(dc[0])


def test_transfer_follows_pipeline_stages_layer_by_layer():
    flows = request_flows(LLAMA_70B, DType.FP8, 1000, [["p0"], ["p1"]], [["d0"]], (40, 40), (80,))
    per_layer = 8 * 128 * 2 * 1 * 1000
    assert flows == {("p0", "d0"): 40 * per_layer, ("p1", "d0"): 40 * per_layer}


def test_transfer_inside_a_node_rides_nvlink_and_across_nodes_the_nic():
    p = _h200(2)
    same = evaluate_disaggregated(p, parse_pools("1P:tp4,1D:tp4"))  # both pools on node 0
    cross = evaluate_disaggregated(p, parse_pools("2P:tp4,1D:tp8"))  # decode on node 1
    assert same.transfer.bottleneck_kind == "nvlink4-nvswitch"
    assert cross.transfer.bottleneck_kind == "ib-ndr"
    assert cross.transfer.time_ms > 5 * same.transfer.time_ms
    # 640 MiB over 8 flows of 80 MiB; each prefill GPU sends two flows (TP4 → TP8), so a NIC link
    # carries at least two and a flow gets at most half of its 47 GB/s
    t = cross.transfer
    assert t.bytes_per_request == pytest.approx(80 * 8 * 128 * 4 * 2048)
    assert t.flows == 8 and t.bytes_per_flow == pytest.approx(t.bytes_per_request / 8)
    assert t.bandwidth_gbps <= 50 * 0.94 / 2 + 1e-9
    assert t.time_ms == pytest.approx(
        t.latency_us / 1e3 + t.bytes_per_flow / (t.bandwidth_gbps * 1e9) * 1e3
    )
    assert "InfiniBand" in cross.why() and "TPOT" in cross.why()


# ----------------------------------------------------------------------------- latency and throughput
def test_tpot_is_a_decode_only_iteration_and_beats_the_aggregated_one():
    p = _h200(2).replace(workload=WL.replace(batch=64))
    res = evaluate_disaggregated(p, parse_pools("1P:tp8,1D:tp8"))
    top = topology_of(p.cluster)
    from studio.engine.disagg.evaluate import pool_costs
    from studio.engine.plan.evaluate import constants_for

    c = constants_for(None)
    lc = pool_costs(p, res.decode.pool, res.decode.placement, top, c)
    d = res.decode.batch
    expect = IterationModel(lc, c).round_ms(0.0, np.array([d]), 2048 + 128, 2048, np.array([1.0]))[
        0
    ]
    assert res.tpot_ms == pytest.approx(float(expect), rel=0.02)
    agg = evaluate(
        p.replace(cluster=cluster(HGX_H200, 1, H200)), Layout(tp=8)
    )  # one node, same batch
    assert agg.tpot_ms > res.tpot_ms  # prompt chunks join the aggregated iterations


def test_the_slower_pool_limits_and_more_prefill_workers_lift_it():
    p = _h200(2).replace(workload=WL.replace(load=Load(concurrency=512)))
    one = evaluate_disaggregated(p, parse_pools("1P:tp4,1D:tp8"))
    two = evaluate_disaggregated(p, parse_pools("2P:tp4,1D:tp8"))
    assert one.limited_by == "prefill" and two.limited_by == "prefill"
    assert two.saturation_rate_per_s == pytest.approx(2 * one.saturation_rate_per_s, rel=1e-6)
    assert two.output_tokens_per_s > 1.8 * one.output_tokens_per_s
    assert one.request_rate_per_s <= one.saturation_rate_per_s * (1 + 1e-9)
    # 512 users keep the prefill pool close to saturation; the ones waiting for it count in TTFT
    assert one.request_rate_per_s > 0.95 * one.saturation_rate_per_s
    assert one.queue_ms > one.prefill_ms and one.ttft_ms > two.ttft_ms


def test_an_open_loop_queues_more_as_the_rate_rises_and_saturates_above_capacity():
    p = _h200(2)
    mode = parse_pools("2P:tp4,1D:tp8")
    cap = evaluate_disaggregated(p, mode).saturation_rate_per_s
    ttfts = []
    for f in (0.2, 0.6, 0.9):
        wl = WL.replace(load=Load(mode="rate", rate_per_s=f * cap))
        r = evaluate_disaggregated(p.replace(workload=wl), mode)
        assert not r.saturated and r.request_rate_per_s == pytest.approx(f * cap)
        ttfts.append(r.ttft_ms)
    assert ttfts[0] < ttfts[1] < ttfts[2]
    over = evaluate_disaggregated(
        p.replace(workload=WL.replace(load=Load(mode="rate", rate_per_s=2 * cap))), mode
    )
    assert over.saturated and "saturation" in over.load_note


def test_balance_ratio_matches_the_pool_capacities_and_the_best_split_balances_them():
    p = _h200(2)
    res = evaluate_disaggregated(p, parse_pools("1P:tp2,1D:tp8"))
    b = res.balance
    assert b.ratio == pytest.approx(b.decode_worker_rps / b.prefill_worker_rps)
    x, y = b.best_prefill_workers, b.best_decode_workers
    assert x * 2 + y * 8 <= 16
    # at the best split neither pool has more than one worker's worth of spare capacity
    assert abs(x * b.prefill_worker_rps - y * b.decode_worker_rps) <= max(
        b.prefill_worker_rps, b.decode_worker_rps
    )


# ----------------------------------------------------------------------------- placement and mixed GPUs
def _mixed():
    cl = cluster(HGX_H200, 1, H200)
    cl, _ = add_template_node(cl, L40S_BOX, L40S, list(KINDS.values()), x=600)
    return connect_nodes_to_fabric(cl, KINDS["ib-ndr"])


def test_pools_on_different_gpu_types_run_on_those_gpus():
    p = project(_mixed(), LLAMA_8B, workload=WL)
    res = evaluate_disaggregated(p, parse_pools("2P:tp4@h200-sxm,4D:tp2@l40s"))
    assert res.prefill.gpu_types == ("h200-sxm",) and res.decode.gpu_types == ("l40s",)
    assert res.transfer.bottleneck_kind in ("ib-ndr", "pcie-gen4-switch", "pcie-gen4-hostbridge")
    assert res.fits and res.output_tokens_per_s > 0


def test_default_placement_keeps_every_worker_inside_one_node():
    p = _h200(2)
    pre, dec = place_pools(p, parse_pools("3P:tp2,2D:tp4"))
    top = topology_of(p.cluster)
    for pl, per in ((pre, 2), (dec, 4)):
        for w in range(len(pl) // per):
            assert len({top.gpu_node[g] for g in pl[w * per : (w + 1) * per]}) == 1


# ----------------------------------------------------------------------------- bad input
def test_a_pool_larger_than_the_gpus_is_refused_naming_the_field():
    with pytest.raises(StudioError, match=r"serving_mode.decode: 2 workers × TP8 × PP1 = 16 GPUs"):
        evaluate_disaggregated(_h200(2), parse_pools("1P:tp8,2D:tp8"))


def test_a_decode_pool_whose_kv_cannot_hold_one_sequence_is_refused():
    p = project(_mixed(), LLAMA_70B, workload=Workload(isl=900_000, osl=1000))
    with pytest.raises(
        StudioError,
        match=r"^serving_mode.decode: the KV cache .* less than one sequence of 901,000",
    ):
        evaluate_disaggregated(p, parse_pools("1P:tp8@h200-sxm,1D:tp8@l40s"))
    with pytest.raises(
        StudioError, match=r"^serving_mode.decode: a TP2 worker needs .* GiB per GPU"
    ):
        evaluate_disaggregated(p, parse_pools("1P:tp8@h200-sxm,1D:tp2@l40s"))


def test_pool_workers_follow_the_parallelism_rules_of_a_layout():
    """A worker is a TP × PP (× EP) instance of the model: a TP that does not split the attention
    heads, or an EP a dense model cannot have, is refused as the layout of an aggregated plan is."""
    heads40 = llama(5120, 48, 40, 8, 16384, "forty-heads")
    p = project(cluster(HGX_H200, 3, H200), heads40, workload=WL)
    with pytest.raises(
        StudioError,
        match=r"^serving_mode.prefill.tp: TP=16 does not divide the 40 attention heads; allowed: 1, 2, 4, 8, 40$",
    ):
        evaluate_disaggregated(p, parse_pools("1P:tp16,1D:tp8", "Pools"))
    with pytest.raises(StudioError, match=r"^serving_mode.decode.ep: .* has no experts .*; allowed: 1$"):
        evaluate_disaggregated(_h200(1), parse_pools("1P:tp4,1D:tp2ep2"))


def test_unknown_gpu_type_and_shared_gpus_are_refused():
    with pytest.raises(StudioError, match="gpu_type 'h100' is not a GPU type"):
        evaluate_disaggregated(_h200(1), parse_pools("1P:tp4@h100,1D:tp4"))
    with pytest.raises(ValueError, match="both list GPU"):
        ServingMode(
            mode="disaggregated",
            prefill=PoolLayout(placement=("n0/gpu0",)),
            decode=PoolLayout(placement=("n0/gpu0",)),
        )


# ----------------------------------------------------------------------------- request simulation
def test_simulated_ttft_agrees_with_the_closed_form_and_has_a_tail():
    from studio.engine.disagg.simulate import simulate_disaggregated

    p = _h200(2)
    mode = parse_pools("2P:tp4,1D:tp8")
    cap = evaluate_disaggregated(p, mode).saturation_rate_per_s
    means = []
    for f in (0.3, 0.6, 0.85):
        wl = WL.replace(load=Load(mode="rate", rate_per_s=f * cap, num_requests=3000))
        q = p.replace(workload=wl)
        closed = evaluate_disaggregated(q, mode)
        sim = simulate_disaggregated(q, f * cap, mode)
        assert sim.requests == 3000
        assert sim.ttft.mean == pytest.approx(closed.ttft_ms, rel=0.3)
        assert sim.ttft.p50 <= sim.ttft.p99
        assert sim.tpot_ms == pytest.approx(closed.tpot_ms, rel=1e-6)
        means.append(sim.ttft.mean)
    assert means == sorted(means)


def test_a_full_decode_pool_makes_requests_wait_for_a_slot():
    from studio.engine.disagg.simulate import simulate_disaggregated

    p = _h200(2).replace(workload=WL.replace(batch=2))  # two sequences per decode worker
    mode = parse_pools("3P:tp4,1D:tp4")
    cap = evaluate_disaggregated(p, mode).saturation_rate_per_s
    sim = simulate_disaggregated(p, 3 * cap, mode, num_requests=400)
    assert sim.decode_wait.p99 > 0
    assert sim.ttft.p99 > sim.decode_wait.p99
