"""Which link kinds can physically join two endpoints of a drawn cluster (Qt-free).

The canvas asks this after a link is drawn; only the kinds returned are offered. The rules follow
the hardware:

* GPU ↔ GPU or GPU ↔ NVSwitch / rack NVLink switch: the GPU's own scale-up link
  (:attr:`GpuSpec.scale_up_link`): NVLink 4 for H100/H200 SXM, a bridge for PCIe cards, xGMI for
  MI300X — never another vendor's or another generation's. NVSwitch, bridges and xGMI stay inside one
  chassis; a rack NVLink switch (GB200 NVL72) joins the trays of its rack only.
* GPU ↔ GPU, GPU ↔ PCIe switch / CPU, NIC ↔ PCIe switch: PCIe, inside one chassis.
* CPU ↔ CPU: the socket link, inside one chassis.
* NIC ↔ NIC / fabric, fabric ↔ fabric: the network the NIC speaks (InfiniBand NICs join InfiniBand,
  RoCE NICs RoCE).
"""

from __future__ import annotations

from dataclasses import dataclass

from studio.core.hardware import NVLINK_SWITCH_KINDS, Cluster, LinkFamily, LinkKind

NETWORK = (LinkFamily.INFINIBAND, LinkFamily.ROCE)


@dataclass(frozen=True)
class Endpoint:
    """What one end of a link is: ``role`` ('gpu', 'nic' or a switch kind), its node (None for a
    cluster-level switch), the GPU's scale-up link kind, the NIC's link kind."""

    id: str
    role: str
    node: str | None
    scale_up: str | None = None
    nic_kind: str | None = None
    vendor: str | None = None


def endpoint(cluster: Cluster, endpoint_id: str) -> Endpoint:
    """Describe ``endpoint_id`` (role 'unknown' when the cluster has no such endpoint)."""
    for n in cluster.nodes:
        for g in n.gpus:
            if g.id == endpoint_id:
                spec = cluster.gpu_specs.get(g.type)
                return Endpoint(endpoint_id, "gpu", n.id, spec.scale_up_link if spec else None,
                                vendor=spec.vendor if spec else None)
        for x in n.nics:
            if x.id == endpoint_id:
                return Endpoint(endpoint_id, "nic", n.id, nic_kind=x.kind)
        for s in n.switches:
            if s.id == endpoint_id:
                return Endpoint(endpoint_id, s.kind, n.id)
    for s in cluster.switches:
        if s.id == endpoint_id:
            return Endpoint(endpoint_id, s.kind, None)
    return Endpoint(endpoint_id, "unknown", None)


def _rack_of(cluster: Cluster, node_id: str | None) -> str | None:
    """The rack NVLink switch a node's GPUs are wired to (GB200 trays), if any."""
    if node_id is None:
        return None
    node = cluster.node(node_id)
    gpus = {g.id for g in node.gpus}
    racks = {s.id for s in cluster.switches if s.kind == "nvlink-switch"}
    for lk in cluster.links:
        if lk.a in gpus and lk.b in racks:
            return lk.b
        if lk.b in gpus and lk.a in racks:
            return lk.a
    return None


def _allowed(cluster: Cluster, a: Endpoint, b: Endpoint, kind: LinkKind) -> str | None:
    """Why ``kind`` cannot join ``a`` and ``b``, or None when it can."""
    roles = {a.role, b.role}
    same_chassis = a.node is not None and a.node == b.node
    fam = kind.family
    if "unknown" in roles:
        return "one end is not a GPU, switch or NIC of this cluster"
    if roles & {"nic", "fabric"} and roles <= {"nic", "fabric"}:
        if fam not in NETWORK:
            return f"{kind.name} is not a network link"
        for e in (a, b):
            spoken = cluster.link_kinds.get(e.nic_kind) if e.nic_kind else None
            if spoken is not None and spoken.family != fam:
                return f"NIC '{e.id}' speaks {spoken.name}, not {fam.value}"
        return None
    if "fabric" in roles:
        return "a network fabric joins NICs only"
    if "nic" in roles:
        if fam is not LinkFamily.PCIE:
            return "a NIC joins its server over PCIe (or the network over a fabric)"
        return None if same_chassis else "PCIe does not leave the chassis"
    if roles & NVLINK_SWITCH_KINDS:
        if fam is not LinkFamily.NVLINK:
            return "an NVSwitch takes NVLink only"
        gpus = [e for e in (a, b) if e.role == "gpu"]
        if any(g.scale_up != kind.id for g in gpus):
            return f"{kind.name} is not this GPU's NVLink"
        if "nvswitch" in roles and not same_chassis:
            return "an NVSwitch joins the GPUs of its own server"
        return None
    if roles == {"gpu"}:
        if fam.is_scale_up:
            if a.scale_up != kind.id or b.scale_up != kind.id:
                return f"{kind.name} is not the scale-up link of both GPUs"
            if same_chassis:
                return None
            rack = _rack_of(cluster, a.node)
            if rack is not None and rack == _rack_of(cluster, b.node):
                return None
            return f"{kind.name} does not leave the chassis"
        if fam is LinkFamily.PCIE:
            return None if same_chassis else "PCIe does not leave the chassis"
        return f"{kind.name} cannot join two GPUs"
    if roles == {"cpu"}:
        if fam is not LinkFamily.CPU:
            return "two CPU sockets join over the socket link"
        return None if same_chassis else "a socket link does not leave the chassis"
    if fam is not LinkFamily.PCIE:
        return f"{a.role} and {b.role} join over PCIe"
    return None if same_chassis or a.node is None or b.node is None else "PCIe does not leave the chassis"


def why_not(cluster: Cluster, kind: LinkKind, a: str, b: str) -> str | None:
    """Why a link of ``kind`` cannot join endpoints ``a`` and ``b``, or ``None`` when it can."""
    if a == b:
        return "a link needs two different ends"
    return _allowed(cluster, endpoint(cluster, a), endpoint(cluster, b), kind)


def compatible_kinds(cluster: Cluster, extra: dict[str, LinkKind], a: str, b: str) -> list[LinkKind]:
    """Link kinds that can join ``a`` and ``b``, best first: the NIC's own kind, kinds the cluster
    already uses, then the catalogue (``extra``), faster first. Empty when nothing can."""
    pool: dict[str, LinkKind] = dict(cluster.link_kinds)
    for k, v in extra.items():
        pool.setdefault(k, v)
    ea, eb = endpoint(cluster, a), endpoint(cluster, b)
    if a == b:
        return []
    own = {e.nic_kind for e in (ea, eb) if e.nic_kind} | {e.scale_up for e in (ea, eb) if e.scale_up}
    ok = [k for k in pool.values() if _allowed(cluster, ea, eb, k) is None]
    return sorted(ok, key=lambda k: (k.id not in own, k.id not in cluster.link_kinds, -k.bandwidth_gbps))


def refusal(cluster: Cluster, a: str, b: str) -> str:
    """One line saying why no link kind can join ``a`` and ``b`` (for the canvas's refusal)."""
    ea, eb = endpoint(cluster, a), endpoint(cluster, b)
    where = "in different servers" if ea.node and eb.node and ea.node != eb.node else "here"
    return f"No link kind can join {ea.role} '{a}' and {eb.role} '{b}' {where}"
