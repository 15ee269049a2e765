"""Disaggregated prefill/decode exports: one server per worker of each pool plus the router that
joins them, for vLLM (``--kv-transfer-config`` with a KV connector, the NIXL toy proxy), SGLang
(``--disaggregation-mode prefill|decode`` and ``sglang_router --pd-disaggregation``) and
TensorRT-LLM (context / generation servers with ``cache_transceiver_config`` and
``trtllm-serve disaggregated -c``).

The engine-specific names come from ``presets/engines/rules.json`` (``engines.<engine>.disaggregated``,
each with its source file); :mod:`.disagg_check` checks a recipe against the same rules. Every
worker runs on one node (``CUDA_VISIBLE_DEVICES`` = its GPU slots); instances sharing a host get
their own serving port, and their own NIXL side-channel port (vLLM) or bootstrap port (SGLang).
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, cast

from studio.core.errors import StudioError
from studio.core.project import Project
from studio.core.serving_mode import PoolLayout
from studio.engine.disagg.summary import summary_lines
from studio.io.export import common as c
from studio.io.export.bundle import ExportBundle
from studio.io.export.checks.rules import rules_for
from studio.io.export.checks.safety import check_hosts

PREFILL_PORT = 8100  # first serving port of the prefill servers on a host (then +1 per server)
DECODE_PORT = 8200  # first serving port of the decode servers on a host
LISTEN = "0.0.0.0"
#: Side-channel ports of two vLLM servers on one host are this far apart (each TP rank takes one).
SIDE_CHANNEL_STRIDE = 100


def disagg_rules(engine: str) -> dict:
    """The ``disaggregated`` rules of ``engine`` from ``presets/engines/rules.json``."""
    from studio.io.export.checks.rules import RULES_FILE
    from studio.io.presets import presets_root, read_json

    data = read_json(presets_root().joinpath(*RULES_FILE.split("/")), RULES_FILE)
    section = data.get("engines", {}).get(engine, {}).get("disaggregated")
    if not isinstance(section, dict):
        raise StudioError(
            f"{RULES_FILE}: engines.{engine}.disaggregated is missing; no disaggregated recipe for {engine}"
        )
    return section


def disagg_part(engine: str) -> Any:
    """The engine's disaggregated-export module (``engines.<engine>.export.disagg`` in the rules):
    ``notes``, ``ports``, ``engine_args``, ``router``, ``configs``, ``server_command``,
    ``router_command`` and ``check``.

    Raises
    ------
    StudioError
        An engine without a disaggregated export.
    """
    from studio.io.export.engines import engine_spec

    spec = engine_spec(engine)
    if spec.disagg is None:
        raise StudioError(f"{spec.label} has no disaggregated export")
    return importlib.import_module(spec.disagg)


@dataclass(frozen=True)
class Server:
    """One worker of a pool as launched."""

    role: str  # "prefill" or "decode"
    index: int  # worker index in its pool
    host: str
    node: str
    slots: tuple[int, ...]  # CUDA device indices on its node
    port: int
    side_port: int | None = None  # vLLM NIXL side channel
    bootstrap_port: int | None = None  # SGLang prefill bootstrap
    args: dict[str, object] = field(default_factory=dict)  # engine arguments (flag → value)
    env: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class DisaggRecipe:
    """What a disaggregated export launches, for :func:`studio.io.export.checks.disagg_check.check_disaggregated`."""

    engine: str
    isl: int
    servers: tuple[Server, ...]
    router: dict[str, object]  # router / proxy arguments (engine-specific keys)
    configs: dict[str, dict] = field(default_factory=dict)  # TensorRT-LLM config files by name
    backend: str = "nixl"  # the plan's KV-transfer backend
    version: str | None = None  # engine release the recipe is written for (None: the rules' own)
    max_seq_len: int = 0  # longest sequence a server admits (isl + osl)
    blackwell: bool = False  # the pools run on NVIDIA Blackwell GPUs
    model: str = ""  # the model argument of every server (for the engine's own validation)
    hf_config: dict | None = None  # the model's config.json when a bundled preset's (engine validation)


def _servers(
    project: Project, result, hosts: Sequence[str] | None
) -> tuple[list[tuple[str, PoolLayout, tuple[str, ...]]], dict[str, str]]:
    """The workers (role, pool, GPU ids) and the host of every node they use."""
    cluster = project.cluster
    node_of = {g.id: n.id for n in cluster.nodes for g in n.gpus}
    workers = []
    for role, pr in (("prefill", result.prefill), ("decode", result.decode)):
        per = pr.pool.gpus_per_worker
        for w in range(pr.pool.workers):
            gpus = pr.placement[w * per : (w + 1) * per]
            nodes = sorted({node_of[g] for g in gpus})
            if len(nodes) > 1:
                raise StudioError(
                    f"serving_mode.{role}: worker {w} ({pr.pool.worker_label()}) spans nodes {', '.join(nodes)}; "
                    "disaggregated exports launch one server per node — use workers that fit one node"
                )
            workers.append((role, pr.pool, gpus))
    used: list[str] = []
    for _, _, gpus in workers:
        n = node_of[gpus[0]]
        if n not in used:
            used.append(n)
    if hosts is not None:
        if len(hosts) != len(used):
            raise StudioError(
                f"{len(hosts)} host name{'s' if len(hosts) != 1 else ''} given; the pools use {len(used)} nodes ({', '.join(used)}), "
                "give one host per node in that order",
                field="hosts",
            )
        names = dict(zip(used, check_hosts(hosts), strict=True))
    else:
        names = {n: f"<HOST_{i}>" for i, n in enumerate(used)}
    return workers, names


def build_recipe(
    project: Project, result, engine: str, hosts: Sequence[str] | None = None
) -> DisaggRecipe:
    """The servers, their ports and arguments, and the router of a disaggregated plan."""
    rules = disagg_rules(engine)
    part = disagg_part(engine)
    workers, names = _servers(project, result, hosts)
    node_of = {g.id: n.id for n in project.cluster.nodes for g in n.gpus}
    slot_of = {g.id: g.slot for n in project.cluster.nodes for g in n.gpus}
    count: dict[tuple[str, str], int] = {}
    on_host: dict[str, int] = {}
    servers: list[Server] = []
    backend = result.mode.transfer_backend
    for role, pool, gpus in workers:
        node = node_of[gpus[0]]
        k = count.get((node, role), 0)
        count[(node, role)] = k + 1
        j = on_host.get(node, 0)
        on_host[node] = j + 1
        port = (PREFILL_PORT if role == "prefill" else DECODE_PORT) + k
        env: list[tuple[str, str]] = [
            ("CUDA_VISIBLE_DEVICES", ",".join(str(slot_of[g]) for g in gpus))
        ]
        more, side, boot = part.ports(rules, role, names[node], j, k, backend)
        env += more
        args = part.engine_args(project, result, role, pool, rules, backend, boot)
        servers.append(
            Server(
                role=role,
                index=sum(1 for s in servers if s.role == role),
                host=names[node],
                node=node,
                slots=tuple(slot_of[g] for g in gpus),
                port=port,
                side_port=side,
                bootstrap_port=boot,
                args=args,
                env=tuple(env),
            )
        )
    router = part.router(rules, servers, backend)
    configs = part.configs(project, result, rules, servers)
    return DisaggRecipe(
        engine=engine,
        isl=project.workload.isl,
        servers=tuple(servers),
        router=router,
        configs=configs,
        backend=backend,
        version=rules_for(engine).release,
        max_seq_len=project.workload.isl + project.workload.osl,
        blackwell=c.is_blackwell(project, tuple(result.prefill.gpu_types + result.decode.gpu_types)),
    )


def pool_batch(result, role: str) -> int:
    """Sequences one server of ``role`` runs at most, as costed (decode: its cap; prefill: prompts per iteration)."""
    return max(1, int((result.prefill if role == "prefill" else result.decode).max_running))


def url_router_groups(head: list[c.Word], a: dict[str, object]) -> list[list[c.Word]]:
    """A router that takes ``--prefill URL [BOOTSTRAP_PORT]`` and ``--decode URL`` (SGLang's router,
    vLLM's Mooncake proxy) as command groups."""
    groups: list[list[c.Word]] = [head]
    for url, boot in cast("list[tuple[str, int | None]]", a["--prefill"]):
        entry: list[c.Word] = ["--prefill", url]
        groups.append(entry + ([boot] if boot is not None else []))
    for url in cast("list[str]", a["--decode"]):
        groups.append(["--decode", url])
    return groups + c.flag_groups([("--host", a["--host"]), ("--port", a["--port"])])


# ----------------------------------------------------------------------------- text
def export_disaggregated(
    project: Project,
    result,
    *,
    engine: str,
    model_path: str | None = None,
    hosts: Sequence[str] | None = None,
) -> tuple[ExportBundle, DisaggRecipe]:
    """The files that launch a disaggregated plan on ``engine`` and the recipe they hold.

    Raises
    ------
    StudioError
        An unknown engine, a worker spanning nodes, a transfer backend the engine lacks, a
        ``hosts`` list that does not match the nodes the pools use, an unsafe model path, or
        speculative decoding (the recipes do not configure a drafter yet).
    """
    spec = project.serving.speculative
    if spec is not None:  # planned with the drafter, but never dropped silently from the servers
        raise StudioError(
            f"speculative decoding ({spec.method}, serving.speculative) is not written into "
            "disaggregated exports yet: the exported servers would run without it; export the pools "
            "without speculative decoding, or the speculative setup as one aggregated pool"
        )
    part = disagg_part(engine)
    model, notes = c.model_path(project, model_path)
    notes += part.notes(project, result)
    from studio.io.export.serving import preset_config_json

    recipe = replace(build_recipe(project, result, engine, hosts), model=model, hf_config=preset_config_json(project))
    lines = _header(project, result, engine, model, notes)
    files: dict[str, str] = {}
    if recipe.configs:
        for name, cfg in recipe.configs.items():
            files[name] = c.comment([f"Layout Studio: {name} for {result.label}"]) + c.dump_yaml(
                cfg
            )
    body = [c.comment(lines)]
    for s in recipe.servers:
        body.append(
            "\n"
            + c.comment(
                [
                    f"{s.role} worker {s.index} on {s.host} (node {s.node}, GPUs "
                    f"{','.join(map(str, s.slots))}): run on that host"
                ]
            )
        )
        body.append(part.server_command(model, s))
    body.append("\n" + c.comment(["router: send requests here once every server is up"]))
    body.append(part.router_command(recipe))
    files[f"{engine}-disagg-commands.sh"] = "".join(body)
    return ExportBundle(files=files, notes=tuple(notes)), recipe


def _header(project: Project, result, engine: str, model: str, notes: list[str]) -> list[str]:
    wl = project.workload
    lines = [
        f"Layout Studio disaggregated export for {c.ENGINE_VERSIONS[engine]}",
        f"Project: {project.name}",
        f"Model: {project.model.name} -> {model}",
        f"Serving: {result.label} = {result.gpus} GPUs (transfer backend {result.mode.transfer_backend})",
        f"Workload: {wl.isl} input + {wl.osl} output tokens",
        *summary_lines(result),  # as `plan --disagg` and the Serving mode panel say them
    ]
    if notes:
        lines.append("Notes:")
        lines += [f"  - {n}" for n in notes]
    return lines
