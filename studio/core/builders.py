"""Build whole clusters from templates: N identical nodes joined by their NICs through a fabric."""

from __future__ import annotations

from studio.core.edits import add_template_node, connect_nodes_to_fabric
from studio.core.errors import StudioError
from studio.core.hardware import Cluster, GpuSpec, LinkKind, NodeTemplate
from studio.core.templates import TRAY_COLUMNS, TRAY_SPACING_Y

NODE_SPACING_X = 520.0


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
    if not 1 <= nodes <= 4096:
        raise StudioError(f"--nodes must be between 1 and 4096 (got {nodes})")
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
    cluster = Cluster(name=name or f"{nodes}× {template.name}")
    cols = max(1, min(nodes, 4))
    for i in range(nodes):
        if template.trays > 1:  # a rack: its trays form a grid (see templates.TRAY_COLUMNS)
            cols = 1
            rows = -(-template.trays // TRAY_COLUMNS)
            x, y = 0.0, i * (rows * TRAY_SPACING_Y + 120.0)
        else:
            x = (i % cols) * NODE_SPACING_X
            y = (i // cols) * 420.0
        node_name = template.name if nodes == 1 else f"{template.name} #{i}"
        cluster, _ = add_template_node(cluster, template, gpu_spec, kinds, x=x, y=y, name=node_name)
    if nodes > 1 and template.nic_kind:
        cluster = connect_nodes_to_fabric(cluster, link_kinds[template.nic_kind])
    return cluster
