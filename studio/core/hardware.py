"""Hardware: GPU specs, link kinds, and the drawn cluster (nodes, GPUs, switches, NICs, links).

A cluster is a graph. Its vertices are GPUs, switches (NVSwitch, PCIe switch, CPU root complex,
rack NVLink switch, network fabric) and NICs; its edges are :class:`Link` values of a
:class:`LinkKind`. The engine finds the paths between GPUs over this graph, so any topology a user
draws (NVSwitch boxes, bridge pairs, PCIe trees, rail-optimised InfiniBand) is costed as drawn.

The catalogue of GPU specs and link kinds a cluster uses travels inside the cluster, so a project
file is self-contained and user edits (a price per GPU-hour) persist.
"""

from __future__ import annotations

from enum import Enum
from functools import cached_property
from typing import Literal

from pydantic import Field, model_validator

from studio.core.base import Frozen
from studio.core.units import GIB

ID_PATTERN = r"^[A-Za-z0-9_.:/~\-]+$"

#: Largest cluster a project may hold; bigger inputs are refused before their items are validated.
MAX_CLUSTER_GPUS = 65_536
MAX_CLUSTER_NODES = 65_536
MAX_CLUSTER_LINKS = 1_048_576


class LinkFamily(str, Enum):
    """Physical family of a link; decides its colour and style on the canvas."""

    NVLINK = "nvlink"  # GPU <-> NVSwitch / rack NVLink switch
    NVLINK_BRIDGE = "nvlink-bridge"  # direct bridge between a GPU pair
    PCIE = "pcie"  # GPU <-> PCIe switch / host bridge / socket hop
    XGMI = "xgmi"  # AMD Infinity Fabric GPU-GPU
    INFINIBAND = "infiniband"
    ROCE = "roce"
    CPU = "cpu"  # socket interconnect (UPI / Infinity Fabric between sockets)

    @property
    def is_network(self) -> bool:
        return self in (LinkFamily.INFINIBAND, LinkFamily.ROCE)

    @property
    def is_scale_up(self) -> bool:
        """GPU-to-GPU fabric inside a server or rack (NVLink, NVLink bridge, xGMI): the links TP
        all-reduces should run on. PCIe, CPU socket links and networks are not."""
        return self in (LinkFamily.NVLINK, LinkFamily.NVLINK_BRIDGE, LinkFamily.XGMI)


class LinkKind(Frozen):
    """A kind of link, with per-direction bandwidth and one-hop latency.

    ``efficiency`` is the fraction of the spec bandwidth a collective achieves on this kind of
    link (measured busbw / spec), so effective bandwidth = bandwidth_gbps × efficiency.
    """

    id: str = Field(pattern=ID_PATTERN, max_length=80)
    name: str = Field(min_length=1, max_length=120)
    family: LinkFamily
    bandwidth_gbps: float = Field(ge=1e-3, le=100_000, description="GB/s per direction (spec)")
    latency_us: float = Field(ge=0, le=100_000, description="one-hop latency, µs")
    efficiency: float = Field(0.8, ge=0.01, le=1.5, description="achievable / spec bandwidth")
    color: str | None = Field(None, pattern=r"^#[0-9A-Fa-f]{6}$")
    description: str = ""
    sources: dict[str, str] = Field(default_factory=dict)

    @property
    def effective_gbps(self) -> float:
        return self.bandwidth_gbps * self.efficiency


class GpuSpec(Frozen):
    """Datasheet figures of one GPU model. TFLOPS are dense (no sparsity)."""

    id: str = Field(pattern=ID_PATTERN, max_length=80)
    name: str = Field(min_length=1, max_length=120)
    vendor: Literal["nvidia", "amd", "intel", "other"] = "nvidia"
    memory_gb: float = Field(ge=1e-3, le=100_000, description="marketed device memory, GB (1e9 B)")
    memory_gib: float | None = Field(
        None, ge=1e-3, le=100_000,
        description="device memory the driver reports (nvidia-smi / rocm-smi total), GiB (2^30 B); "
        "None = memory_gb",
    )
    memory_visible_gib: float | None = Field(
        None, ge=1e-3, le=100_000,
        description="device memory the CUDA runtime reports as total (cudaMemGetInfo, torch.cuda.mem_get_info; "
        "the driver keeps the rest), GiB: what vLLM and SGLang apply their memory fraction to; None = memory_gib",
    )
    hbm_bandwidth_gbps: float = Field(ge=1e-3, le=1_000_000, description="memory bandwidth, GB/s")
    tflops_bf16: float = Field(ge=1e-3, le=1_000_000)
    tflops_fp16: float = Field(ge=1e-3, le=1_000_000)
    tflops_fp8: float | None = Field(None, ge=1e-3, le=1_000_000)
    tflops_fp4: float | None = Field(None, ge=1e-3, le=1_000_000)
    scale_up_link: str | None = Field(None, description="link kind id of the GPU-GPU fabric")
    host_pcie_gen: int = Field(4, ge=3, le=7)
    power_w: float | None = Field(None, gt=0, le=100_000)
    price_per_gpu_hour: float = Field(2.0, ge=0, le=10_000, description="USD, editable")
    default_node_template: str | None = None
    sources: dict[str, str] = Field(default_factory=dict)

    @property
    def memory_bytes(self) -> float:
        """Device memory in bytes: the driver-reported total when known, else the marketed GB."""
        if self.memory_gib is not None:
            return self.memory_gib * GIB
        return self.memory_gb * 1e9

    @property
    def visible_bytes(self) -> float:
        """The total a serving engine sizes its KV cache against: the CUDA runtime's, when known."""
        if self.memory_visible_gib is not None:
            return self.memory_visible_gib * GIB
        return self.memory_bytes

    def peak_tflops(self, compute_class: str) -> float:
        """Peak dense TFLOPS for 'bf16', 'fp8' or 'fp4' math; falls back to the next wider
        format when the GPU lacks the narrow one (e.g. FP8 on A100 runs as BF16)."""
        if compute_class == "fp4" and self.tflops_fp4:
            return self.tflops_fp4
        if compute_class in ("fp4", "fp8") and self.tflops_fp8:
            return self.tflops_fp8
        return self.tflops_bf16


SwitchKind = Literal["nvswitch", "nvlink-switch", "pcie-switch", "cpu", "fabric"]
#: The switch kinds of the scale-up fabric: an NVSwitch inside a server and a rack's NVLink switch
#: (NVL72). They take :attr:`LinkFamily.NVLINK` links only, and the GPUs they join form one
#: NVLink domain.
NVLINK_SWITCH_KINDS: frozenset[str] = frozenset({"nvswitch", "nvlink-switch"})


class Switch(Frozen):
    """A non-GPU vertex that links meet at: NVSwitch, PCIe switch, CPU socket, network fabric."""

    id: str = Field(pattern=ID_PATTERN, max_length=120)
    kind: SwitchKind
    name: str = Field("", max_length=120)
    x: float = 0.0
    y: float = 0.0


class Nic(Frozen):
    """A network adapter of a node; inter-node links start at NICs."""

    id: str = Field(pattern=ID_PATTERN, max_length=120)
    kind: str = Field(description="link kind id of the network it speaks (e.g. ib-ndr)")
    name: str = Field("", max_length=120)


class GpuInstance(Frozen):
    """One physical GPU in a node slot."""

    id: str = Field(pattern=ID_PATTERN, max_length=120)
    type: str = Field(description="GpuSpec id")
    slot: int = Field(ge=0, le=1023)


class Node(Frozen):
    """A server (or a tray) holding GPUs, its internal switches and its NICs."""

    id: str = Field(pattern=ID_PATTERN, max_length=120)
    name: str = Field(min_length=1, max_length=120)
    slots: int = Field(8, ge=1, le=1024, description="GPU slots")
    gpus: tuple[GpuInstance, ...] = ()
    switches: tuple[Switch, ...] = ()
    nics: tuple[Nic, ...] = ()
    template: str | None = None
    x: float = 0.0
    y: float = 0.0

    @model_validator(mode="after")
    def _check(self) -> Node:
        if len(self.gpus) > self.slots:
            raise ValueError(f"node '{self.id}' holds {len(self.gpus)} GPUs but has {self.slots} slots")
        used: set[int] = set()
        for g in self.gpus:
            if g.slot >= self.slots:
                raise ValueError(
                    f"GPU '{g.id}' is in slot {g.slot}; node '{self.id}' has slots 0..{self.slots - 1}"
                )
            if g.slot in used:
                raise ValueError(f"node '{self.id}': two GPUs in slot {g.slot}")
            used.add(g.slot)
        return self

    def free_slots(self) -> list[int]:
        used = {g.slot for g in self.gpus}
        return [s for s in range(self.slots) if s not in used]


class Link(Frozen):
    """An edge between two endpoints (GPU, switch or NIC ids). ``lanes`` bonds parallel links
    (e.g. NV12 in nvidia-smi: 12 NVLinks), scaling the bandwidth."""

    id: str = Field(pattern=ID_PATTERN, max_length=200)
    kind: str
    a: str
    b: str
    lanes: float = Field(1.0, ge=1e-3, le=1024)

    @model_validator(mode="after")
    def _check(self) -> Link:
        if self.a == self.b:
            raise ValueError(f"link '{self.id}' joins '{self.a}' to itself")
        return self


class NodeTemplate(Frozen):
    """How to build a standard server: GPUs, the fabric inside it, NICs. Expanded by
    :func:`studio.core.building.templates.instantiate`."""

    id: str = Field(pattern=ID_PATTERN, max_length=80)
    name: str = Field(min_length=1, max_length=120)
    description: str = ""
    gpu_type: str
    gpus_per_node: int = Field(ge=1, le=1024)
    trays: int = Field(1, ge=1, le=256, description="nodes (trays) sharing one NVLink domain")
    fabric: Literal["nvswitch", "nvlink-rack", "bridge-pairs", "xgmi-mesh", "pcie"]
    scale_up_link: str | None = Field(None, description="NVLink / bridge / xGMI link kind id")
    scale_up_lanes: float = Field(1.0, gt=0)
    sockets: int = Field(2, ge=1, le=8)
    gpus_per_pcie_switch: int = Field(2, ge=1, le=64)
    pcie_switch_link: str = Field(description="GPU <-> PCIe switch link kind id")
    host_link: str = Field(description="PCIe switch <-> CPU root complex link kind id")
    socket_link: str | None = Field(None, description="CPU <-> CPU link kind id")
    nics: int = Field(0, ge=0, le=64)
    nic_kind: str | None = None
    host_memory_gib: float | None = Field(
        None, gt=0, le=1_000_000, description="host DRAM per node (tray), GiB; None = not published"
    )
    nvme_gib: float | None = Field(None, gt=0, le=100_000_000, description="local NVMe data capacity per node, GiB")
    host_kv_gbps: float | None = Field(
        None, gt=0, le=100_000, description="host-to-GPU bandwidth per GPU, GB/s one way (PCIe x16 or NVLink-C2C)"
    )
    sources: dict[str, str] = Field(default_factory=dict)


class Cluster(Frozen):
    """Everything drawn on the canvas, plus the catalogue of GPU specs and link kinds it uses."""

    name: str = Field("cluster", max_length=200)
    nodes: tuple[Node, ...] = ()
    switches: tuple[Switch, ...] = Field((), description="cluster-level switches (fabric, rack NVLink)")
    links: tuple[Link, ...] = ()
    gpu_specs: dict[str, GpuSpec] = Field(default_factory=dict)
    link_kinds: dict[str, LinkKind] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _size(cls, data: object) -> object:
        """Refuse absurd sizes in O(nodes) before pydantic validates every item."""
        if not isinstance(data, dict):
            return data
        nodes = data.get("nodes")
        if isinstance(nodes, (list, tuple)):
            if len(nodes) > MAX_CLUSTER_NODES:
                raise ValueError(f"{len(nodes)} nodes; a cluster holds at most {MAX_CLUSTER_NODES:,}")
            total = 0
            for n in nodes:
                gpus = n.get("gpus") if isinstance(n, dict) else getattr(n, "gpus", None)
                if isinstance(gpus, (list, tuple)):
                    total += len(gpus)
            if total > MAX_CLUSTER_GPUS:
                raise ValueError(f"{total:,} GPUs; a cluster holds at most {MAX_CLUSTER_GPUS:,}")
        links = data.get("links")
        if isinstance(links, (list, tuple)) and len(links) > MAX_CLUSTER_LINKS:
            raise ValueError(f"{len(links):,} links; a cluster holds at most {MAX_CLUSTER_LINKS:,}")
        return data

    @model_validator(mode="after")
    def _check(self) -> Cluster:
        seen: dict[str, str] = {}

        def claim(ident: str, what: str) -> None:
            if ident in seen:
                raise ValueError(f"id '{ident}' is used by a {seen[ident]} and a {what}; ids must be unique")
            seen[ident] = what

        for n in self.nodes:
            claim(n.id, "node")
            for g in n.gpus:
                claim(g.id, "GPU")
                if g.type not in self.gpu_specs:
                    raise ValueError(
                        f"GPU '{g.id}' has type '{g.type}', which is not in gpu_specs "
                        f"(known: {', '.join(sorted(self.gpu_specs)) or 'none'})"
                    )
            for s in n.switches:
                claim(s.id, "switch")
            for nic in n.nics:
                claim(nic.id, "NIC")
                if nic.kind not in self.link_kinds:
                    raise ValueError(f"NIC '{nic.id}' has kind '{nic.kind}', not in link_kinds")
        for s in self.switches:
            claim(s.id, "switch")
        for link in self.links:
            claim(link.id, "link")
        endpoints = {k for k, v in seen.items() if v in ("GPU", "switch", "NIC")}
        for link in self.links:
            for end in (link.a, link.b):
                if end not in endpoints:
                    raise ValueError(
                        f"link '{link.id}' ends at '{end}', which is no GPU, switch or NIC of this cluster"
                    )
            if link.kind not in self.link_kinds:
                raise ValueError(
                    f"link '{link.id}' has kind '{link.kind}'; allowed: "
                    f"{', '.join(sorted(self.link_kinds)) or 'none'}"
                )
        return self

    # ----------------------------------------------------------------- queries
    @cached_property
    def gpus(self) -> tuple[GpuInstance, ...]:
        """All GPUs, node by node, slot order (sorted once per immutable cluster: the engine and
        the window ask several times per edit)."""
        return tuple(g for n in self.nodes for g in sorted(n.gpus, key=lambda g: g.slot))

    @property
    def num_gpus(self) -> int:
        return sum(len(n.gpus) for n in self.nodes)

    @cached_property
    def _index(self) -> dict[str, Node | None]:
        """Node of every node, GPU, switch and NIC id (``None`` for cluster-level switches); built
        once per (immutable) cluster so lookups are dictionary hits, not scans of every node."""
        out: dict[str, Node | None] = {}
        for n in self.nodes:
            out[n.id] = n
            for g in n.gpus:
                out[g.id] = n
            for s in n.switches:
                out[s.id] = n
            for x in n.nics:
                out[x.id] = n
        for s in self.switches:
            out.setdefault(s.id, None)
        return out

    @cached_property
    def _links_by_id(self) -> dict[str, Link]:
        return {lk.id: lk for lk in self.links}

    def node_of(self, endpoint_id: str) -> Node | None:
        """The node holding a GPU, switch or NIC (None for cluster-level switches)."""
        return self._index.get(endpoint_id)

    def node(self, node_id: str) -> Node:
        n = self._index.get(node_id)
        if n is None or n.id != node_id:
            raise KeyError(node_id)
        return n

    def link(self, link_id: str) -> Link:
        return self._links_by_id[link_id]

    def gpu_types(self) -> list[str]:
        """Distinct GPU type ids in use, most common first."""
        counts: dict[str, int] = {}
        for g in self.gpus:
            counts[g.type] = counts.get(g.type, 0) + 1
        return sorted(counts, key=lambda t: -counts[t])

    def endpoint_ids(self) -> set[str]:
        out: set[str] = set()
        for n in self.nodes:
            out.update(g.id for g in n.gpus)
            out.update(s.id for s in n.switches)
            out.update(x.id for x in n.nics)
        out.update(s.id for s in self.switches)
        return out
