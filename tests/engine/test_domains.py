"""NVLink domains versus node boxes, and naming the slowest hop a collective crosses."""

from __future__ import annotations

from pathlib import Path

import pytest

from studio.core.layout import Layout
from studio.engine import evaluate, sweep
from studio.engine.fabric.topology import topology_of
from studio.io.project_file import load_project

EXAMPLES = Path(__file__).resolve().parents[2] / "presets" / "examples"


@pytest.fixture(scope="module")
def nvl72():
    return load_project(EXAMPLES / "gb200-nvl72-deepseek-v3.json")


@pytest.fixture(scope="module")
def two_dgx():
    return load_project(EXAMPLES / "dgx-h100-2node-llama-405b.json")


def test_nvl72_rack_is_one_island_of_18_trays(nvl72):
    topo = topology_of(nvl72.cluster)
    assert len(topo.nodes_of(topo.gpu_ids)) == 18
    assert len(topo.islands_of(topo.gpu_ids)) == 1


def test_two_dgx_boxes_are_two_islands(two_dgx):
    topo = topology_of(two_dgx.cluster)
    assert len(topo.islands_of(topo.gpu_ids)) == 2


def test_tp8_across_two_trays_stays_on_the_rack_nvlink(nvl72):
    r = evaluate(nvl72)
    assert r.layout.tp == 8
    topo = topology_of(nvl72.cluster)
    assert len(topo.nodes_of(r.stages[0].gpus)) == 2  # the group spans two trays
    codes = {w.code: w for w in r.warnings}
    assert "TP_CROSSES_NODE" not in codes
    assert codes["TP_SPANS_NODES_IN_NVLINK_DOMAIN"].severity == "info"
    ars = [c for c in r.comm if c.kind == "allreduce"]
    assert ars
    for c in ars:
        assert "hierarchical" not in c.algorithm and "flat ring" not in c.algorithm
        assert c.bottleneck_kind == "nvlink5-rack"


def test_tp16_across_dgx_boxes_keeps_the_network_warning(two_dgx):
    r = evaluate(two_dgx, Layout(tp=16))
    assert "TP_CROSSES_NODE" in {w.code for w in r.warnings}
    assert all("hierarchical" in c.algorithm or "flat ring" in c.algorithm for c in r.comm if c.kind == "allreduce")


def test_tp16_names_the_infiniband_hop_in_both_phases(two_dgx):
    r = evaluate(two_dgx, Layout(tp=16))
    ars = [c for c in r.comm if c.kind == "allreduce"]
    assert {c.phase for c in ars} == {"prefill", "decode"}
    for c in ars:
        assert c.bottleneck_kind == "ib-ndr", (c.phase, c.algorithm, c.bottleneck_kind)
        assert c.bottleneck_link is not None and "fabric" in c.bottleneck_link


def test_sweep_reason_for_tp16_names_infiniband(two_dgx):
    s = sweep(two_dgx)
    line = next(x for x in s.reasons if x.startswith("TP16×PP1"))
    assert "over ib-ndr" in line
    assert "over nvlink4-nvswitch (hierarchical" not in line

