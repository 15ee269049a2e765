"""Which link kinds make sense between two endpoints (the menu after drawing a link)."""

from __future__ import annotations

from studio.core.hardware import Cluster, LinkFamily, LinkKind

SCALE_UP = (LinkFamily.NVLINK_BRIDGE, LinkFamily.NVLINK, LinkFamily.XGMI, LinkFamily.PCIE)
NETWORK = (LinkFamily.INFINIBAND, LinkFamily.ROCE)


def endpoint_role(cluster: Cluster, endpoint_id: str) -> str:
    """'gpu', 'nic', or the switch kind ('nvswitch', 'pcie-switch', 'cpu', 'fabric', ...)."""
    for n in cluster.nodes:
        if any(g.id == endpoint_id for g in n.gpus):
            return "gpu"
        if any(x.id == endpoint_id for x in n.nics):
            return "nic"
        for s in n.switches:
            if s.id == endpoint_id:
                return s.kind
    for s in cluster.switches:
        if s.id == endpoint_id:
            return s.kind
    return "unknown"


def allowed_families(role_a: str, role_b: str) -> tuple[LinkFamily, ...]:
    """Link families that can join endpoints of these roles (order = menu order)."""
    roles = {role_a, role_b}
    if roles & {"nic", "fabric"}:
        if roles <= {"nic", "fabric"}:
            return NETWORK
        return (LinkFamily.PCIE,)  # NIC to its PCIe switch / GPU
    if roles & {"nvswitch", "nvlink-switch"}:
        return (LinkFamily.NVLINK,)
    if roles == {"gpu"}:
        return SCALE_UP
    if roles == {"cpu"}:
        return (LinkFamily.CPU,)
    return (LinkFamily.PCIE,)


def applicable_kinds(
    cluster: Cluster, extra: dict[str, LinkKind], a: str, b: str
) -> list[LinkKind]:
    """Link kinds for a new link from ``a`` to ``b``: allowed families, kinds the cluster already
    uses first, then the catalogue (``extra``); falls back to every kind if none fits."""
    role_a, role_b = endpoint_role(cluster, a), endpoint_role(cluster, b)
    fams = allowed_families(role_a, role_b)
    pool: dict[str, LinkKind] = dict(cluster.link_kinds)
    for k, v in extra.items():
        pool.setdefault(k, v)
    nic_kinds = {x.kind for n in cluster.nodes for x in n.nics if x.id in (a, b)}
    ranked = sorted(
        (k for k in pool.values() if k.family in fams),
        key=lambda k: (
            k.id not in nic_kinds,
            fams.index(k.family),
            k.id not in cluster.link_kinds,
            -k.bandwidth_gbps,
        ),
    )
    return ranked or sorted(pool.values(), key=lambda k: k.name)
