"""``build_cluster`` builds N template copies in one validation pass; the result must be exactly what
adding the copies one by one with the edit functions gives (ids, names, positions, fabric links)."""

from __future__ import annotations

import pytest

from studio.core.building.builders import NODE_SPACING_X, build_cluster
from studio.core.building.templates import TRAY_COLUMNS, TRAY_SPACING_Y
from studio.core.edits import add_template_node, connect_nodes_to_fabric
from studio.core.hardware import Cluster
from studio.io.presets import load_catalog

CAT = load_catalog()


def _one_by_one(template_id: str, nodes: int) -> Cluster:
    """The cluster built the slow way: one ``add_template_node`` per copy, then the fabric."""
    t = CAT.node(template_id)
    spec = CAT.gpu(t.gpu_type)
    kinds = [CAT.links[k] for k in sorted({t.pcie_switch_link, t.host_link} | {
        k for k in (t.socket_link, t.scale_up_link, t.nic_kind) if k})]
    cluster = Cluster(name=t.name if nodes == 1 else f"{nodes}× {t.name}")
    cols = max(1, min(nodes, 4))
    for i in range(nodes):
        if t.trays > 1:
            x, y = 0.0, i * (-(-t.trays // TRAY_COLUMNS) * TRAY_SPACING_Y + 120.0)
        else:
            x, y = (i % cols) * NODE_SPACING_X, (i // cols) * 420.0
        name = t.name if nodes == 1 else f"{t.name} #{i}"
        cluster, _ = add_template_node(cluster, t, spec, kinds, x=x, y=y, name=name)
    if nodes > 1 and t.nic_kind:
        cluster = connect_nodes_to_fabric(cluster, CAT.links[t.nic_kind])
    return cluster


@pytest.mark.parametrize("template_id", sorted(CAT.nodes))
@pytest.mark.parametrize("nodes", [1, 3])
def test_bulk_build_equals_adding_nodes_one_by_one(template_id: str, nodes: int) -> None:
    t = CAT.node(template_id)
    fast = build_cluster(t, nodes, CAT.gpu(t.gpu_type), CAT.links)
    slow = _one_by_one(template_id, nodes)
    assert fast.model_dump(mode="json") == slow.model_dump(mode="json")


def test_fabric_links_every_nic_once_and_is_idempotent() -> None:
    t = CAT.node("dgx-h100")
    c = build_cluster(t, 3, CAT.gpu("h100-sxm"), CAT.links)
    fabric = next(s for s in c.switches if s.kind == "fabric")
    nics = [nic.id for n in c.nodes for nic in n.nics]
    to_fabric = sorted(lk.a for lk in c.links if lk.b == fabric.id)
    assert to_fabric == sorted(nics) and len(nics) == 3 * t.nics
    again = connect_nodes_to_fabric(c, CAT.links[t.nic_kind])
    assert len(again.links) == len(c.links)
