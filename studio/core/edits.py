"""Pure edit functions on clusters and projects: each returns a new, validated value.

The GUI wraps each call in one undo command; the CLI and scripts call them directly.
"""

from __future__ import annotations

import re

from studio.core import parallelism as par
from studio.core.architecture import LLMArchitecture
from studio.core.building.templates import gpu_wiring, instantiate
from studio.core.errors import StudioError, first_error_message
from studio.core.hardware import (
    Cluster,
    GpuInstance,
    GpuSpec,
    Link,
    LinkKind,
    Node,
    NodeTemplate,
    Switch,
)
from studio.core.project import Project, drop_unrunnable_pinned


def fresh_id(taken: set[str], base: str) -> str:
    """``base`` made unique against ``taken`` by a numeric suffix."""
    base = re.sub(r"[^A-Za-z0-9_.:/\-]", "-", base) or "item"
    if base not in taken:
        return base
    stem = re.sub(r"-?\d+$", "", base) or base
    i = 1
    while f"{stem}-{i}" in taken:
        i += 1
    return f"{stem}-{i}"


def _all_ids(cluster: Cluster) -> set[str]:
    ids = cluster.endpoint_ids() | {n.id for n in cluster.nodes} | {lk.id for lk in cluster.links}
    return ids


def _with_catalog(cluster: Cluster, gpu_specs: list[GpuSpec], link_kinds: list[LinkKind]) -> dict:
    specs = dict(cluster.gpu_specs)
    for s in gpu_specs:
        specs.setdefault(s.id, s)
    kinds = dict(cluster.link_kinds)
    for k in link_kinds:
        kinds.setdefault(k.id, k)
    return {"gpu_specs": specs, "link_kinds": kinds}


def _rebuild(cluster: Cluster, **fields) -> Cluster:
    data = {
        "name": cluster.name,
        "nodes": cluster.nodes,
        "switches": cluster.switches,
        "links": cluster.links,
        "gpu_specs": cluster.gpu_specs,
        "link_kinds": cluster.link_kinds,
    }
    data.update(fields)
    try:
        return Cluster(**data)
    except ValueError as exc:  # pydantic.ValidationError is a ValueError
        raise StudioError(first_error_message(exc)) from None



def add_template_node(
    cluster: Cluster,
    template: NodeTemplate,
    gpu_spec: GpuSpec,
    link_kinds: list[LinkKind],
    x: float = 0.0,
    y: float = 0.0,
    name: str | None = None,
) -> tuple[Cluster, tuple[str, ...]]:
    """Add the node(s) of ``template``; returns the new cluster and the new node ids."""
    taken = _all_ids(cluster)
    prefix = fresh_id(taken, f"n{len(cluster.nodes)}")
    while any(i.startswith(prefix + "/") or i.startswith(prefix + "t") for i in taken):
        prefix = fresh_id(taken | {prefix}, prefix + "x")
    nodes, switches, links = instantiate(template, prefix, name=name, x=x, y=y)
    cat = _with_catalog(cluster, [gpu_spec], link_kinds)
    new = _rebuild(
        cluster,
        nodes=cluster.nodes + nodes,
        switches=cluster.switches + switches,
        links=cluster.links + links,
        **cat,
    )
    return new, tuple(n.id for n in nodes)


def add_empty_node(cluster: Cluster, name: str = "Node", slots: int = 8, x: float = 0.0, y: float = 0.0) -> tuple[Cluster, str]:
    """Add a node without GPUs (GPUs are dropped into it later)."""
    nid = fresh_id(_all_ids(cluster), f"n{len(cluster.nodes)}")
    node = Node(id=nid, name=name, slots=slots, x=x, y=y)
    return _rebuild(cluster, nodes=cluster.nodes + (node,)), nid


def add_gpu(cluster: Cluster, node_id: str, spec: GpuSpec, slot: int | None = None,
            template: NodeTemplate | None = None, link_kinds: list[LinkKind] | None = None) -> tuple[Cluster, str]:
    """Put a GPU of ``spec`` into ``node_id`` (first free slot unless ``slot`` is given).

    With the node's ``template`` (the one it was built from), the GPU is wired as the template
    wires the GPU of that slot (:func:`studio.core.building.templates.gpu_wiring`): its PCIe switch and its
    share of the scale-up fabric, so a GPU deleted and dropped back returns with its links.
    ``link_kinds`` are the catalog's kinds, for a template kind the cluster no longer lists.

    Raises
    ------
    StudioError
        The node does not exist, is full, or the slot is taken.
    """
    try:
        node = cluster.node(node_id)
    except KeyError:
        raise StudioError(f"there is no node '{node_id}'") from None
    free = node.free_slots()
    if not free:
        raise StudioError(f"node '{node.name}' is full ({node.slots} slots)")
    if slot is None:
        slot = free[0]
    elif slot not in free:
        raise StudioError(f"slot {slot} of node '{node.name}' is taken or out of range")
    taken = _all_ids(cluster)
    gid = fresh_id(taken, f"{node.id}/gpu{slot}")
    gpu = GpuInstance(id=gid, type=spec.id, slot=slot)
    new_node = node.replace(gpus=node.gpus + (gpu,))
    nodes = tuple(new_node if n.id == node_id else n for n in cluster.nodes)
    links: list[Link] = []
    kinds = list(link_kinds or [])
    if template is not None and node.template == template.id:
        taken.add(gid)
        for lk in gpu_wiring(template, new_node, gid, slot, _rack_switch(cluster, node)):
            if lk.kind not in cluster.link_kinds and not any(k.id == lk.kind for k in kinds):
                raise StudioError(f"node template '{template.id}' wires GPUs with link kind '{lk.kind}', "
                                  "which neither the cluster nor the catalog defines")
            lid = lk.id if lk.id not in taken else fresh_id(taken, lk.id)
            taken.add(lid)
            links.append(lk.replace(id=lid))
    cat = _with_catalog(cluster, [spec], kinds)
    return _rebuild(cluster, nodes=nodes, links=cluster.links + tuple(links), **cat), gid


def _rack_switch(cluster: Cluster, node: Node) -> str | None:
    """The cluster-level switch (a rack's NVLink switch) the node's GPUs are linked to, if any."""
    own = {g.id for g in node.gpus}
    rack = {s.id for s in cluster.switches}
    for lk in cluster.links:
        if lk.a in own and lk.b in rack:
            return lk.b
        if lk.b in own and lk.a in rack:
            return lk.a
    return None


def add_link(cluster: Cluster, kind: LinkKind, a: str, b: str, lanes: float = 1.0) -> tuple[Cluster, str]:
    """Join endpoints ``a`` and ``b`` (GPU, switch or NIC ids) with a link of ``kind``."""
    ends = cluster.endpoint_ids()
    for e in (a, b):
        if e not in ends:
            raise StudioError(f"'{e}' is not a GPU, switch or NIC of this cluster")
    if a == b:
        raise StudioError("a link needs two different ends")
    lid = fresh_id(_all_ids(cluster), f"{a}~{b}")
    cat = _with_catalog(cluster, [], [kind])
    link = Link(id=lid, kind=kind.id, a=a, b=b, lanes=lanes)
    return _rebuild(cluster, links=cluster.links + (link,), **cat), lid


def set_link_kind(cluster: Cluster, link_id: str, kind: LinkKind) -> Cluster:
    """Change the kind of one link (e.g. NVLink -> PCIe)."""
    try:
        cluster.link(link_id)
    except KeyError:
        raise StudioError(f"there is no link '{link_id}'") from None
    links = tuple(lk.replace(kind=kind.id) if lk.id == link_id else lk for lk in cluster.links)
    return _rebuild(cluster, links=links, **_with_catalog(cluster, [], [kind]))


def remove_items(cluster: Cluster, ids: set[str] | list[str] | tuple[str, ...]) -> Cluster:
    """Delete nodes, GPUs, switches, NICs and links by id; links left dangling go too."""
    ids = set(ids)
    nodes = []
    for n in cluster.nodes:
        if n.id in ids:
            ids.update(g.id for g in n.gpus)
            ids.update(s.id for s in n.switches)
            ids.update(x.id for x in n.nics)
            continue
        nodes.append(
            n.replace(
                gpus=tuple(g for g in n.gpus if g.id not in ids),
                switches=tuple(s for s in n.switches if s.id not in ids),
                nics=tuple(x for x in n.nics if x.id not in ids),
            )
        )
    switches = tuple(s for s in cluster.switches if s.id not in ids)
    links = tuple(lk for lk in cluster.links if lk.id not in ids and lk.a not in ids and lk.b not in ids)
    return _rebuild(cluster, nodes=tuple(nodes), switches=switches, links=links)


def move_nodes(cluster: Cluster, positions: dict[str, tuple[float, float]]) -> Cluster:
    """Set the canvas position of nodes and cluster-level switches (one undo step for a drag)."""
    nodes = tuple(
        n.replace(x=positions[n.id][0], y=positions[n.id][1]) if n.id in positions else n for n in cluster.nodes
    )
    switches = tuple(
        s.replace(x=positions[s.id][0], y=positions[s.id][1]) if s.id in positions else s for s in cluster.switches
    )
    return _rebuild(cluster, nodes=nodes, switches=switches)


def rename_node(cluster: Cluster, node_id: str, name: str) -> Cluster:
    name = name.strip()
    if not name:
        raise StudioError("a node name cannot be empty")
    if len(name) > 120:
        raise StudioError("a node name is at most 120 characters")
    nodes = tuple(n.replace(name=name) if n.id == node_id else n for n in cluster.nodes)
    return _rebuild(cluster, nodes=nodes)


def duplicate_node(cluster: Cluster, node_id: str, dx: float = 60.0, dy: float = 60.0) -> tuple[Cluster, str]:
    """Copy a node with its GPUs, switches, NICs and the links inside it."""
    try:
        node = cluster.node(node_id)
    except KeyError:
        raise StudioError(f"there is no node '{node_id}'") from None
    taken = _all_ids(cluster)
    new_id = fresh_id(taken, f"n{len(cluster.nodes)}")
    while any(i.startswith(new_id + "/") for i in taken):
        new_id = fresh_id(taken | {new_id}, new_id + "x")

    def remap(i: str) -> str:
        return new_id + i[len(node.id):] if i.startswith(node.id + "/") else f"{new_id}/{i}"

    inner = {g.id for g in node.gpus} | {s.id for s in node.switches} | {x.id for x in node.nics}
    new_node = Node(
        id=new_id,
        name=f"{node.name} copy",
        slots=node.slots,
        gpus=tuple(g.replace(id=remap(g.id)) for g in node.gpus),
        switches=tuple(s.replace(id=remap(s.id)) for s in node.switches),
        nics=tuple(x.replace(id=remap(x.id)) for x in node.nics),
        template=node.template,
        x=node.x + dx,
        y=node.y + dy,
    )
    new_links = tuple(
        Link(id=fresh_id(taken, remap(lk.id)), kind=lk.kind, a=remap(lk.a), b=remap(lk.b), lanes=lk.lanes)
        for lk in cluster.links
        if lk.a in inner and lk.b in inner
    )
    return _rebuild(cluster, nodes=cluster.nodes + (new_node,), links=cluster.links + new_links), new_id


def set_gpu_price(cluster: Cluster, gpu_type: str, price: float) -> Cluster:
    """Edit the price per GPU-hour of a GPU type in this cluster's catalogue."""
    if gpu_type not in cluster.gpu_specs:
        raise StudioError(f"GPU type '{gpu_type}' is not used in this cluster")
    specs = dict(cluster.gpu_specs)
    specs[gpu_type] = specs[gpu_type].replace(price_per_gpu_hour=price)
    return _rebuild(cluster, gpu_specs=specs)


def connect_nodes_to_fabric(cluster: Cluster, kind: LinkKind, fabric_name: str = "Network fabric") -> Cluster:
    """Add a fabric switch (if none of this kind exists) and link every unlinked NIC of kind
    ``kind`` to it: the usual way nodes are joined by InfiniBand or RoCE."""
    fabric = next((s for s in cluster.switches if s.kind == "fabric" and s.name == fabric_name), None)
    switches = cluster.switches
    if fabric is None:
        xs = [n.x for n in cluster.nodes] or [0.0]
        ys = [n.y for n in cluster.nodes] or [0.0]
        fid = fresh_id(_all_ids(cluster), "fabric")
        fabric = Switch(id=fid, kind="fabric", name=fabric_name, x=sum(xs) / len(xs), y=max(ys) + 420)
        switches = switches + (fabric,)
    taken = _all_ids(cluster)
    # NICs already joined to this fabric, looked up in a set (not by scanning every link per NIC)
    linked = {lk.a for lk in cluster.links if lk.b == fabric.id} | {lk.b for lk in cluster.links if lk.a == fabric.id}
    new_links = []
    for n in cluster.nodes:
        for nic in n.nics:
            if nic.kind != kind.id or nic.id in linked:
                continue
            lid = fresh_id(taken, f"{nic.id}~{fabric.id}")
            taken.add(lid)
            new_links.append(Link(id=lid, kind=kind.id, a=nic.id, b=fabric.id))
    return _rebuild(
        cluster, switches=switches, links=cluster.links + tuple(new_links), **_with_catalog(cluster, [], [kind])
    )


def join_fabric(cluster: Cluster, node_ids: tuple[str, ...] | list[str]) -> tuple[Cluster, int]:
    """Link the NICs of ``node_ids`` to the drawing's network fabric, as the other nodes are.

    The fabric is the cluster-level ``fabric`` switch with the most links; the new links take the
    kind its links have most (the kind of the existing inter-node links). Only NICs of the same
    link family (InfiniBand to an InfiniBand fabric, RoCE to RoCE) are joined. Without a fabric,
    one is added when another node has NICs of the same kind (as :func:`connect_nodes_to_fabric`).

    Returns
    -------
    (cluster, joined):
        The new cluster and how many NICs were linked (0 when there is nothing to join).
    """
    new_ids = set(node_ids)
    new_nodes = [n for n in cluster.nodes if n.id in new_ids]
    nics = [x for n in new_nodes for x in n.nics]
    if not nics:
        return cluster, 0
    fabrics = [s for s in cluster.switches if s.kind == "fabric"]
    if not fabrics:
        kind_id = nics[0].kind
        others = any(x.kind == kind_id for n in cluster.nodes if n.id not in new_ids for x in n.nics)
        if not others:
            return cluster, 0
        before = len(cluster.links)
        out = connect_nodes_to_fabric(cluster, cluster.link_kinds[kind_id])
        return out, len(out.links) - before
    degree = {s.id: 0 for s in fabrics}
    kinds: dict[str, dict[str, int]] = {s.id: {} for s in fabrics}
    for lk in cluster.links:
        for end in (lk.a, lk.b):
            if end in degree:
                degree[end] += 1
                kinds[end][lk.kind] = kinds[end].get(lk.kind, 0) + 1
    fabric = max(fabrics, key=lambda s: degree[s.id])
    if kinds[fabric.id]:
        kind = cluster.link_kinds[max(kinds[fabric.id], key=lambda k: kinds[fabric.id][k])]
    else:
        kind = cluster.link_kinds[nics[0].kind]
    fabric_ids = {s.id for s in fabrics}
    linked = {lk.a for lk in cluster.links if lk.b in fabric_ids} | {lk.b for lk in cluster.links if lk.a in fabric_ids}
    taken = _all_ids(cluster)
    links = []
    for nic in nics:
        nic_kind = cluster.link_kinds.get(nic.kind)
        if nic.id in linked or nic_kind is None or nic_kind.family != kind.family:
            continue
        lid = fresh_id(taken, f"{nic.id}~{fabric.id}")
        taken.add(lid)
        links.append(Link(id=lid, kind=kind.id, a=nic.id, b=fabric.id))
    if not links:
        return cluster, 0
    return _rebuild(cluster, links=cluster.links + tuple(links)), len(links)


def with_model(project: Project, model: LLMArchitecture, ref: str | None) -> Project:
    """``project`` running ``model`` (``ref``: the preset id or path it came from). A per-stage
    layer split that no longer adds up goes back to the even split, and pinned layouts the new
    model cannot run are dropped; the rest of the layout stays."""
    layout = project.layout
    if layout.layers_per_stage is not None and par.split_reason(model, layout.layers_per_stage, layout.pp):
        layout = layout.replace(layers_per_stage=None)
    return drop_unrunnable_pinned(project.replace(model=model, model_ref=ref, layout=layout))
