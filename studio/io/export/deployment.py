"""Where a plan runs: the drawn nodes its ranks use, in rank order, the address of each node in a
launch line (given host names, ``<HOST_i>`` placeholders or a script's ``HOST_i`` variables), and
the independent servers (groups of nodes) an engine starts.

Node names are never addresses."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from studio.core.errors import StudioError
from studio.core.layout import Layout
from studio.core.project import Project
from studio.engine.plan.results import PlanResult
from studio.io.export.checks.safety import check_host, check_hosts, host_port
from studio.io.export.shell import Raw, Word, one_line


@dataclass(frozen=True)
class NodeUse:
    """One drawn node the plan runs on."""

    index: int  # position among the used nodes (node rank)
    name: str  # the node's name on the canvas
    host: str  # the address given with ``hosts``, else the placeholder ``<HOST_i>``
    gpus: int  # ranks of the plan placed on this node
    first_rank: int  # lowest plan rank on this node
    node: int = 0  # index into ``Deployment.nodes`` (the ``i`` of ``HOST_i``)


@dataclass(frozen=True)
class Deployment:
    """Where a plan runs: the used nodes in rank order, and the node of every rank."""

    nodes: tuple[NodeUse, ...]
    rank_node: tuple[int, ...]  # rank -> index into ``nodes``
    rank_slot: tuple[int, ...]  # rank -> GPU slot in its node (taken as the CUDA device index)
    hosts_given: bool
    script: bool = False  # addresses are the script's ``HOST_i`` variables
    vendor: str = "nvidia"  # GPU vendor of the used GPUs
    slurm_nodes: tuple[str, ...] | None = None  # Slurm node name of each used node (``srun -w``)

    @property
    def multi_node(self) -> bool:
        return len(self.nodes) > 1

    def replica_nodes(self, layout: Layout, replica: int) -> tuple[int, ...]:
        """Indices of the nodes holding replica ``replica`` (sorted, unique)."""
        size = layout.tp * layout.pp
        ranks = range(replica * size, (replica + 1) * size)
        return tuple(sorted({self.rank_node[r] for r in ranks}))

    def replicas_within_nodes(self, layout: Layout) -> bool:
        """True when no replica spans two nodes."""
        return all(len(self.replica_nodes(layout, d)) == 1 for d in range(layout.dp))


def deployment(
    project: Project, plan: PlanResult, hosts: Sequence[str] | None, *, script: bool = False,
    slurm_nodes: Sequence[str] | None = None,
) -> Deployment:
    """The drawn nodes a plan's ranks run on, in rank order.

    Without a resolved placement the ranks fill the cluster's GPUs in order (node by node, slot by
    slot), as the engine does. Node names never become addresses: without ``hosts`` the launch
    lines show ``<HOST_i>`` placeholders, or (``script``) read the script's ``HOST_i`` variables.

    Raises
    ------
    StudioError
        If the cluster has fewer GPUs than the layout needs, a placed GPU is not in the cluster,
        ``hosts`` does not give exactly one name per used node, or an entry is not a host name or
        IP address; likewise ``slurm_nodes``, whose entries must be Slurm node names (host names,
        not IP addresses).
    """
    layout = plan.layout
    cluster = project.cluster
    node_of_gpu = {g.id: (n, g) for n in cluster.nodes for g in n.gpus}
    if layout.placement is not None:
        gpu_ids = list(layout.placement)
    else:
        all_gpus = [g.id for n in cluster.nodes for g in n.gpus]
        if len(all_gpus) < layout.world_size:
            raise StudioError(
                f"layout {layout.label} needs {layout.world_size} GPUs; the cluster "
                f"'{one_line(cluster.name)}' has {len(all_gpus)}"
            )
        gpu_ids = all_gpus[: layout.world_size]
    order: list[str] = []
    seen: set[str] = set()
    rank_node_id: list[str] = []
    slots: list[int] = []
    vendors: set[str] = set()
    for gpu in gpu_ids:
        if gpu not in node_of_gpu:
            raise StudioError(f"layout.placement names GPU '{one_line(gpu)}', which is not in the cluster")
        node, inst = node_of_gpu[gpu]
        if node.id not in seen:
            seen.add(node.id)
            order.append(node.id)
        rank_node_id.append(node.id)
        slots.append(inst.slot)
        spec = cluster.gpu_specs.get(inst.type)
        vendors.add(spec.vendor if spec is not None else "nvidia")
    if hosts is not None:
        hosts = [str(h).strip() for h in hosts]
        if len(hosts) != len(order) or any(not h for h in hosts):
            raise StudioError(
                f"give one host name per node the plan uses ({len(order)}: "
                f"{', '.join(one_line(cluster.node(n).name) for n in order)}); got {len(hosts)}",
                field="hosts",
            )
        check_hosts(hosts)
    slurm = _slurm_names(slurm_nodes, order, cluster)
    index = {nid: i for i, nid in enumerate(order)}
    rank_node = tuple(index[n] for n in rank_node_id)
    by_id = {n.id: n for n in cluster.nodes}
    ranks_of: list[list[int]] = [[] for _ in order]
    for r, n in enumerate(rank_node):
        ranks_of[n].append(r)
    nodes = []
    for i, nid in enumerate(order):
        node = by_id[nid]
        ranks = ranks_of[i]
        nodes.append(
            NodeUse(
                index=i,
                name=node.name,
                host=hosts[i] if hosts is not None else f"<HOST_{i}>",
                gpus=len(ranks),
                first_rank=ranks[0],
                node=i,
            )
        )
    vendor = sorted(vendors)[0] if len(vendors) == 1 else "mixed"
    return Deployment(
        nodes=tuple(nodes), rank_node=rank_node, rank_slot=tuple(slots), hosts_given=hosts is not None,
        script=script, vendor=vendor, slurm_nodes=slurm,
    )


def _slurm_names(names: Sequence[str] | None, order: list[str], cluster) -> tuple[str, ...] | None:
    """The Slurm node names, one per used node, checked (host names; ``srun -w`` refuses IPs)."""
    if names is None:
        return None
    import ipaddress

    out = tuple(str(n).strip() for n in names)
    if len(out) != len(order) or any(not n for n in out):
        raise StudioError(
            f"give one Slurm node name per node the plan uses ({len(order)}: "
            f"{', '.join(one_line(cluster.node(n).name) for n in order)}); got {len(out)}",
            field="slurm_nodes",
        )
    for n in out:
        check_host(n)
        try:
            ipaddress.ip_address(n)
        except ValueError:
            continue
        raise StudioError(f"'{n}' is an IP address; srun -w takes Slurm node names (as sinfo lists them)",
                          field="slurm_nodes")
    return out


def address_notes(dep: Deployment) -> list[str]:
    """The note on node addresses when they were not given."""
    if dep.hosts_given:
        return []
    if dep.script:
        return [
            "Node addresses: set HOST_0..HOST_" f"{len(dep.nodes) - 1} at the top of the script (or in "
            "the environment); it refuses to start while one is unset. Or export again with the host names given."
        ]
    return [
        "Node addresses: replace <HOST_0>..<HOST_" f"{len(dep.nodes) - 1}> with the host names or IPs "
        "of the nodes (listed below), or export again with the host names given."
    ]


def host_word(dep: Deployment, node: int, port: int | None = None) -> Word:
    """The address of used node ``node`` as one launch-line word, ``:port`` appended when given.

    Given hosts are written as they are (validated host names), a script reads ``HOST_i``, and
    printed commands show the placeholder ``<HOST_i>`` (quoted: pasted as is, the engine fails to
    resolve it instead of running somewhere else).
    """
    return hosts_word(dep, [(node, port)], ",")


def hosts_word(dep: Deployment, items: Sequence[tuple[int, int | None]], sep: str) -> Word:
    """Several ``address[:suffix]`` entries joined by ``sep`` as one word (``mpirun -H``,
    ``srun -w``)."""
    if dep.script:
        parts = []
        for node, suffix in items:
            ref = f"${{HOST_{node}}}"
            parts.append(ref if suffix is None else f"{ref}:{suffix}")
        return Raw('"' + sep.join(parts) + '"')
    out = []
    for node, suffix in items:
        host = dep.nodes[node].host
        out.append(host if suffix is None else host_port(host, suffix))
    return sep.join(out)


@dataclass(frozen=True)
class Group:
    """The nodes one independent server runs on (a replica, or all replicas of one engine)."""

    index: int
    nodes: tuple[NodeUse, ...]  # ``gpus``/``first_rank`` counted inside this group
    devices: tuple[tuple[int, ...], ...] | None  # CUDA devices per node when a node is shared
    port_offset: int  # added to the serving port when servers share a head node

    @property
    def head(self) -> NodeUse:
        return self.nodes[0]


def one_group(dep: Deployment) -> tuple[Group, ...]:
    """All used nodes as one server."""
    return (Group(index=0, nodes=dep.nodes, devices=None, port_offset=0),)


def replica_groups(dep: Deployment, layout: Layout) -> tuple[Group, ...]:
    """One server per data-parallel replica; replicas that share a node get their own CUDA devices
    and port."""
    size = layout.tp * layout.pp
    per_replica: list[list[int]] = [
        list(range(d * size, (d + 1) * size)) for d in range(layout.dp)
    ]
    node_users: dict[int, int] = {}
    for ranks in per_replica:
        for n in {dep.rank_node[r] for r in ranks}:
            node_users[n] = node_users.get(n, 0) + 1
    shared = any(v > 1 for v in node_users.values())
    seen_heads: dict[int, int] = {}
    groups = []
    for d, ranks in enumerate(per_replica):
        order: list[int] = []
        for r in ranks:
            if dep.rank_node[r] not in order:
                order.append(dep.rank_node[r])
        nodes = []
        devices = []
        for i, n in enumerate(order):
            mine = [r for r in ranks if dep.rank_node[r] == n]
            base = dep.nodes[n]
            nodes.append(NodeUse(index=i, name=base.name, host=base.host, gpus=len(mine),
                                 first_rank=mine[0], node=n))
            devices.append(tuple(dep.rank_slot[r] for r in mine))
        head = order[0]
        offset = seen_heads.get(head, 0)
        seen_heads[head] = offset + 1
        groups.append(
            Group(index=d, nodes=tuple(nodes), devices=tuple(devices) if shared else None, port_offset=offset)
        )
    return tuple(groups)


def devices_env(group: Group, node_pos: int) -> list[tuple[str, Word]]:
    """``CUDA_VISIBLE_DEVICES`` for a server that shares its node with another one."""
    if group.devices is None:
        return []
    return [("CUDA_VISIBLE_DEVICES", ",".join(str(s) for s in group.devices[node_pos]))]


def group_node_index(dep: Deployment, group: Group, pos: int) -> int:
    """Index into ``dep.nodes`` of the ``pos``-th node of ``group``."""
    return dep.rank_node[group.nodes[pos].first_rank]
