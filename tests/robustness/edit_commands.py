"""Random edit commands for the undo/redo property tests: each is a label and a pure
``Cluster -> Cluster`` function built from :mod:`studio.core.edits`."""

from __future__ import annotations

from collections.abc import Callable

from hypothesis import strategies as st

from studio.core import edits
from studio.core.hardware import Cluster
from studio.io.presets import Catalog

Command = tuple[str, Callable[[Cluster], Cluster]]
#: Small single-tray templates keep each example fast.
TEMPLATES = ("l4-4x", "dgx-h100", "h100-pcie-8x-bridge", "mi300x-8x")
KINDS = ("nvlink4", "pcie5", "ib-ndr", "roce-400g")


def _pick(data: st.DataObject, items: list, label: str):
    return data.draw(st.sampled_from(sorted(items)), label=label) if items else None


def draw_command(data: st.DataObject, cluster: Cluster, catalog: Catalog) -> Command:
    """One edit applicable to ``cluster`` (it may still be refused with a StudioError)."""
    node_ids = [n.id for n in cluster.nodes]
    ends = sorted(cluster.endpoint_ids())
    link_ids = [lk.id for lk in cluster.links]
    kinds = [k for k in KINDS if k in catalog.links]
    op = data.draw(
        st.sampled_from(
            ["template", "empty", "gpu", "link", "kind", "move", "rename", "duplicate", "remove", "price"]
        ),
        label="op",
    )
    if op == "template" or not node_ids:
        t = catalog.node(data.draw(st.sampled_from([t for t in TEMPLATES if t in catalog.nodes]), label="template"))
        spec = catalog.gpu(t.gpu_type)
        need = {t.pcie_switch_link, t.host_link, t.socket_link, t.scale_up_link, t.nic_kind} - {None}
        link_kinds = [catalog.link(k) for k in sorted(need)]
        x = data.draw(st.floats(-5000, 5000), label="x")
        return f"add {t.id}", lambda c: edits.add_template_node(c, t, spec, link_kinds, x=x)[0]
    if op == "empty":
        slots = data.draw(st.integers(1, 16), label="slots")
        return "add empty node", lambda c: edits.add_empty_node(c, slots=slots)[0]
    if op == "gpu":
        node = _pick(data, node_ids, "node")
        spec = catalog.gpu(data.draw(st.sampled_from(["h100-sxm", "l4"]), label="gpu"))
        return f"add gpu to {node}", lambda c: edits.add_gpu(c, node, spec)[0]
    if op == "link" and len(ends) >= 2:
        a = _pick(data, ends, "a")
        b = _pick(data, ends, "b")
        kind = catalog.link(_pick(data, kinds, "kind"))
        return f"link {a}-{b}", lambda c: edits.add_link(c, kind, a, b)[0]
    if op == "kind" and link_ids:
        lid = _pick(data, link_ids, "link")
        kind = catalog.link(_pick(data, kinds, "kind"))
        return f"kind of {lid}", lambda c: edits.set_link_kind(c, lid, kind)
    if op == "move":
        node = _pick(data, node_ids, "node")
        xy = (data.draw(st.floats(-1e4, 1e4), label="x"), data.draw(st.floats(-1e4, 1e4), label="y"))
        return f"move {node}", lambda c: edits.move_nodes(c, {node: xy})
    if op == "rename":
        node = _pick(data, node_ids, "node")
        name = data.draw(st.text(min_size=0, max_size=20), label="name")
        return f"rename {node}", lambda c: edits.rename_node(c, node, name)
    if op == "duplicate":
        node = _pick(data, node_ids, "node")
        return f"duplicate {node}", lambda c: edits.duplicate_node(c, node)[0]
    if op == "price" and cluster.gpu_specs:
        gpu_type = _pick(data, list(cluster.gpu_specs), "type")
        price = data.draw(st.floats(0, 50), label="price")
        return f"price {gpu_type}", lambda c: edits.set_gpu_price(c, gpu_type, price)
    victims = data.draw(st.lists(st.sampled_from(ends + node_ids + link_ids), max_size=3), label="remove")
    return f"remove {victims}", lambda c: edits.remove_items(c, victims)
