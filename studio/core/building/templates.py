"""Expand a :class:`NodeTemplate` into nodes, switches and links (pure functions)."""

from __future__ import annotations

from studio.core.hardware import GpuInstance, Link, Nic, Node, NodeTemplate, Switch

#: Trays of a rack-scale template are laid out in a grid of this many columns on the canvas.
TRAY_COLUMNS = 6
TRAY_SPACING_X = 250.0
TRAY_SPACING_Y = 330.0


def instantiate(
    template: NodeTemplate,
    prefix: str,
    name: str | None = None,
    x: float = 0.0,
    y: float = 0.0,
) -> tuple[tuple[Node, ...], tuple[Switch, ...], tuple[Link, ...]]:
    """Build the node(s) of ``template`` with every id starting ``prefix``.

    Returns
    -------
    nodes, cluster_switches, links
        ``cluster_switches`` is non-empty only for rack-scale templates (the NVLink switch that the
        trays share).

    Layout of the generated fabric
        * ``nvswitch``: one NVSwitch per node, each GPU linked to it with ``scale_up_link``.
        * ``nvlink-rack``: ``trays`` nodes, all GPUs linked to one rack NVLink switch.
        * ``bridge-pairs``: GPU 2k and 2k+1 joined by a bridge link.
        * ``xgmi-mesh``: every GPU pair joined directly.
        * In every template: PCIe switches (``gpus_per_pcie_switch`` GPUs each) under CPU sockets,
          sockets joined by ``socket_link``, and NICs on the PCIe switches (one per switch, or
          spread evenly when there are more NICs).
    """
    t = template
    nodes: list[Node] = []
    links: list[Link] = []
    cluster_switches: list[Switch] = []
    rack_switch: Switch | None = None
    if t.fabric == "nvlink-rack":
        cols = min(t.trays, TRAY_COLUMNS)
        rack_switch = Switch(  # centred above the tray grid (switch items are drawn centred)
            id=f"{prefix}nvl",
            kind="nvlink-switch",
            name=f"{t.name} NVLink switch",
            x=x + (cols * TRAY_SPACING_X - (TRAY_SPACING_X - 200.0)) / 2,
            y=y - 70.0,
        )
        cluster_switches.append(rack_switch)
    for tray in range(t.trays):
        nid = f"{prefix}t{tray}" if t.trays > 1 else prefix.rstrip("/-.") or prefix
        base_name = name or t.name
        node_name = f"{base_name} tray {tray}" if t.trays > 1 else base_name
        gpus = tuple(
            GpuInstance(id=f"{nid}/gpu{i}", type=t.gpu_type, slot=i) for i in range(t.gpus_per_node)
        )
        switches: list[Switch] = []
        n_sw = max(1, -(-t.gpus_per_node // t.gpus_per_pcie_switch))
        sockets = min(t.sockets, n_sw)
        for s in range(sockets):
            switches.append(Switch(id=f"{nid}/cpu{s}", kind="cpu", name=f"CPU {s}"))
        for p in range(n_sw):
            switches.append(Switch(id=f"{nid}/pcie{p}", kind="pcie-switch", name=f"PCIe switch {p}"))
        if t.fabric == "nvswitch":
            switches.append(Switch(id=f"{nid}/nvswitch", kind="nvswitch", name="NVSwitch"))
        nics = tuple(
            Nic(id=f"{nid}/nic{k}", kind=t.nic_kind or "", name=f"NIC {k}") for k in range(t.nics)
        ) if t.nic_kind else ()
        nodes.append(
            Node(
                id=nid,
                name=node_name,
                slots=t.gpus_per_node,
                gpus=gpus,
                switches=tuple(switches),
                nics=nics,
                template=t.id,
                x=x + (tray % TRAY_COLUMNS) * TRAY_SPACING_X,
                y=y + (tray // TRAY_COLUMNS) * TRAY_SPACING_Y,
            )
        )
        # PCIe tree
        for i, g in enumerate(gpus):
            p = i // t.gpus_per_pcie_switch
            links.append(Link(id=f"{g.id}~pcie{p}", kind=t.pcie_switch_link, a=g.id, b=f"{nid}/pcie{p}"))
        for p in range(n_sw):
            s = p * sockets // n_sw
            links.append(Link(id=f"{nid}/pcie{p}~cpu{s}", kind=t.host_link, a=f"{nid}/pcie{p}", b=f"{nid}/cpu{s}"))
        if sockets > 1 and t.socket_link:
            for s in range(sockets - 1):
                links.append(
                    Link(id=f"{nid}/cpu{s}~cpu{s + 1}", kind=t.socket_link, a=f"{nid}/cpu{s}", b=f"{nid}/cpu{s + 1}")
                )
        for k, nic in enumerate(nics):
            p = k * n_sw // len(nics)
            links.append(Link(id=f"{nic.id}~pcie{p}", kind=t.pcie_switch_link, a=nic.id, b=f"{nid}/pcie{p}"))
        # scale-up fabric
        if t.scale_up_link:
            lanes = t.scale_up_lanes
            if t.fabric == "nvswitch":
                for g in gpus:
                    links.append(Link(id=f"{g.id}~nvswitch", kind=t.scale_up_link, a=g.id, b=f"{nid}/nvswitch", lanes=lanes))
            elif t.fabric == "nvlink-rack" and rack_switch is not None:
                for g in gpus:
                    links.append(Link(id=f"{g.id}~nvl", kind=t.scale_up_link, a=g.id, b=rack_switch.id, lanes=lanes))
            elif t.fabric == "bridge-pairs":
                for i in range(0, len(gpus) - 1, 2):
                    links.append(Link(id=f"{gpus[i].id}~{gpus[i + 1].id}", kind=t.scale_up_link, a=gpus[i].id, b=gpus[i + 1].id, lanes=lanes))
            elif t.fabric == "xgmi-mesh":
                for i in range(len(gpus)):
                    for j in range(i + 1, len(gpus)):
                        links.append(Link(id=f"{gpus[i].id}~{gpus[j].id}", kind=t.scale_up_link, a=gpus[i].id, b=gpus[j].id, lanes=lanes))
    return tuple(nodes), tuple(cluster_switches), tuple(links)


def gpu_wiring(template: NodeTemplate, node: Node, gpu_id: str, slot: int,
               rack_switch: str | None = None) -> tuple[Link, ...]:
    """The links :func:`instantiate` gives the GPU in ``slot`` of a node of ``template``, for a GPU
    ``gpu_id`` put into that slot later (one dropped back after a delete): its PCIe switch, and its
    share of the scale-up fabric (the node's NVSwitch, the rack's NVLink switch ``rack_switch``, its
    bridge partner, or every other GPU of an xGMI mesh). Only ends the node (or the rack) has are
    linked; ids follow the template's and may need making unique by the caller."""
    t = template
    ends = {s.id for s in node.switches} | ({rack_switch} if rack_switch else set())
    others = [g for g in node.gpus if g.id != gpu_id]
    links: list[Link] = []
    pcie = f"{node.id}/pcie{slot // max(1, t.gpus_per_pcie_switch)}"
    if pcie in ends:
        links.append(Link(id=f"{gpu_id}~pcie{slot // max(1, t.gpus_per_pcie_switch)}", kind=t.pcie_switch_link,
                          a=gpu_id, b=pcie))
    if not t.scale_up_link:
        return tuple(links)
    lanes, kind = t.scale_up_lanes, t.scale_up_link
    if t.fabric == "nvswitch" and f"{node.id}/nvswitch" in ends:
        links.append(Link(id=f"{gpu_id}~nvswitch", kind=kind, a=gpu_id, b=f"{node.id}/nvswitch", lanes=lanes))
    elif t.fabric == "nvlink-rack" and rack_switch:
        links.append(Link(id=f"{gpu_id}~nvl", kind=kind, a=gpu_id, b=rack_switch, lanes=lanes))
    elif t.fabric == "bridge-pairs":
        partner = next((g for g in others if g.slot == slot ^ 1), None)
        if partner is not None:
            a, b = (gpu_id, partner.id) if slot < partner.slot else (partner.id, gpu_id)
            links.append(Link(id=f"{a}~{b}", kind=kind, a=a, b=b, lanes=lanes))
    elif t.fabric == "xgmi-mesh":
        for g in others:
            a, b = (gpu_id, g.id) if slot < g.slot else (g.id, gpu_id)
            links.append(Link(id=f"{a}~{b}", kind=kind, a=a, b=b, lanes=lanes))
    return tuple(links)
