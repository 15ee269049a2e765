"""Rebuilding nodes and clusters from ``nvidia-smi topo -m`` matrices."""

from __future__ import annotations

import pytest

from studio.core.errors import StudioError
from studio.io.importers.topo import import_topology, match_gpu_name, parse_topo, topo_to_node

from .conftest import data_text


def _kinds_between(cluster, a, b):
    return [lk.kind for lk in cluster.links if {lk.a, lk.b} == {a, b}]


def _switch_of(cluster, dev):
    return {lk.b if lk.a == dev else lk.a for lk in cluster.links if dev in (lk.a, lk.b) and "pcie" in lk.kind}


def test_h100_box_gets_one_nvswitch_two_sockets_and_nics_beside_their_gpus(catalog):
    c = import_topology(data_text("topo/h100-8gpu-nvswitch-8nic.txt"), gpu_id="h100-sxm", nodes=1, catalog=catalog)
    (node,) = c.nodes
    kinds = {s.kind for s in node.switches}
    assert [s.id for s in node.switches if s.kind == "nvswitch"] == ["n0/nvswitch"]
    assert sum(1 for s in node.switches if s.kind == "cpu") == 2
    assert kinds == {"cpu", "pcie-switch", "nvswitch"}
    for i in range(8):
        assert _kinds_between(c, f"n0/gpu{i}", "n0/nvswitch") == ["nvlink4-nvswitch"]
        # NICk is PIX to GPUk: same PCIe switch
        assert _switch_of(c, f"n0/gpu{i}") == _switch_of(c, f"n0/nic{i}")
    assert {n.name for n in node.nics} == {f"mlx5_{i}" for i in range(8)}
    assert "pcie-gen5-switch" in c.link_kinds  # H100 hosts are PCIe Gen5
    assert _kinds_between(c, "n0/cpu0", "n0/cpu1") == ["pcie-gen5-xsocket"]


def test_sockets_follow_numa_affinity_when_the_matrix_says_sys_everywhere(catalog):
    c = import_topology(data_text("topo/rtx4090-8gpu-2nic-tabs.txt"), gpu_id="l40s", nodes=1, catalog=catalog)
    under = {}
    for lk in c.links:
        if lk.kind == "pcie-gen4-hostbridge":
            under[lk.a] = lk.b
    def socket(dev):
        (sw,) = _switch_of(c, dev)
        return under[sw]
    assert {socket(f"n0/gpu{i}") for i in range(4)} == {"n0/cpu0"}
    assert {socket(f"n0/gpu{i}") for i in range(4, 8)} == {"n0/cpu1"}
    assert socket("n0/nic0") == "n0/cpu1"  # PHB to GPU6
    assert _switch_of(c, "n0/nic0") == _switch_of(c, "n0/nic1")  # PIX to each other


BRIDGED = """\
\tGPU0\tGPU1\tGPU2\tGPU3\tCPU Affinity\tNUMA Affinity
GPU0\t X \tNV12\tPXB\tPXB\t0-31\t0
GPU1\tNV12\t X \tPXB\tPXB\t0-31\t0
GPU2\tPXB\tPXB\t X \tNV12\t0-31\t0
GPU3\tPXB\tPXB\tNV12\t X \t0-31\t0
"""


def test_bridge_pairs_become_direct_links_with_lanes_and_pxb_an_upstream_switch(catalog):
    spec = catalog.gpu("a100-pcie-80g")
    m = parse_topo(BRIDGED)
    node, links = topo_to_node(
        m, gpu_spec=spec, link_kinds=dict(catalog.links), node_id="box", name="Bridged A100"
    )
    nv = [lk for lk in links if lk.kind.startswith(spec.scale_up_link)]
    assert {(lk.a, lk.b, lk.lanes) for lk in nv} == {("box/gpu0", "box/gpu1", 12.0), ("box/gpu2", "box/gpu3", 12.0)}
    c = import_topology(BRIDGED, gpu_id="a100-pcie-80g", nodes=1, catalog=catalog)
    lane = c.link_kinds[nv[0].kind]
    bridge = catalog.link(spec.scale_up_link)
    assert lane.bandwidth_gbps * 12 == pytest.approx(bridge.bandwidth_gbps)
    # four PXB devices without PIX partners: four leaf switches under one upstream switch
    pcie = [s for s in node.switches if s.kind == "pcie-switch"]
    assert len(pcie) == 5 and sum("upstream" in s.name for s in pcie) == 1


def test_two_nodes_are_joined_through_a_fabric(catalog):
    c = import_topology(
        data_text("topo/l40s-4gpu-2nic-spaces.txt"), gpu_id="l40s", nodes=3, catalog=catalog, nic_kind="roce-400g"
    )
    assert c.num_gpus == 12 and len(c.nodes) == 3
    (fabric,) = [s for s in c.switches if s.kind == "fabric"]
    assert sum(1 for lk in c.links if fabric.id in (lk.a, lk.b) and lk.kind == "roce-400g") == 6


def test_nodes_without_nics_cannot_be_joined(catalog):
    with pytest.raises(StudioError, match="lists no NICs"):
        import_topology(BRIDGED, gpu_id="a100-pcie-80g", nodes=2, catalog=catalog)


def test_gpu_model_is_asked_for_unless_the_text_names_it(catalog):
    with pytest.raises(StudioError, match="does not say which GPU model it is; name it") as err:
        import_topology(BRIDGED, gpu_id=None, nodes=1, catalog=catalog)
    assert err.value.field == "gpu" and "--" not in err.value.message  # no CLI flag below the commands
    text = "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-a)\nGPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-b)\n"
    text += "\tGPU0\tGPU1\nGPU0\t X \tNV18\nGPU1\tNV18\t X \n"
    c = import_topology(text, gpu_id=None, nodes=1, catalog=catalog)
    assert c.gpu_types() == ["h100-sxm"]
    with pytest.raises(StudioError, match="unknown GPU 'h100'"):
        import_topology(text, gpu_id="h100", nodes=1, catalog=catalog)


def test_match_gpu_name(catalog):
    assert match_gpu_name("NVIDIA H200", catalog.gpus) == "h200-sxm"
    assert match_gpu_name("NVIDIA L40S", catalog.gpus) == "l40s"
    assert match_gpu_name("Tesla V100-SXM2-32GB", catalog.gpus) is None


def test_nvlinks_on_a_gpu_without_nvlink_is_an_error(catalog):
    with pytest.raises(StudioError, match="no scale-up link kind"):
        import_topology(BRIDGED, gpu_id="l40s", nodes=1, catalog=catalog)
