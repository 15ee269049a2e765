"""Shared pieces of every engine export: the bundle type, the drawn nodes a plan runs on, the
header comment block, safe shell quoting and ordered YAML emission.

Nothing here knows an engine's flag names; the engine modules (:mod:`.vllm`, :mod:`.trtllm`,
:mod:`.sglang`, :mod:`.k8s`) do. User values are checked for what they become first
(:mod:`.safety`: a model argument never starts with ``-``, host names are host names, no control
or bidirectional characters), then pass through :func:`quote` before they land in a shell line,
and through :func:`comment` before they land in a ``#`` comment, so a generated file can never
run anything else. Node names are never addresses: launch lines use ``<HOST_i>`` placeholders or
a script's ``HOST_i`` variables unless host names are given.
"""

from __future__ import annotations

import math
import shlex
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import yaml

from studio.core.errors import StudioError
from studio.core.layout import Layout
from studio.core.precision import DType
from studio.core.project import Project
from studio.engine.results import GIB, PlanResult
from studio.io.export.rules import all_rules
from studio.io.export.safety import check_host, check_model_argument, first_unsafe_char, host_port

ENGINES: tuple[str, ...] = ("vllm", "trtllm", "sglang")
FORMATS: tuple[str, ...] = ("command", "yaml", "script", "k8s")

#: Engine versions the exports target: the versions recorded in ``presets/engines/rules.json``
#: (see ``docs/export.md``).
ENGINE_VERSIONS: dict[str, str] = {e: r.version for e, r in all_rules().items() if e in ENGINES}


@dataclass(frozen=True)
class ExportBundle:
    """What an export produces.

    Attributes
    ----------
    files:
        File name → text, in the order a user should read them.
    notes:
        What the engine cannot express of the plan, and what the export runs instead.
    nearest_layout:
        The layout the exported files actually run when it differs from the plan's, else ``None``.
    """

    files: dict[str, str]
    notes: tuple[str, ...] = ()
    nearest_layout: Layout | None = None
    recipe: EngineRecipe | None = None


@dataclass(frozen=True)
class EngineRecipe:
    """The engine arguments an export writes, for checking them (:mod:`.check`).

    Attributes
    ----------
    engine:
        ``vllm``, ``trtllm`` or ``sglang``.
    model:
        The model argument of the launch line.
    config:
        Engine settings shared by every node, spelled as the engine's config-file keys (dashed for
        vLLM and SGLang, snake_case with nested mappings for TensorRT-LLM).
    env:
        Environment variables set on every launch line (e.g. a layer partition).
    host:
        The ``--host`` the server listens on, or ``None`` when not given.
    model_dtype:
        The dtype the engine runs the model in (``bfloat16`` or ``float16``).
    mla:
        Whether the model uses multi-head latent attention.
    num_layers, pp:
        Decoder layers and pipeline stages (for a layer partition).
    sequences_per_rank:
        Concurrent sequences the plan gives each rank that schedules its own batch.
    """

    engine: str
    model: str
    config: dict[str, object]
    env: dict[str, str]
    host: str | None
    model_dtype: str
    mla: bool
    num_layers: int
    pp: int
    sequences_per_rank: int


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
    project: Project, plan: PlanResult, hosts: Sequence[str] | None, *, script: bool = False
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
        IP address.
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
                f"--hosts: give one host name per node the plan uses ({len(order)}: "
                f"{', '.join(one_line(cluster.node(n).name) for n in order)}); got {len(hosts)}"
            )
        for h in hosts:
            check_host(h)
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
        script=script, vendor=vendor,
    )


def address_notes(dep: Deployment) -> list[str]:
    """The note on node addresses when they were not given."""
    if dep.hosts_given:
        return []
    if dep.script:
        return [
            "Node addresses: set HOST_0..HOST_" f"{len(dep.nodes) - 1} at the top of the script (or in "
            "the environment); it refuses to start while one is unset. Or export again with --hosts."
        ]
    return [
        "Node addresses: replace <HOST_0>..<HOST_" f"{len(dep.nodes) - 1}> with the host names or IPs "
        "of the nodes (listed below), or export again with --hosts."
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


# ----------------------------------------------------------------------------- text safety
_BREAKS = {"\n", "\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"}


def one_line(text: str) -> str:
    """``text`` with every line break and control character shown as an escape, so it can sit
    inside a ``#`` comment (shell or YAML) without ending it."""
    text = str(text)
    if text.isascii() and text.isprintable():
        return text
    out = []
    for ch in text:
        if ch in _BREAKS or unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp", "Cs"):
            out.append(ch.encode("unicode_escape").decode("ascii"))
        else:
            out.append(ch)
    return "".join(out)


def comment(lines: Iterable[str]) -> str:
    """A ``#`` comment block, one line per entry (user text made single-line first)."""
    return "".join(f"# {one_line(line)}".rstrip() + "\n" for line in lines)


def quote(value: object) -> str:
    """One literal shell word (``shlex.quote``); ``$()``, backticks, spaces and newlines stay text.

    Raises
    ------
    StudioError
        The value holds a bidirectional-control, format or control character other than a line
        feed or tab: quoted or not, it would make the line read differently from what runs.
    """
    text = str(value)
    plain = text.isascii() and text.replace("\n", "").replace("\t", "").isprintable()
    bad = None if plain else first_unsafe_char(text.replace("\n", "").replace("\t", ""))
    if bad is not None:
        raise StudioError(f"'{one_line(text)}' holds {bad}, which is not written into a launch line")
    return shlex.quote(text)


@dataclass(frozen=True)
class Raw:
    """A shell fragment written as is (an environment reference such as ``"$NODE_RANK"``).

    Only the exporters create these, from constant text; user values are never ``Raw``.
    """

    text: str


Word = str | int | float | Raw


def word(w: Word) -> str:
    """Render one word: ``Raw`` as is, anything else quoted."""
    if isinstance(w, Raw):
        return w.text
    if isinstance(w, bool):
        raise TypeError("booleans are written as flags, not words")
    return quote(w)


def shell_command(groups: Sequence[Sequence[Word]], env: Sequence[tuple[str, Word]] = ()) -> str:
    """A command split over lines: each group (a program, or a flag with its values) on its own
    line joined by ``\\``; ``env`` assignments go in front of the program."""
    prefix = "".join(f"{k}={word(v)} " for k, v in env)
    lines = [" ".join(word(w) for w in g) for g in groups if g]
    return prefix + " \\\n    ".join(lines) + "\n"


def flag_groups(flags: Sequence[tuple[str, object]]) -> list[list[Word]]:
    """``(flag, value)`` pairs as command groups: ``True`` → the bare flag, ``None`` skipped,
    a list → the flag followed by each value."""
    out: list[list[Word]] = []
    for name, value in flags:
        if value is None or value is False:
            continue
        if value is True:
            out.append([name])
        elif isinstance(value, (list, tuple)):
            out.append([name, *value])
        else:
            out.append([name, value])  # type: ignore[list-item]
    return out


# ----------------------------------------------------------------------------- YAML
class _Dumper(yaml.SafeDumper):
    """SafeDumper that indents lists under their key (easier to read)."""

    def increase_indent(self, flow: bool = False, indentless: bool = False):  # noqa: ANN201
        return super().increase_indent(flow, False)


def dump_yaml(data: object) -> str:
    """YAML text of ``data`` with the keys in the order given (``safe_dump``, no sorting)."""
    return yaml.dump(
        data, Dumper=_Dumper, sort_keys=False, default_flow_style=False, allow_unicode=True, width=100
    )


# ----------------------------------------------------------------------------- figures
def gib(nbytes: float) -> str:
    return f"{nbytes / GIB:.1f} GiB"


def _num(value: float, digits: int = 1) -> str:
    if not math.isfinite(value):
        return "n/a"
    return f"{value:,.{digits}f}"


def model_path(project: Project, given: str | None) -> tuple[str, list[str]]:
    """The model argument of the launch line and a note when it had to be guessed.

    Raises
    ------
    StudioError
        ``given`` (or the model's Hugging Face id) is empty, starts with ``-`` or holds control,
        format or bidirectional characters (see :func:`.safety.check_model_argument`).
    """
    if given is not None:
        return check_model_argument(given), []
    if project.model.hf_model_id:
        return check_model_argument(project.model.hf_model_id, "model.hf_model_id"), []
    return check_model_argument(project.model.id, "model.id"), [
        f"The model '{project.model.name}' has no Hugging Face id; the launch lines use its preset id "
        f"'{project.model.id}'. Pass --model-path with the checkpoint folder or the Hugging Face id."
    ]


@dataclass(frozen=True)
class Reserve:
    """What the engine reserves on each GPU from the exported memory fraction.

    ``fraction`` × ``base`` bytes, where ``base`` is the plan's own device memory (``capacity``)
    or the memory left after weights, activations and overhead (``free``), of the busiest GPU.
    """

    setting: str  # the engine's name for the fraction
    fraction: float
    base: str  # "capacity" or "free"
    what: str  # what the reserved memory holds


def reserve_lines(plan: PlanResult, reserve: Reserve) -> list[str]:
    """Header lines stating the memory the engine will reserve, from the plan's own figures."""
    if not plan.memory:
        return []
    m = plan.peak_memory
    if reserve.base == "capacity":
        base, of = m.capacity, "the plan's device memory"
    else:
        base, of = max(m.capacity - m.weights - m.activations - m.overhead, 0.0), (
            "memory left after weights, activations and overhead"
        )
    reserved = reserve.fraction * base
    return [
        f"Engine memory: {reserve.setting} {reserve.fraction:g} x {gib(base)} ({of}, busiest GPU "
        f"{m.gpu_id}) = {gib(reserved)} per GPU for {reserve.what}",
    ]


def header(
    project: Project, plan: PlanResult, engine: str, model: str, notes: Sequence[str],
    reserve: Reserve | None = None,
) -> list[str]:
    """Lines of the comment block every export starts with: the plan's headline figures, the
    memory the engine will reserve, the plan's assumptions, its warnings and the engine notes."""
    lay = plan.layout
    wl = project.workload
    stages = ",".join(str(s.layers) for s in plan.stages) or ",".join(
        str(n) for n in lay.stage_layers(project.model.num_layers)
    )
    lines = [
        f"Layout Studio export for {ENGINE_VERSIONS[engine]}",
        f"Project: {project.name}",
        f"Model: {project.model.name} -> {model}",
        f"Cluster: {project.cluster.name} ({project.cluster.num_gpus} GPUs on "
        f"{len(project.cluster.nodes)} node{'s' if len(project.cluster.nodes) != 1 else ''})",
        f"Layout: {lay.label} = {lay.world_size} GPUs; layers per stage {stages}; "
        f"micro-batches {lay.micro_batches}",
        f"Fits: {'yes' if plan.fits else 'NO'}" + (f" - {plan.fit_reason}" if plan.fit_reason else ""),
        f"Workload: {wl.isl} input + {wl.osl} output tokens; batch {plan.batch} per replica"
        + (" (auto)" if plan.batch_auto else ""),
    ]
    if plan.memory:
        m = plan.peak_memory
        lines.append(
            f"Per-GPU memory (busiest GPU {m.gpu_id}): weights {gib(m.weights)}, KV cache "
            f"{gib(m.kv_cache)}, activations {gib(m.activations)}, overhead {gib(m.overhead)}; "
            f"total {gib(m.total)} of {gib(m.capacity)} ({gib(m.usable)} usable)"
        )
    if reserve is not None:
        lines += reserve_lines(plan, reserve)
    lines += [
        f"KV cache: {plan.kv_capacity_tokens:,} tokens per replica; "
        f"{plan.max_concurrent_sequences:,} sequences of {wl.isl + wl.osl} tokens",
        f"TTFT {_num(plan.ttft_ms)} ms; TPOT {_num(plan.tpot_ms, 2)} ms; "
        f"request {_num(plan.request_latency_ms)} ms",
        f"Throughput: {_num(plan.output_tokens_per_s)} output tokens/s "
        f"({_num(plan.output_tokens_per_s_per_gpu)} per GPU, "
        f"{_num(plan.tokens_per_s_per_user)} per user)",
        f"Cost: ${_num(plan.usd_per_hour, 2)}/h; ${_num(plan.usd_per_million_output_tokens, 3)} "
        "per million output tokens",
    ]
    if plan.calibration:
        lines.append(f"Calibration: {plan.calibration}")
    if plan.assumptions:
        lines.append("Assumptions:")
        lines += [f"  - {a}" for a in plan.assumptions]
    if plan.warnings:
        lines.append("Warnings:")
        lines += [f"  - [{w.severity}] {w.code}: {w.message} Fix: {w.fix}" for w in plan.warnings]
    if notes:
        lines.append(f"What {ENGINE_VERSIONS[engine].split(' (')[0]} runs differently from the plan:")
        lines += [f"  - {n}" for n in notes]
    return lines


# ----------------------------------------------------------------------------- serving figures
def kv_dtype(project: Project) -> DType:
    return DType(project.serving.kv_dtype)


def quantized_to(project: Project) -> tuple[DType | None, list[str]]:
    """The weight format served when it is narrower than the checkpoint's, else ``None``.

    Returns the format and notes (e.g. when the plan asks for wider weights than the checkpoint,
    which no engine does).
    """
    ckpt = project.model.precision
    served = project.serving.effective_precision(ckpt)
    if served == ckpt:
        return None, []
    key = "experts" if project.model.is_moe else "mlp"
    target = DType(getattr(served, key))
    source = DType(getattr(ckpt, key))
    if target.bytes >= source.bytes:
        return None, [
            f"The plan serves {key} weights as {target.value}; the checkpoint stores "
            f"{source.value}. Engines serve the checkpoint's own format, so point the model path at "
            f"a {target.value} checkpoint to match the plan's memory figures."
        ]
    return target, []


def served_layout(project: Project, plan: PlanResult) -> tuple[Layout, list[str]]:
    """The plan's layout as an engine serves it: expert parallelism dropped (with a note) for a
    dense model, where EP has nothing to split."""
    lay = plan.layout
    if project.model.is_moe or lay.ep <= 1:
        return lay, []
    note = f"{project.model.name} is a dense model; EP={lay.ep} has no effect and is dropped."
    return lay.replace(ep=1), [note]


def max_model_len(project: Project, plan: PlanResult) -> int:
    """Context length to configure: the model's full context when one sequence of it fits the
    plan's KV cache per replica, else ``isl + osl`` (what the plan was sized for)."""
    need = project.workload.isl + project.workload.osl
    full = project.model.max_context
    if plan.kv_capacity_tokens >= full >= need:
        return full
    return need


def batched_tokens(project: Project, plan: PlanResult) -> int:
    """Tokens per engine step: one whole prompt next to a decode token of every other running
    sequence, so a prompt is prefilled in one step as the plan's TTFT assumes."""
    return project.workload.isl + max(plan.batch - 1, 0)


def kv_memory_fractions(plan: PlanResult) -> tuple[float, float]:
    """``(static, free)`` memory fractions for the busiest GPU, rounded down to 3 digits.

    ``static`` = (weights + KV pool) / capacity (SGLang's ``mem-fraction-static``); ``free`` = KV
    pool / memory left after weights, activations and overhead (TensorRT-LLM's
    ``free_gpu_memory_fraction``). The KV pool is the plan's usable memory minus everything else.
    """
    statics, frees = [], []
    for m in plan.memory:
        pool = m.usable - m.weights - m.activations - m.overhead
        statics.append((m.weights + max(pool, 0.0)) / m.capacity)
        left = m.capacity - m.weights - m.activations - m.overhead
        frees.append(max(pool, 0.0) / left if left > 0 else 0.0)
    if not statics:
        return 0.0, 0.0
    return math.floor(min(statics) * 1000) / 1000, math.floor(min(frees) * 1000) / 1000


def uneven_split(project: Project, plan: PlanResult) -> tuple[int, ...] | None:
    """Layers per stage when they are not all equal, else ``None``."""
    split = plan.layout.stage_layers(project.model.num_layers)
    return tuple(split) if len(set(split)) > 1 else None


# ----------------------------------------------------------------------------- recipes
@dataclass(frozen=True)
class Step:
    """One command of a launch recipe and the node it runs on (``None``: any machine)."""

    node: int | None  # index into ``Deployment.nodes``
    text: str  # shell text, ending in a newline
    blocking: bool = True  # a server that stays in the foreground (vs. ``ray start``)
    note: str = ""


@dataclass(frozen=True)
class Recipe:
    """A named way to launch the plan (e.g. "multiprocessing", "Ray")."""

    key: str  # short name used by the script's RECIPE argument
    title: str
    steps: tuple[Step, ...]


def node_label(dep: Deployment, index: int) -> str:
    n = dep.nodes[index]
    if dep.script and dep.multi_node:
        host = f", address $HOST_{index}"
    elif dep.hosts_given or dep.multi_node:
        host = f", host {n.host}"
    else:
        host = ""
    return f"node {index}: {n.name}{host} ({n.gpus} GPUs)"


def render_commands(head: Sequence[str], dep: Deployment, recipes: Sequence[Recipe]) -> str:
    """Commands to paste, one block per recipe, each command under the node it runs on."""
    out = [comment(head)]
    for rec in recipes:
        out.append("\n" + comment([f"=== {rec.title} ==="]))
        for step in rec.steps:
            where = "on any machine" if step.node is None else f"on {node_label(dep, step.node)}"
            out.append(comment([where] + ([step.note] if step.note else [])))
            out.append(step.text)
    return "".join(out)


def render_script(head: Sequence[str], dep: Deployment, recipes: Sequence[Recipe]) -> str:
    """A bash script: ``launch.sh NODE_INDEX [RECIPE]`` runs this node's part of a recipe."""
    keys = [r.key for r in recipes]
    lines = [
        "#!/usr/bin/env bash\n",
        comment(head),
        comment(
            [
                "",
                "Usage: launch.sh NODE_INDEX [RECIPE]",
                f"  NODE_INDEX: 0..{len(dep.nodes) - 1} (the node this script runs on)",
                f"  RECIPE: {' | '.join(keys)} (default {keys[0]})",
            ]
            + [f"  {node_label(dep, i)}" for i in range(len(dep.nodes))]
        ),
        "set -euo pipefail\n\n",
        'NODE_INDEX="${1:?usage: launch.sh NODE_INDEX [RECIPE]}"\n',
        f'RECIPE="${{2:-{keys[0]}}}"\n\n',
    ]
    if any("${HOST_" in s.text for r in recipes for s in r.steps):
        lines.append(host_variables(dep))
    for rec in recipes:
        lines.append(comment([rec.title]))
        lines.append(f"recipe_{rec.key}() {{\n")
        lines.append('    case "$1" in\n')
        per_node: list[list[Step]] = [[] for _ in dep.nodes]  # in recipe order, "any machine" steps on all
        for step in rec.steps:
            for steps in per_node if step.node is None else [per_node[step.node]]:
                steps.append(step)
        for i, steps in enumerate(per_node):
            lines.append(f"    {i})\n")
            servers = sum(s.blocking for s in steps)
            for s in steps:
                text = s.text.rstrip("\n")
                if s.blocking and servers > 1:
                    text += " &"
                lines.append(text + "\n")
            if servers > 1:
                lines.append("        wait\n")
            if not steps:
                lines.append("        :  # this recipe starts nothing on this node\n")
            lines.append("        ;;\n")
        lines.append(
            f'    *) echo "NODE_INDEX must be 0..{len(dep.nodes) - 1}, got $1" >&2; exit 2 ;;\n'
        )
        lines.append("    esac\n}\n\n")
    lines.append('case "$RECIPE" in\n')
    for k in keys:
        lines.append(f'    {k}) recipe_{k} "$NODE_INDEX" ;;\n')
    lines.append(f'    *) echo "RECIPE must be one of: {" ".join(keys)}; got $RECIPE" >&2; exit 2 ;;\n')
    lines.append("esac\n")
    return "".join(lines)


def host_variables(dep: Deployment) -> str:
    """The block of a launch script that holds the node addresses: one ``HOST_i`` variable per
    used node (from the environment, else the value written here) and a check that stops the
    script, before anything starts, while one is unset or not a host name."""
    names = " ".join(f"HOST_{n.index}" for n in dep.nodes)
    out = [
        comment(
            [
                "Addresses of the nodes (host names or IPs): set them here, or in the environment",
                "(e.g. HOST_0=10.0.0.1 HOST_1=10.0.0.2 ./launch.sh 0).",
            ]
        )
    ]
    for n in dep.nodes:
        value = n.host if dep.hosts_given else ""
        out.append(f'HOST_{n.index}="${{HOST_{n.index}:-{value}}}"  # {one_line(n.name)} ({n.gpus} GPUs)\n')
    out.append(
        f"for var in {names}; do\n"
        '    value="${!var}"\n'
        '    if [ -z "$value" ]; then\n'
        '        echo "launch.sh: $var is not set; write the address of its node at the top of this script or export $var" >&2\n'
        "        exit 2\n"
        "    fi\n"
        '    if ! [[ "$value" =~ ^[A-Za-z0-9]([A-Za-z0-9.:-]*[A-Za-z0-9])?$ ]] || [[ "$value" == *..* ]]; then\n'
        '        echo "launch.sh: $var is not a host name or IP address" >&2\n'
        "        exit 2\n"
        "    fi\n"
        "done\n\n"
    )
    return "".join(out)


def devices_env(group: Group, node_pos: int) -> list[tuple[str, Word]]:
    """``CUDA_VISIBLE_DEVICES`` for a server that shares its node with another one."""
    if group.devices is None:
        return []
    return [("CUDA_VISIBLE_DEVICES", ",".join(str(s) for s in group.devices[node_pos]))]


def group_node_index(dep: Deployment, group: Group, pos: int) -> int:
    """Index into ``dep.nodes`` of the ``pos``-th node of ``group``."""
    return dep.rank_node[group.nodes[pos].first_rank]


# ----------------------------------------------------------------------------- run-time rules
_TORCH_NAMES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}


def model_dtype(project: Project) -> str:
    """The dtype the engine runs the model in: ``float16`` for int4 (AWQ/GPTQ) weights, whose
    checkpoints are float16, else the dtype of the unquantised modules (``bfloat16`` for almost
    every current checkpoint)."""
    prec = project.serving.effective_precision(project.model.precision)
    if DType.INT4 in (prec.attention, prec.mlp, prec.experts):
        return "float16"
    return _TORCH_NAMES.get(DType(prec.embeddings).value, "bfloat16")


def kv_cache_value(project: Project, emit: dict[str, str], engine_name: str) -> tuple[str, list[str]]:
    """The KV-cache dtype to write (from the engine's rules) and a note when ``auto`` stores the
    cache in a 16-bit dtype other than the plan's (same bytes per value, so the memory figures
    hold)."""
    planned = kv_dtype(project).value
    value = emit[planned]
    notes: list[str] = []
    if value == "auto" and planned in _TORCH_NAMES:
        runs = model_dtype(project)
        if _TORCH_NAMES[planned] != runs:
            notes.append(
                f"The plan stores the KV cache as {planned}; {engine_name} keeps a 16-bit KV cache in "
                f"the model's dtype ({runs}), written as 'auto' (same 2 bytes per value)."
            )
    return value, notes


def sequences_per_rank(plan: PlanResult) -> int:
    """Concurrent sequences the plan gives each replica (the engines' batch limit per rank)."""
    return plan.batch
