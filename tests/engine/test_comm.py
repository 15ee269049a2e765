"""Communication over the drawn link graph: paths, NVSwitch vs PCIe vs network."""

from __future__ import annotations

import pytest

from studio.core.errors import StudioError
from studio.core.layout import Layout
from studio.core.workload import Workload
from studio.engine import evaluate
from studio.engine.fabric.topology import path_between
from tests.engine.fixtures import (
    DGX_H100,
    FP8,
    H100_PCIE_ONLY,
    L40S,
    L40S_BOX,
    LLAMA_70B,
    cluster,
    project,
)


def test_decode_allreduce_about_5us_tp8_nvlink_h100():
    # concept card: ~5 µs per layer at TP=8 on NVLink H100 for a decode-sized message; the measured
    # TensorRT-LLM custom all-reduce (aiconfigurator tables, H100 SXM, 8 GPUs, 16 KiB) is 3.8 µs
    r = evaluate(project(cluster(DGX_H100, 1), LLAMA_70B, Layout(tp=8), workload=Workload(batch=1)))
    assert 3.0 <= r.allreduce_us_per_layer_decode <= 8.0
    dec = [c for c in r.comm if c.kind == "allreduce" and c.phase == "decode"][0]
    assert dec.algorithm == "one-shot" and dec.bottleneck_kind == "nvlink4-nvswitch"


def test_path_between_gpus_in_node_and_across():
    c = cluster(DGX_H100, 2)
    gpus = [g.id for g in c.gpus]
    p = path_between(c, gpus[0], gpus[1])
    assert p.bottleneck_kind == "nvlink4-nvswitch" and len(p.hops) == 2
    q = path_between(c, gpus[0], gpus[8])
    assert q.bottleneck_kind in ("ib-ndr",) and q.bandwidth_gbps == pytest.approx(50 * 0.94)
    assert q.latency_us > p.latency_us
    with pytest.raises(StudioError, match="not a GPU"):
        path_between(c, gpus[0], "nope")


def test_pcie_ring_shares_socket_link():
    c = cluster(L40S_BOX, 1, L40S)
    r = evaluate(project(c, LLAMA_70B, Layout(tp=8), workload=Workload(batch=8), serving=FP8))
    pre = [x for x in r.comm if x.kind == "allreduce" and x.phase == "prefill"][0]
    assert pre.bottleneck_kind in ("pcie-gen4-xsocket", "pcie-gen4-hostbridge")
    assert "TP_OVER_SLOW_LINK" in {w.code for w in r.warnings}
    assert "TP_GT4_NO_NVSWITCH" in {w.code for w in r.warnings}


def test_tp_over_pcie_degrades_ttft_and_throughput_vs_nvlink():
    # concept card: TP across PCIe costs 30-50% TTFT and 60-80% sustained throughput
    w = Workload(isl=2048, osl=256)
    nv = evaluate(project(cluster(DGX_H100, 1), LLAMA_70B, Layout(tp=8), workload=w))
    pc = evaluate(project(cluster(H100_PCIE_ONLY, 1), LLAMA_70B, Layout(tp=8), workload=w))
    assert pc.ttft_ms > 1.3 * nv.ttft_ms
    assert pc.output_tokens_per_s < 0.6 * nv.output_tokens_per_s


def test_tp_across_nodes_warns_and_names_network():
    r = evaluate(project(cluster(DGX_H100, 2), LLAMA_70B, Layout(tp=16)))
    w = {x.code: x for x in r.warnings}
    assert "TP_CROSSES_NODE" in w and w["TP_CROSSES_NODE"].links
    assert any(c.bottleneck_kind == "ib-ndr" for c in r.comm if c.kind == "allreduce")


def test_pp_p2p_over_network_between_nodes():
    r = evaluate(project(cluster(DGX_H100, 2), LLAMA_70B, Layout(tp=8, pp=2)))
    hop = [c for c in r.comm if c.kind == "p2p"][0]
    assert hop.bottleneck_kind == "ib-ndr" and r.p2p_us_per_boundary_decode > 0


def test_disconnected_gpus_are_a_clear_error():
    c = cluster(DGX_H100, 1)
    c2 = c.model_copy(update={"links": tuple(lk for lk in c.links if "nvswitch" not in lk.id and "pcie" not in lk.id)})
    with pytest.raises(StudioError, match="not joined"):
        evaluate(project(c2, LLAMA_70B, Layout(tp=8)))


@pytest.mark.filterwarnings("ignore:invalid value encountered in multiply:RuntimeWarning")  # inf × 0 on purpose
def test_one_size_takes_the_same_time_as_the_array_code():
    # Collective.time_us answers one size in Python floats; it must equal the array code bit for
    # bit, limits, infinities and NaN included (np.minimum lets a NaN win)
    import math

    import numpy as np

    from studio.engine.fabric.comm import Algo, Collective
    from studio.engine.step.costing import coll_time_us

    def algo(alpha, per_byte, limit):
        return Algo("a", alpha, per_byte, limit, 1.0, None, None)

    cols = [
        Collective("allreduce", ("g0",), (algo(5.0, 1e-4, 2**20), algo(20.0, 3e-5, math.inf))),
        Collective("allreduce", ("g1",), (algo(5.0, 1e-4, 2**20), algo(20.0, 3e-5, math.inf))),
        Collective("allreduce", ("g2",), (algo(7.5, 2e-4, math.inf),)),
        Collective("p2p", ("g3",), (algo(math.nan, 1e-4, math.inf), algo(1.0, 0.0, math.inf))),
        Collective("p2p", ("g4",), (algo(1.0, 0.0, 10.0),)),
    ]
    sizes = [0.0, 1.0, 2**20, 2**20 + 1, 3.7e9, math.inf, math.nan]
    for col in cols:
        whole = col.time_us(np.array(sizes))
        for i, s in enumerate(sizes):
            one = col.time_us(s)
            assert type(one) is np.float64
            assert one == whole[i] or (math.isnan(one) and math.isnan(whole[i])), (col.group, s)
    # replicas with the same algorithms are timed once; the slowest is the same as over all of them
    for size in (1.0, 2**21, np.array(sizes)):
        want = cols[0].time_us(size)
        for col in cols[1:3]:
            want = np.maximum(want, col.time_us(size))
        np.testing.assert_array_equal(coll_time_us(cols[:3], size), want)


def _fresh_route_search(monkeypatch):
    """Every Topology built from here on searches its own routes: empty caches, no route class."""
    from collections import OrderedDict

    from studio.engine.fabric import topology as T

    for name in ("_STORES", "_SHAPES", "_ROUTE_TABLES", "_SKELETONS", "_CACHE"):
        monkeypatch.setattr(T, name, OrderedDict())
    monkeypatch.setattr(T, "_route_class", lambda links, figures: None)


def test_figures_that_order_the_links_alike_share_routes_and_cost_as_a_fresh_search(monkeypatch):
    # a link fit tries ~45 bandwidths of one kind: the route tables of figures that order the link
    # bandwidths alike are shared; at ties with the other links (and just either side) the paths and
    # the all-reduce must still be those of a topology that searched its own routes
    from studio.core.project import LinkFit
    from studio.engine.fabric.comm import allreduce
    from studio.engine.fabric.topology import Topology
    from studio.engine.step.constants import default_constants

    c = cluster(DGX_H100, 4)
    gpus = [g.id for g in c.gpus]
    k = default_constants()
    ib = c.link_kinds["ib-ndr"].effective_gbps
    others = sorted({c.link_kinds[lk.kind].effective_gbps * lk.lanes for lk in c.links if lk.kind != "ib-ndr"})
    trials = [ib / 32, ib / 16, ib, 4 * ib] + [x * f for x in others for f in (1 - 1e-9, 1.0, 1 + 1e-9)]
    pairs = [(a, b) for a in (gpus[0], gpus[9]) for b in gpus if a != b]

    def fits(lat: float, bw: float) -> dict[str, LinkFit]:
        return {"ib-ndr": LinkFit(latency_us=lat, bandwidth_gbps=bw)}

    def costs() -> list:
        out = []
        for lat in (0.0, 1.0, 200.0):
            for bw in trials:
                topo = Topology(c, fits(lat, bw))
                out.append(([topo.path(a, b) for a, b in pairs], allreduce(topo, gpus, k)))
        return out

    assert Topology(c, fits(1.0, ib / 32))._store._routes is Topology(c, fits(1.0, ib / 16))._store._routes
    tie = others[0]
    assert Topology(c, fits(1.0, tie))._store._routes is not Topology(c, fits(1.0, tie * (1 + 1e-9)))._store._routes
    assert Topology(c, fits(0.0, ib))._store._routes is not Topology(c, fits(1.0, ib))._store._routes
    shared = costs()
    _fresh_route_search(monkeypatch)
    assert costs() == shared


def _sharing_by_hand(topo, pairs):
    """Reference for ``Topology.concurrent``: every link direction shared equally by the
    transfers that cross it, computed afresh from the paths."""
    paths = [topo.path(a, b) for a, b in pairs if a != b]
    load: dict = {}
    for p in paths:
        for step in zip(p.link_index, p.forward, strict=True):
            load[step] = load.get(step, 0) + 1
    bw = min(topo.link_bw[li] / load[(li, f)] for p in paths for li, f in zip(p.link_index, p.forward, strict=True))
    return bw, max(p.latency_us for p in paths)


def test_concurrent_transfers_are_remembered_per_link_graph_and_figures():
    """``Topology.concurrent`` keeps its answers with the link graph's path store, so the next
    sweep of the same cluster asks nothing twice; a topology with other link figures (a fitted
    InfiniBand) has a store of its own and gets its own answers."""
    from studio.core.project import LinkFit
    from studio.engine.fabric.topology import Topology

    c = cluster(DGX_H100, 4)
    gpus = [g.id for g in c.gpus]
    ring = [(gpus[i], gpus[(i + 8) % 32]) for i in range(32)]  # every GPU sends across nodes
    rails = [(gpus[i], gpus[i + 8]) for i in range(8)]
    inside = [(gpus[i], gpus[(i + 1) % 8]) for i in range(8)]
    topo = Topology(c)
    for pairs in (ring, rails, inside):
        first = topo.concurrent(pairs)
        assert topo.concurrent(list(pairs)) == first  # asked again (a list this time): the same
        assert (first[0], first[2]) == pytest.approx(_sharing_by_hand(topo, pairs))
        assert Topology(c).concurrent(pairs) == first  # a new Topology of the cluster shares them
    assert Topology(c)._sharing is topo._sharing
    slow = Topology(c, {"ib-ndr": LinkFit(latency_us=9.0, bandwidth_gbps=12.5)})
    assert slow._sharing is not topo._sharing
    bw, _, lat = slow.concurrent(rails)
    assert (bw, lat) == pytest.approx(_sharing_by_hand(slow, rails))
    assert bw < topo.concurrent(rails)[0]  # the fitted, slower network: not the other's answer


def test_allreduce_is_costed_once_per_group_link_graph_and_constants():
    """``allreduce`` keeps its answers with the link graph: asked again for a group (by a new
    Topology of the same cluster too) it hands back the same collective; other constants get
    their own answer, as computed afresh."""
    from studio.engine import default_constants
    from studio.engine.fabric.comm import _allreduce, allreduce
    from studio.engine.fabric.topology import Topology

    c = cluster(DGX_H100, 2)
    gpus = [g.id for g in c.gpus]
    base = default_constants()
    slower = base.with_overrides({"nccl_step_latency_us": 3 * base.nccl_step_latency_us})
    topo = Topology(c)
    for group in (gpus[:8], gpus, gpus[::2]):
        first = allreduce(topo, group, base)
        assert first == _allreduce(topo, group, base)
        assert allreduce(Topology(c), list(group), base) is first
        other = allreduce(topo, group, slower)
        assert other == _allreduce(topo, group, slower) and other != first


def test_clusters_of_other_gpus_on_the_same_links_do_not_answer_each_others_all_reduces():
    """H100 and H200 boxes drawn alike share one path store (the same links), but an all-reduce
    inside a box is timed from its GPU's measured tables: the H200's is its own, not the H100's
    kept from an earlier plan (a sweep of 70B on 2× H100 moved the next H200 sweep's best figure)."""
    from studio.engine import default_constants
    from studio.engine.fabric.comm import _allreduce, allreduce
    from studio.engine.fabric.topology import Topology
    from tests.engine.fixtures import H100, H200, HGX_H200

    c = default_constants()
    h100 = Topology(cluster(DGX_H100, 2, H100))
    h200 = Topology(cluster(HGX_H200, 2, H200))
    group = [f"n0/gpu{i}" for i in range(8)]
    first = allreduce(h100, group, c)
    assert allreduce(h200, group, c) == _allreduce(h200, group, c) != first
