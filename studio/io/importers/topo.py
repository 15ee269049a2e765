"""Import ``nvidia-smi topo -m`` output as a node of the cluster graph.

:func:`parse_topo` reads the matrix (tab-separated as printed, or space-aligned as pasted from a web
page; with or without NIC columns, affinity columns, the legend and the NIC legend) into a
:class:`TopoMatrix`. :func:`topo_to_node` rebuilds the node from it:

* CPU sockets: devices that are not ``SYS`` to each other, or that share a NUMA affinity, sit under
  the same socket (a ``cpu`` switch); sockets are chained by the cross-socket PCIe link kind.
* PCIe: devices joined by ``PIX`` share one PCIe switch; groups of such switches joined by ``PXB``
  hang under an upstream switch (several bridges, below the host bridge). Every top-level switch
  hangs from its socket by the host-bridge link kind, so ``PHB`` and ``NODE`` paths both run through
  the socket vertex. A device with no ``PIX``/``PXB`` partner gets its own root port switch.
* NVLink: when every GPU pair reads the same ``NV#`` and the GPU's scale-up link kind is an NVLink
  switch kind, the GPUs hang off one NVSwitch with that kind. Otherwise each ``NV#`` cell becomes a
  direct GPU-GPU link of ``#`` lanes of one NVLink, whose bandwidth is the GPU's scale-up bandwidth
  divided by the most NVLinks any GPU of the matrix uses.
* NICs are devices of the matrix, so they land on the PCIe switch of the GPUs they are ``PIX``/``PXB``
  to (their nearest GPUs), or on their own root port under their socket.

:func:`import_topology` builds ``nodes`` copies of the node joined through a network fabric.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from studio.core.edits import connect_nodes_to_fabric, fresh_id
from studio.core.errors import StudioError, nearest
from studio.core.hardware import (
    MAX_CLUSTER_GPUS,
    MAX_CLUSTER_LINKS,
    MAX_CLUSTER_NODES,
    Cluster,
    GpuInstance,
    GpuSpec,
    Link,
    LinkFamily,
    LinkKind,
    Nic,
    Node,
    Switch,
)

#: Largest text accepted (a 1024-device matrix is far below this).
MAX_TOPO_BYTES = 2 * 1024 * 1024

#: Relation codes, best path first (as in the nvidia-smi legend). ``NV#`` is handled apart.
PCIE_CODES: tuple[str, ...] = ("PIX", "PXB", "PHB", "NODE", "SYS")
#: Older drivers printed ``SOC`` for what is now ``SYS``.
ALIASES: dict[str, str] = {"SOC": "SYS"}
ALLOWED = "X, NV<n>, PIX, PXB, PHB, NODE, SYS"

_ANSI = re.compile(r"\x1b\[[0-9;]{0,32}[A-Za-z]")
_TOKEN = re.compile(r"\S+")
_NV = re.compile(r"^NV(\d{1,3})$")
_MULTIWORD = (("CPU", "Affinity"), ("NUMA", "Affinity"), ("GPU", "NUMA", "ID"))
_AFFINITY_LABELS = ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID")
_NIC_LEGEND = re.compile(r"^\s*(NIC\d+)\s*:\s*(\S+)\s*$")
# Only the head is a regex (anchored, no nested or overlapping quantifiers); the name is cut at
# "(UUID:" and stripped in Python, so a long run of spaces costs linear time.
_GPU_NAME = re.compile(r"^\s*GPU\s*(\d{1,9})\s*:")
_GPU_LABEL = re.compile(r"^GPU\d+$")


class PairCodes(Mapping[tuple[str, str], str]):
    """The relation code of every ordered pair of distinct devices, held as one row of codes per
    device (a code is one shared string), not a dict entry per pair: a 600-device matrix of
    1.8 MB took 146 MB as a dict of pairs, 81x the text.

    Parameters
    ----------
    devices:
        The devices, in the order of ``rows``' columns.
    rows:
        ``rows[i][j]``: the code of ``devices[i]`` to ``devices[j]`` (``X`` on the diagonal).
    """

    def __init__(self, devices: tuple[str, ...], rows: list[list[str]]) -> None:
        self._index = {d: i for i, d in enumerate(devices)}
        self._devices = devices
        self._rows = rows

    def __getitem__(self, pair: tuple[str, str]) -> str:
        a, b = pair
        if a == b or a not in self._index or b not in self._index:
            raise KeyError(pair)
        return self._rows[self._index[a]][self._index[b]]

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return ((a, b) for a in self._devices for b in self._devices if a != b)

    def __len__(self) -> int:
        return len(self._devices) * (len(self._devices) - 1)

    def __repr__(self) -> str:
        return f"PairCodes({len(self._devices)} devices)"


@dataclass(frozen=True)
class TopoMatrix:
    """The devices of one node and the relation code of every pair, as nvidia-smi prints them.

    Attributes
    ----------
    gpus, nics:
        Column labels in order (``GPU0``..; ``NIC0``.. or device names such as ``mlx5_0``).
    relation:
        Code of each ordered pair of distinct devices: ``NV<n>``, ``PIX``, ``PXB``, ``PHB``,
        ``NODE`` or ``SYS``. Rows missing from the text are filled from the transposed cell.
    nic_devices:
        NIC label -> device name from the ``NIC Legend`` block.
    cpu_affinity, numa_affinity:
        Per GPU, as printed (``numa_affinity`` is ``None`` for ``N/A``).
    gpu_names:
        GPU label -> product name when the text also holds ``nvidia-smi -L`` lines.
    """

    gpus: tuple[str, ...]
    nics: tuple[str, ...]
    relation: Mapping[tuple[str, str], str]
    nic_devices: dict[str, str] = field(default_factory=dict)
    cpu_affinity: dict[str, str] = field(default_factory=dict)
    numa_affinity: dict[str, int | None] = field(default_factory=dict)
    gpu_names: dict[str, str] = field(default_factory=dict)
    source: str = "<topo>"

    @property
    def devices(self) -> tuple[str, ...]:
        return self.gpus + self.nics

    def code(self, a: str, b: str) -> str:
        """Relation of ``a`` and ``b`` (``X`` for a device with itself)."""
        return "X" if a == b else self.relation[(a, b)]

    def nvlinks(self, a: str, b: str) -> int:
        """Bonded NVLinks between two GPUs (0 when the pair is not ``NV#``)."""
        m = _NV.match(self.code(a, b))
        return int(m.group(1)) if m else 0


# ---------------------------------------------------------------------------------------- parsing
def _tokens(line: str) -> list[tuple[int, str]]:
    return [(m.start() + 1, m.group()) for m in _TOKEN.finditer(line)]


def _fold_header(tokens: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """Join the multi-word labels ('CPU Affinity', 'GPU NUMA ID') that whitespace split apart."""
    out: list[tuple[int, str]] = []
    i = 0
    while i < len(tokens):
        for words in _MULTIWORD:
            got = [t for _, t in tokens[i : i + len(words)]]
            if [w.lower() for w in got] == [w.lower() for w in words]:
                out.append((tokens[i][0], " ".join(words)))
                i += len(words)
                break
        else:
            out.append(tokens[i])
            i += 1
    return out


def _cell(token: str, line_no: int, col: int, source: str) -> str:
    code = token.upper()
    code = ALIASES.get(code, code)
    if code == "X" or code in PCIE_CODES or _NV.match(code):
        return sys.intern(code)  # one string per code, however many cells hold it
    raise StudioError(
        f"line {line_no}, column {col}: cannot read cell '{token[:40]}'; allowed: {ALLOWED}", source
    )


def parse_topo(text: str, source: str = "<topo>") -> TopoMatrix:
    """Parse the output of ``nvidia-smi topo -m``.

    Parameters
    ----------
    text:
        The output, tab-separated or space-aligned; ANSI escapes, the legend, the NIC legend and
        ``nvidia-smi -L`` lines (``GPU 0: NVIDIA H100 80GB HBM3 (UUID: ...)``) may surround it.
    source:
        Name of the file or input, used in error messages.

    Raises
    ------
    StudioError
        No header row, a row with too few cells, an unreadable cell (naming line and column), a
        device listed twice, or a matrix whose cells contradict each other.
    """
    if not isinstance(text, str):
        raise StudioError("topology input must be text", source)
    if len(text.encode("utf-8", errors="replace")) > MAX_TOPO_BYTES:
        raise StudioError(
            f"input is larger than {MAX_TOPO_BYTES // 1024} KiB; expected the output of `nvidia-smi topo -m`",
            source,
        )
    lines = _ANSI.sub("", text.replace("\r\n", "\n").replace("\r", "\n")).split("\n")
    header_at, labels = _find_header(lines, source)
    device_labels = [t for _, t in labels if t not in _AFFINITY_LABELS]
    gpus = tuple(t for t in device_labels if _GPU_LABEL.match(t))
    nics = tuple(t for t in device_labels if not _GPU_LABEL.match(t))
    if len(set(device_labels)) != len(device_labels):
        dup = next(t for t in device_labels if device_labels.count(t) > 1)
        raise StudioError(f"line {header_at + 1}: device '{dup}' appears twice in the header", source)
    devices = gpus + nics
    order = {d: i for i, d in enumerate(device_labels)}
    rows: dict[str, tuple[int, list[str]]] = {}  # row label -> (line number, code per header column)
    cpu_aff: dict[str, str] = {}
    numa_aff: dict[str, int | None] = {}
    seen_rows: set[str] = set()
    for idx in range(header_at + 1, len(lines)):
        line = lines[idx]
        toks = _tokens(line)
        if not toks:
            if seen_rows:
                break
            continue
        first = toks[0][1]
        if first.rstrip(":").lower() in ("legend", "nic"):
            break
        if first not in order:
            if seen_rows:
                break
            continue
        line_no = idx + 1
        if first in seen_rows:
            raise StudioError(f"line {line_no}: row '{first}' appears twice", source)
        seen_rows.add(first)
        cells = toks[1 : 1 + len(device_labels)]
        if len(cells) < len(device_labels):
            col = toks[-1][0] + len(toks[-1][1])
            raise StudioError(
                f"line {line_no}, column {col}: row '{first}' has {len(cells)} cells; the header "
                f"lists {len(device_labels)} devices",
                source,
            )
        codes: list[str] = []
        for (col, tok), other in zip(cells, device_labels, strict=True):
            code = _cell(tok, line_no, col, source)
            if (code == "X") != (other == first):
                want = "'X' (the device itself)" if other == first else f"one of {ALLOWED} but not X"
                raise StudioError(
                    f"line {line_no}, column {col}: cell {first}/{other} is '{tok}'; expected {want}",
                    source,
                )
            codes.append(code)
        rows[first] = (line_no, codes)
        rest = [t for _, t in toks[1 + len(device_labels) :]]
        if first in gpus and rest:
            cpu_aff[first] = rest[0]
            if len(rest) > 1:
                numa_aff[first] = int(rest[1]) if rest[1].isdigit() and len(rest[1]) < 6 else None
    if not any(g in seen_rows for g in gpus):
        raise StudioError(
            f"line {header_at + 1}: the header is not followed by any GPU row (expected rows "
            f"starting {', '.join(gpus[:3])}, ...)",
            source,
        )
    relation = _complete(devices, order, rows, lines, source)
    return TopoMatrix(
        gpus=gpus,
        nics=nics,
        relation=relation,
        nic_devices=_nic_legend(lines, nics),
        cpu_affinity=cpu_aff,
        numa_affinity=numa_aff,
        gpu_names=_gpu_names(lines, gpus),
        source=source,
    )


def _find_header(lines: list[str], source: str) -> tuple[int, list[tuple[int, str]]]:
    for idx, line in enumerate(lines):
        toks = _tokens(line)
        if toks and toks[0][1] == "GPU0":
            labels = _fold_header(toks)
            if len(labels) > 1 and labels[1][1] in ("X",):
                continue  # a row, not the header
            if len(labels) > 4096:
                raise StudioError(f"line {idx + 1}: header lists more than 4096 columns", source)
            return idx, labels
    raise StudioError(
        "no header row found: expected a line of column labels starting 'GPU0' (the output of "
        "`nvidia-smi topo -m`)",
        source,
    )


def _complete(
    devices: tuple[str, ...], order: dict[str, int], rows: dict[str, tuple[int, list[str]]], lines: list[str],
    source: str,
) -> PairCodes:
    """Fill pairs whose row is missing from the transposed cell; reject contradictions.

    ``order`` is each device's column in the header, ``rows`` the rows read (line number and the
    codes in header order)."""

    def cell(a: str, b: str) -> str | None:
        row = rows.get(a)
        return None if row is None else row[1][order[b]]

    def column(a: str, b: str) -> int:  # where a/b's cell is on its line, for the message only
        return _tokens(lines[rows[a][0] - 1])[1 + order[b]][0]

    out: list[list[str]] = []
    for a in devices:
        codes: list[str] = []
        for b in devices:
            if a == b:
                codes.append("X")
                continue
            here, there = cell(a, b), cell(b, a)
            if here is None and there is None:
                raise StudioError(
                    f"the relation of {a} and {b} is missing (neither row '{a}' nor row '{b}' "
                    "is in the matrix)",
                    source,
                )
            if here and there and here != there:
                raise StudioError(
                    f"line {rows[a][0]}, column {column(a, b)}: {a}/{b} is '{here}' but line "
                    f"{rows[b][0]}, column {column(b, a)} says {b}/{a} is '{there}'; the matrix must be "
                    "symmetric",
                    source,
                )
            codes.append(here or there)  # type: ignore[arg-type]  # one of the two rows was read
        out.append(codes)
    return PairCodes(devices, out)


def _nic_legend(lines: list[str], nics: tuple[str, ...]) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in lines:
        m = _NIC_LEGEND.match(line)
        if m and m.group(1) in nics:
            out[m.group(1)] = m.group(2)[:120]
    return out


def _gpu_names(lines: list[str], gpus: tuple[str, ...]) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in lines:
        m = _GPU_NAME.match(line)
        if m is None or f"GPU{m.group(1)}" not in gpus or "=" in line:
            continue
        name = line[m.end():]
        cut = name.find("(UUID:")
        name = (name[:cut] if cut >= 0 else name).strip()
        if name:
            out[f"GPU{m.group(1)}"] = name[:120]
    return out


# ---------------------------------------------------------------------------- GPU name matching
_FORM = {"pcie", "sxm", "nvl"}


def _words(text: str) -> set[str]:
    words = {w for w in re.split(r"[^a-z0-9]+", text.lower()) if w and w not in ("nvidia", "gb")}
    return {"sxm" if re.fullmatch(r"sxm\d*", w) else w for w in words}


def match_gpu_name(device_name: str, specs: dict[str, GpuSpec]) -> str | None:
    """The GPU spec id whose name best matches a driver's product name, or None.

    The spec must share the model word (``h100``) and the form factor: drivers name PCIe and NVL
    cards explicitly (``NVIDIA H100 PCIe``), so a name without one (``NVIDIA H100 80GB HBM3``,
    ``NVIDIA H200``) is the SXM part. Among the rest the spec sharing the most words wins; a tie
    gives None so that the caller asks for the model.
    """
    words = _words(device_name)
    form = (words & _FORM) or {"sxm"}
    scored: list[tuple[int, str]] = []
    for sid, spec in specs.items():
        spec_words = _words(spec.name) | _words(sid)
        model_words = {w for w in spec_words if re.search(r"[a-z]", w) and re.search(r"\d", w)}
        if not model_words or not (model_words & words):
            continue
        spec_form = spec_words & _FORM
        if spec_form and not (spec_form & form):
            continue
        scored.append((len(spec_words & words) * 2 - len(spec_words - words - _FORM), sid))
    if not scored:
        return None
    scored.sort(reverse=True)
    if len(scored) > 1 and scored[0][0] == scored[1][0]:
        return None
    return scored[0][1]


# ------------------------------------------------------------------------------ node rebuilding
class _Groups:
    """Union-find over device labels."""

    def __init__(self, items: tuple[str, ...]) -> None:
        self.parent = {i: i for i in items}

    def find(self, i: str) -> str:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def join(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)

    def classes(self, order: tuple[str, ...]) -> list[list[str]]:
        out: dict[str, list[str]] = {}
        for i in order:
            out.setdefault(self.find(i), []).append(i)
        return list(out.values())


def _components(m: TopoMatrix, members: list[str], codes: tuple[str, ...]) -> list[list[str]]:
    g = _Groups(tuple(members))
    for i, a in enumerate(members):
        for b in members[i + 1 :]:
            if m.code(a, b) in codes:
                g.join(a, b)
    return g.classes(tuple(members))


def _sockets(m: TopoMatrix) -> list[list[str]]:
    """Devices under each CPU socket: joined by a PCIe path that stays in one NUMA node (PIX, PXB,
    PHB, NODE), or sharing a NUMA affinity. ``NV#`` pairs say nothing about their PCIe path."""
    g = _Groups(m.devices)
    devs = m.devices
    for i, a in enumerate(devs):
        for b in devs[i + 1 :]:
            if m.code(a, b) in PCIE_CODES[:4]:
                g.join(a, b)
    by_numa: dict[int, str] = {}
    for gpu, numa in m.numa_affinity.items():
        if numa is not None:
            if numa in by_numa:
                g.join(by_numa[numa], gpu)
            else:
                by_numa[numa] = gpu
    return g.classes(devs)


def pcie_kind_ids(gpu_spec: GpuSpec) -> dict[str, str]:
    """Link kind ids of the PCIe hops for the GPU's host PCIe generation."""
    gen = gpu_spec.host_pcie_gen
    return {
        "switch": f"pcie-gen{gen}-switch",
        "host": f"pcie-gen{gen}-hostbridge",
        "socket": f"pcie-gen{gen}-xsocket",
    }


def _nvswitch_box(m: TopoMatrix, gpu_spec: GpuSpec, link_kinds: dict[str, LinkKind]) -> bool:
    if len(m.gpus) < 3 or not gpu_spec.scale_up_link:
        return False
    kind = link_kinds.get(gpu_spec.scale_up_link)
    if kind is None or kind.family is not LinkFamily.NVLINK:
        return False
    counts = {m.nvlinks(a, b) for i, a in enumerate(m.gpus) for b in m.gpus[i + 1 :]}
    return len(counts) == 1 and 0 not in counts


def links_per_gpu(m: TopoMatrix) -> int:
    """The most NVLinks any GPU of the matrix uses (sum of its NV# cells)."""
    return max((sum(m.nvlinks(a, b) for b in m.gpus) for a in m.gpus), default=0)


def nvlink_lane_kind(m: TopoMatrix, gpu_spec: GpuSpec, link_kinds: dict[str, LinkKind]) -> LinkKind | None:
    """The one-NVLink kind used for direct GPU-GPU links (None when the box needs none).

    Its bandwidth is the GPU's scale-up bandwidth over :func:`links_per_gpu`, so a link of ``n``
    lanes carries ``n`` NVLinks' worth; latency and efficiency are the scale-up kind's.

    Raises
    ------
    StudioError
        The matrix shows NVLinks but the GPU spec names no scale-up link kind in the catalogue.
    """
    per_gpu = links_per_gpu(m)
    if per_gpu == 0 or _nvswitch_box(m, gpu_spec, link_kinds):
        return None
    base = link_kinds.get(gpu_spec.scale_up_link or "")
    if base is None:
        raise StudioError(
            f"the topology shows NVLinks (NV# cells) but GPU '{gpu_spec.id}' has no scale-up link "
            f"kind in the catalogue (scale_up_link={gpu_spec.scale_up_link!r}); pick a GPU with NVLink",
            m.source,
        )
    direct = base.family in (LinkFamily.NVLINK, LinkFamily.NVLINK_BRIDGE)
    return base.replace(
        id=f"{base.id}.x1-of-{per_gpu}",
        name=f"{base.name}, one of {per_gpu} links",
        family=LinkFamily.NVLINK_BRIDGE if direct else base.family,
        bandwidth_gbps=base.bandwidth_gbps / per_gpu,
        description=f"One NVLink of {base.name}: {base.bandwidth_gbps:g} GB/s over {per_gpu} links "
        "(from nvidia-smi topo NV# cells).",
    )


def required_link_kinds(
    m: TopoMatrix, gpu_spec: GpuSpec, link_kinds: dict[str, LinkKind]
) -> dict[str, LinkKind]:
    """Every link kind :func:`topo_to_node` uses for this matrix (derived NVLink lane kind included).

    Raises
    ------
    StudioError
        A needed PCIe or NVLink kind is not in ``link_kinds``.
    """
    ids = pcie_kind_ids(gpu_spec)
    need = [ids["switch"], ids["host"]]
    if len(_sockets(m)) > 1:
        need.append(ids["socket"])
    out: dict[str, LinkKind] = {}
    for kid in need:
        if kid not in link_kinds:
            hint = nearest(kid, sorted(link_kinds))
            raise StudioError(
                f"link kind '{kid}' (PCIe Gen{gpu_spec.host_pcie_gen} of GPU '{gpu_spec.id}') is not in "
                f"the catalogue" + (f"; close: {', '.join(hint)}" if hint else ""),
                m.source,
            )
        out[kid] = link_kinds[kid]
    if _nvswitch_box(m, gpu_spec, link_kinds):
        out[gpu_spec.scale_up_link] = link_kinds[gpu_spec.scale_up_link]  # type: ignore[index]  # _nvswitch_box needs one
    lane = nvlink_lane_kind(m, gpu_spec, link_kinds)
    if lane is not None:
        out[lane.id] = lane
    return out


def topo_to_node(
    matrix: TopoMatrix,
    *,
    gpu_spec: GpuSpec,
    link_kinds: dict[str, LinkKind],
    node_id: str,
    name: str,
    nic_kind: str = "ib-ndr",
    x: float = 0.0,
    y: float = 0.0,
) -> tuple[Node, tuple[Link, ...]]:
    """Rebuild the node described by ``matrix`` (see the module docstring for the rules).

    Parameters
    ----------
    gpu_spec:
        The GPU model of every GPU in the matrix.
    link_kinds:
        The link-kind catalogue; :func:`required_link_kinds` lists what must be (or is derived)
        in the cluster that receives the links.
    node_id, name:
        Id prefix of every vertex and link, and the node's display name.
    nic_kind:
        Network link kind id of the NICs (the network they speak).

    Returns
    -------
    node, links
        ``links`` joins the node's GPUs, switches and NICs; none leaves the node.
    """
    m = matrix
    required_link_kinds(m, gpu_spec, link_kinds)  # fails early, naming a missing kind
    lane = nvlink_lane_kind(m, gpu_spec, link_kinds)
    ids = pcie_kind_ids(gpu_spec)
    vid = {g: f"{node_id}/gpu{i}" for i, g in enumerate(m.gpus)}
    vid.update({n: f"{node_id}/nic{k}" for k, n in enumerate(m.nics)})
    switches: list[Switch] = []
    links: list[Link] = []

    taken: set[str] = set()

    def link(kind: str, a: str, b: str, lanes: float = 1.0) -> None:
        lid = fresh_id(taken, f"{a}~{b.removeprefix(node_id + '/')}")  # same id style as add_link
        taken.add(lid)
        links.append(Link(id=lid, kind=kind, a=a, b=b, lanes=lanes))

    sockets = _sockets(m)
    n_pcie = 0
    for s, members in enumerate(sockets):
        cpu = Switch(id=f"{node_id}/cpu{s}", kind="cpu", name=f"CPU {s}")
        switches.append(cpu)
        if s:
            link(ids["socket"], f"{node_id}/cpu{s - 1}", cpu.id)
        for tree in _components(m, members, ("PIX", "PXB")):
            leaves = _components(m, tree, ("PIX",))
            leaf_ids = []
            for leaf in leaves:
                sw = Switch(id=f"{node_id}/pcie{n_pcie}", kind="pcie-switch", name=f"PCIe switch {n_pcie}")
                n_pcie += 1
                switches.append(sw)
                leaf_ids.append(sw.id)
                for dev in leaf:
                    link(ids["switch"], vid[dev], sw.id)
            top = leaf_ids[0]
            if len(leaf_ids) > 1:
                up = Switch(id=f"{node_id}/pcie{n_pcie}", kind="pcie-switch", name=f"PCIe switch {n_pcie} (upstream)")
                n_pcie += 1
                switches.append(up)
                for sid in leaf_ids:
                    link(ids["switch"], sid, up.id)
                top = up.id
            link(ids["host"], top, cpu.id)
    if _nvswitch_box(m, gpu_spec, link_kinds):
        nvs = Switch(id=f"{node_id}/nvswitch", kind="nvswitch", name="NVSwitch")
        switches.append(nvs)
        for g in m.gpus:
            link(gpu_spec.scale_up_link, vid[g], nvs.id)  # type: ignore[arg-type]  # _nvswitch_box needs one
    else:
        for i, a in enumerate(m.gpus):
            for b in m.gpus[i + 1 :]:
                n = m.nvlinks(a, b)
                if n and lane is not None:
                    link(lane.id, vid[a], vid[b], lanes=float(n))
    gpus = tuple(GpuInstance(id=vid[g], type=gpu_spec.id, slot=i) for i, g in enumerate(m.gpus))
    nics = tuple(
        Nic(id=vid[n], kind=nic_kind, name=m.nic_devices.get(n, n)[:120]) for n in m.nics
    )
    node = Node(
        id=node_id,
        name=name,
        slots=max(1, len(gpus)),
        gpus=gpus,
        switches=tuple(switches),
        nics=nics,
        template=None,
        x=x,
        y=y,
    )
    return node, tuple(links)


def guess_gpu(m: TopoMatrix, specs: dict[str, GpuSpec]) -> str | None:
    """GPU spec id named by ``nvidia-smi -L`` lines in the text, if any match one spec."""
    hits = {match_gpu_name(n, specs) for n in m.gpu_names.values()}
    hits.discard(None)
    return hits.pop() if len(hits) == 1 else None


NODE_SPACING_X = 520.0


def import_topology(
    text: str,
    *,
    gpu_id: str | None,
    nodes: int,
    catalog,
    source: str = "<topo>",
    nic_kind: str | None = None,
    name: str | None = None,
) -> Cluster:
    """Build a cluster of ``nodes`` copies of the node in ``text``, NICs joined through one fabric.

    Parameters
    ----------
    gpu_id:
        GPU spec id; may be None when the text holds ``nvidia-smi -L`` lines naming the model.
    catalog:
        A :class:`studio.io.presets.Catalog` (GPU specs and link kinds).
    nic_kind:
        Network link kind of the NICs; default ``ib-ndr`` (or the first InfiniBand kind).

    Raises
    ------
    StudioError
        Unreadable text, unknown or missing GPU model, unknown link kinds, or several nodes but no
        NIC to join them.
    """
    if not 1 <= nodes <= 4096:
        raise StudioError(f"the node count must be between 1 and 4096 (got {nodes})", source, field="nodes")
    m = parse_topo(text, source)
    if gpu_id is None:
        gpu_id = guess_gpu(m, catalog.gpus)
        if gpu_id is None:
            raise StudioError(
                "the topology does not say which GPU model it is; name it "
                f"(known: {', '.join(sorted(catalog.gpus))})",
                source,
                field="gpu",
            )
    spec = catalog.gpu(gpu_id)
    link_kinds: dict[str, LinkKind] = dict(catalog.links)
    if nic_kind is None:
        nic_kind = "ib-ndr" if "ib-ndr" in link_kinds else next(
            (k for k, v in sorted(link_kinds.items()) if v.family is LinkFamily.INFINIBAND), "ib-ndr"
        )
    network_kinds = ", ".join(k for k, v in sorted(link_kinds.items()) if v.family.is_network)
    if m.nics and nic_kind not in link_kinds:
        raise StudioError(
            f"NIC link kind '{nic_kind}' is not in the catalogue (network kinds: {network_kinds})", source,
            field="nic_kind",
        )
    if nic_kind in link_kinds and not link_kinds[nic_kind].family.is_network:
        raise StudioError(
            f"NIC link kind '{nic_kind}' is a {link_kinds[nic_kind].family.value} link, not a network; "
            f"allowed: {network_kinds}",
            source,
            field="nic_kind",
        )
    if nodes > MAX_CLUSTER_NODES or nodes * len(m.gpus) > MAX_CLUSTER_GPUS:
        raise StudioError(
            f"{nodes:,} nodes × {len(m.gpus)} GPUs is {nodes * len(m.gpus):,} GPUs; at most "
            f"{MAX_CLUSTER_GPUS:,} GPUs in {MAX_CLUSTER_NODES:,} nodes",
            source,
        )
    if nodes > 1 and not m.nics:
        raise StudioError(
            f"the topology lists no NICs, so {nodes} nodes cannot be joined by a network; "
            "use one node or a topology with NIC columns",
            source,
            field="nodes",
        )
    used = required_link_kinds(m, spec, link_kinds)
    if m.nics:
        used[nic_kind] = link_kinds[nic_kind]
    all_nodes: list[Node] = []
    all_links: list[Link] = []
    cols = max(1, min(nodes, 4))
    label = name or f"{len(m.gpus)}× {spec.name} (imported)"
    for i in range(nodes):
        node, node_links = topo_to_node(
            m,
            gpu_spec=spec,
            link_kinds={**link_kinds, **used},
            node_id=f"n{i}",
            name=label if nodes == 1 else f"{label} #{i}",
            nic_kind=nic_kind,
            x=(i % cols) * NODE_SPACING_X,
            y=(i // cols) * 420.0,
        )
        if i == 0 and len(node_links) * nodes > MAX_CLUSTER_LINKS:
            raise StudioError(
                f"{nodes:,} nodes of {len(node_links)} links each is {len(node_links) * nodes:,} links; "
                f"at most {MAX_CLUSTER_LINKS:,}",
                source,
            )
        all_nodes.append(node)
        all_links.extend(node_links)
    try:
        cluster = Cluster(
            name=f"{nodes}× {label}",
            nodes=tuple(all_nodes),
            links=tuple(all_links),
            gpu_specs={spec.id: spec},
            link_kinds=used,
        )
    except ValueError as exc:
        raise StudioError(f"the imported topology is not a valid cluster: {exc}", source) from None
    if nodes > 1:
        cluster = connect_nodes_to_fabric(cluster, link_kinds[nic_kind])
    return cluster
