"""Build whole clusters from templates: N identical nodes joined by their NICs through a fabric."""

from __future__ import annotations

from studio.core.building.templates import TRAY_COLUMNS, TRAY_SPACING_Y, instantiate
from studio.core.edits import connect_nodes_to_fabric
from studio.core.errors import StudioError, first_error_message
from studio.core.hardware import (
    MAX_CLUSTER_GPUS,
    MAX_CLUSTER_LINKS,
    MAX_CLUSTER_NODES,
    Cluster,
    GpuSpec,
    Link,
    LinkKind,
    Node,
    NodeTemplate,
    Switch,
)

NODE_SPACING_X = 520.0


#: Most copies of a node template one cluster is built from.
MAX_NODES = 4096


def build_cluster(
    template: NodeTemplate,
    nodes: int,
    gpu_spec: GpuSpec,
    link_kinds: dict[str, LinkKind],
    name: str | None = None,
) -> Cluster:
    """``nodes`` copies of ``template`` (GPU type ``gpu_spec``), NICs joined through one fabric.

    Parameters
    ----------
    link_kinds:
        The link-kind catalogue; must hold every kind the template names.
    """
    if not 1 <= nodes <= MAX_NODES:
        raise StudioError(f"the node count must be between 1 and {MAX_NODES} (got {nodes})", field="nodes")
    needed = {template.pcie_switch_link, template.host_link}
    for k in (template.socket_link, template.scale_up_link, template.nic_kind):
        if k:
            needed.add(k)
    missing = sorted(k for k in needed if k not in link_kinds)
    if missing:
        raise StudioError(f"node template '{template.id}' names unknown link kinds: {', '.join(missing)}")
    kinds = [link_kinds[k] for k in sorted(needed)]
    if gpu_spec.id != template.gpu_type:
        template = template.replace(gpu_type=gpu_spec.id)
    # Every copy is expanded first and the cluster validated once (adding copies one by one would
    # re-validate the growing cluster each time: quadratic, minutes for 1,000 nodes).
    # Ids follow the same rule as ``edits.add_template_node`` (prefix ``n<nodes so far>``).
    all_nodes: list[Node] = []
    all_switches: list[Switch] = []
    all_links: list[Link] = []
    cols = max(1, min(nodes, 4))
    first = _check_size(template, nodes, name=template.name if nodes == 1 else f"{template.name} #0")
    for i in range(nodes):
        if template.trays > 1:  # a rack: its trays form a grid (see templates.TRAY_COLUMNS)
            rows = -(-template.trays // TRAY_COLUMNS)
            x, y = 0.0, i * (rows * TRAY_SPACING_Y + 120.0)
        else:
            x = (i % cols) * NODE_SPACING_X
            y = (i // cols) * 420.0
        node_name = template.name if nodes == 1 else f"{template.name} #{i}"
        parts = first if i == 0 else instantiate(template, f"n{len(all_nodes)}", name=node_name, x=x, y=y)
        all_nodes += parts[0]
        all_switches += parts[1]
        all_links += parts[2]
    try:
        cluster = Cluster(
            name=name or (template.name if nodes == 1 else f"{nodes}× {template.name}"),
            nodes=tuple(all_nodes),
            switches=tuple(all_switches),
            links=tuple(all_links),
            gpu_specs={gpu_spec.id: gpu_spec},
            link_kinds={k.id: k for k in kinds},
        )
    except ValueError as exc:  # pydantic.ValidationError is a ValueError
        raise StudioError(f"node template '{template.id}': {first_error_message(exc)}") from None
    if nodes > 1 and template.nic_kind:
        cluster = connect_nodes_to_fabric(cluster, link_kinds[template.nic_kind])
    return cluster


def _check_size(
    template: NodeTemplate, nodes: int, name: str
) -> tuple[tuple[Node, ...], tuple[Switch, ...], tuple[Link, ...]]:
    """Refuse a cluster over the limits *before* any copy is built: one copy is expanded to count
    its GPUs and links, and the totals (with one fabric link per NIC) are checked against
    :data:`MAX_CLUSTER_GPUS`, :data:`MAX_CLUSTER_NODES` and :data:`MAX_CLUSTER_LINKS`.

    Returns that copy, the cluster's first (ids ``n0``, named ``name``, at the origin), which
    :func:`build_cluster` would otherwise expand a second time (a third of a two-node build)."""
    gpus = template.gpus_per_node * template.trays * nodes
    if gpus > MAX_CLUSTER_GPUS or nodes * template.trays > MAX_CLUSTER_NODES:
        raise StudioError(
            f"{nodes:,} × '{template.id}' ({template.trays * template.gpus_per_node:,} GPUs each) is "
            f"{gpus:,} GPUs; a cluster holds at most {MAX_CLUSTER_GPUS:,} GPUs "
            f"(at most {MAX_CLUSTER_GPUS // max(1, template.trays * template.gpus_per_node):,} such nodes)"
        )
    one = instantiate(template, "n0", name=name, x=0.0, y=0.0)
    per_copy = len(one[2]) + (template.nics * template.trays if template.nic_kind and nodes > 1 else 0)
    if per_copy * nodes > MAX_CLUSTER_LINKS:
        raise StudioError(
            f"{nodes:,} × '{template.id}' ({per_copy:,} links each) is {per_copy * nodes:,} links; a "
            f"cluster holds at most {MAX_CLUSTER_LINKS:,} (at most {MAX_CLUSTER_LINKS // per_copy:,} such nodes)"
        )
    return one
