"""Only link kinds that can physically join two endpoints are offered (studio.service.project_edits.link_compat)."""

from __future__ import annotations

from studio.core.building.builders import build_cluster
from studio.core.edits import add_template_node
from studio.io.presets import load_catalog
from studio.service.project_edits.link_compat import compatible_kinds, refusal, why_not

CAT = load_catalog()


def _cluster(template_id: str, nodes: int = 2):
    t = CAT.node(template_id)
    return build_cluster(t, nodes, CAT.gpu(t.gpu_type), CAT.links)


def _ids(kinds):
    return [k.id for k in kinds]


def test_two_h100_sxm_in_one_box_get_their_nvlink_and_pcie_never_xgmi_or_a_rack_link():
    c = _cluster("dgx-h100")
    g0, g1 = c.nodes[0].gpus[:2]
    ids = _ids(compatible_kinds(c, CAT.links, g0.id, g1.id))
    assert ids[0] == "nvlink4-nvswitch"
    assert set(ids) == {"nvlink4-nvswitch", "pcie-gen4-switch", "pcie-gen4-hostbridge", "pcie-gen5-switch",
                        "pcie-gen5-hostbridge"}
    assert "not the scale-up link" in why_not(c, CAT.links["xgmi-mi300x"], g0.id, g1.id)
    assert why_not(c, CAT.links["nvlink5-rack"], g0.id, g1.id) is not None


def test_gpus_of_two_dgx_boxes_cannot_be_joined_directly():
    c = _cluster("dgx-h100")
    a, b = c.nodes[0].gpus[0].id, c.nodes[1].gpus[0].id
    assert compatible_kinds(c, CAT.links, a, b) == []
    assert "does not leave the chassis" in why_not(c, CAT.links["nvlink4-nvswitch"], a, b)
    assert refusal(c, a, b) == f"No link kind can join gpu '{a}' and gpu '{b}' in different servers"


def test_pcie_bridge_stays_inside_the_chassis():
    c = _cluster("h100-pcie-8x-bridge")
    same = c.nodes[0].gpus
    assert "nvlink-bridge-h100" in _ids(compatible_kinds(c, CAT.links, same[0].id, same[1].id))
    other = c.nodes[1].gpus[0]
    assert "nvlink-bridge-h100" not in _ids(compatible_kinds(c, CAT.links, same[0].id, other.id))


def test_mi300x_gets_xgmi_and_no_nvlink():
    c = _cluster("mi300x-8x", 1)
    g = c.nodes[0].gpus
    ids = _ids(compatible_kinds(c, CAT.links, g[0].id, g[1].id))
    assert "xgmi-mi300x" in ids and not any(i.startswith("nvlink") for i in ids)


def test_gb200_trays_of_one_rack_join_over_the_rack_switch_only():
    c = _cluster("gb200-nvl72", 1)
    trays = c.nodes
    a, b = trays[0].gpus[0].id, trays[1].gpus[0].id
    assert _ids(compatible_kinds(c, CAT.links, a, b)) == ["nvlink5-rack"]
    rack = next(s.id for s in c.switches if s.kind == "nvlink-switch")
    assert _ids(compatible_kinds(c, CAT.links, a, rack)) == ["nvlink5-rack"]


def test_nics_join_the_network_they_speak():
    c = _cluster("dgx-h100")
    n0, n1 = c.nodes[0].nics[0].id, c.nodes[1].nics[0].id
    ids = _ids(compatible_kinds(c, CAT.links, n0, n1))
    assert ids[0] == "ib-ndr" and set(ids) == {"ib-hdr", "ib-ndr", "ib-xdr"}
    t = CAT.node("l40s-8x-pcie")
    mixed, new = add_template_node(c, t, CAT.gpu(t.gpu_type), list(CAT.links.values()), x=3000)
    roce_nic = next(n for n in mixed.nodes if n.id == new[0]).nics[0].id
    assert compatible_kinds(mixed, CAT.links, n0, roce_nic) == []
    assert "speaks" in why_not(mixed, CAT.links["roce-400g"], n0, roce_nic)
