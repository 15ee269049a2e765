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

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import cast

from studio.core.errors import StudioError
from studio.core.project import Project
from studio.core.serving_mode import PoolLayout
from studio.core.units import MIB
from studio.io.export import common as c
from studio.io.export.bundle import ExportBundle
from studio.io.export.rules import rules_for
from studio.io.export.safety import check_hosts, host_port

PREFILL_PORT = 8100  # first serving port of the prefill servers on a host (then +1 per server)
DECODE_PORT = 8200  # first serving port of the decode servers on a host
LISTEN = "0.0.0.0"
#: Side-channel ports of two vLLM servers on one host are this far apart (each TP rank takes one).
SIDE_CHANNEL_STRIDE = 100


def disagg_rules(engine: str) -> dict:
    """The ``disaggregated`` rules of ``engine`` from ``presets/engines/rules.json``."""
    from studio.io.export.rules import RULES_FILE
    from studio.io.presets import presets_root, read_json

    data = read_json(presets_root().joinpath(*RULES_FILE.split("/")), RULES_FILE)
    section = data.get("engines", {}).get(engine, {}).get("disaggregated")
    if not isinstance(section, dict):
        raise StudioError(
            f"{RULES_FILE}: engines.{engine}.disaggregated is missing; no disaggregated recipe for {engine}"
        )
    return section


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
    """What a disaggregated export launches, for :func:`studio.io.export.disagg_check.check_disaggregated`."""

    engine: str
    isl: int
    servers: tuple[Server, ...]
    router: dict[str, object]  # router / proxy arguments (engine-specific keys)
    configs: dict[str, dict] = field(default_factory=dict)  # TensorRT-LLM config files by name


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
        side = boot = None
        env: list[tuple[str, str]] = [
            ("CUDA_VISIBLE_DEVICES", ",".join(str(slot_of[g]) for g in gpus))
        ]
        if engine == "vllm":
            side = int(rules["side_channel_port_default"]) + SIDE_CHANNEL_STRIDE * j
            env += [
                (rules["side_channel_host_env"], names[node]),
                (rules["side_channel_port_env"], str(side)),
            ]
        if engine == "sglang" and role == "prefill":
            boot = int(rules["bootstrap_port_default"]) + k
        args = _engine_args(project, result, engine, role, pool, rules, backend, boot)
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
    router = _router(engine, rules, servers)
    configs = _trtllm_configs(project, result, rules, servers) if engine == "trtllm" else {}
    return DisaggRecipe(
        engine=engine,
        isl=project.workload.isl,
        servers=tuple(servers),
        router=router,
        configs=configs,
    )


def _batch(result, role: str) -> int:
    """Sequences one server of ``role`` runs at most, as costed (decode: its cap; prefill: prompts per iteration)."""
    return max(1, int((result.prefill if role == "prefill" else result.decode).max_running))


def _engine_args(
    project: Project,
    result,
    engine: str,
    role: str,
    pool: PoolLayout,
    rules: dict,
    backend: str,
    bootstrap: int | None,
) -> dict[str, object]:
    sv, wl = project.serving, project.workload
    er = rules_for(engine)
    kv, _ = c.kv_cache_value(project, er.kv.emit, engine)
    budget = int(sv.max_num_batched_tokens or 8192)
    ctx = wl.isl + wl.osl
    seqs = _batch(result, role)
    if engine == "vllm":
        conn = rules["connectors"][backend]
        cfg: dict[str, object] = {
            "kv_connector": conn["kv_connector"],
            "kv_role": conn[f"{role}_role"],
        }
        if "kv_connector_module_path" in conn:
            cfg["kv_connector_module_path"] = conn["kv_connector_module_path"]
        args: dict[str, object] = {
            "--tensor-parallel-size": pool.tp,
            "--pipeline-parallel-size": pool.pp,
            "--max-model-len": ctx,
            "--gpu-memory-utilization": sv.gpu_memory_utilization,
            "--kv-cache-dtype": kv,
            "--max-num-seqs": seqs,
            "--max-num-batched-tokens": max(budget, seqs),
        }
        if project.model.is_moe:
            args["--enable-expert-parallel"] = pool.ep > 1
        args.update({"--host": LISTEN, rules["flag"]: json.dumps(cfg, separators=(",", ":"))})
        return args
    if engine == "sglang":
        if backend not in rules["backends"]:
            raise StudioError(
                f"serving_mode.transfer_backend '{backend}' is not an SGLang disaggregation backend; "
                f"allowed: {', '.join(rules['backends'])}"
            )
        args = {
            "--tp-size": pool.tp,
            "--pp-size": pool.pp,
            "--context-length": ctx,
            "--mem-fraction-static": sv.gpu_memory_utilization,
            "--kv-cache-dtype": kv,
            "--max-running-requests": seqs,
            "--chunked-prefill-size": budget,
        }
        if pool.ep > 1:
            args["--ep-size"] = pool.ep
        args.update(
            {
                "--host": LISTEN,
                rules["mode_flag"]: role,
                rules["backend_flag"]: rules["backends"][backend],
            }
        )
        if bootstrap is not None:
            args[rules["bootstrap_flag"]] = bootstrap
        return args
    return {"--host": LISTEN}  # TensorRT-LLM: everything else is in the pool's config file


def _router(engine: str, rules: dict, servers: list[Server]) -> dict[str, object]:
    pre = [s for s in servers if s.role == "prefill"]
    dec = [s for s in servers if s.role == "decode"]
    if engine == "vllm":
        return {
            "script": rules["proxy"],
            "--host": LISTEN,
            "--port": int(rules["proxy_port_default"]),
            "--prefiller-hosts": [s.host for s in pre],
            "--prefiller-ports": [s.port for s in pre],
            "--decoder-hosts": [s.host for s in dec],
            "--decoder-ports": [s.port for s in dec],
        }
    if engine == "sglang":
        return {
            "module": rules["router"],
            "--prefill": [(f"http://{host_port(s.host, s.port)}", s.bootstrap_port) for s in pre],
            "--decode": [f"http://{host_port(s.host, s.port)}" for s in dec],
            "--host": LISTEN,
            "--port": int(rules["router_port_default"]),
        }
    return {"config": "disagg-config.yaml"}


def _trtllm_configs(
    project: Project, result, rules: dict, servers: list[Server]
) -> dict[str, dict]:
    sv, wl = project.serving, project.workload
    er = rules_for("trtllm")
    kv, _ = c.kv_cache_value(project, er.kv.emit, "TensorRT-LLM")
    backend = rules["backends"].get(result.mode.transfer_backend)
    budget = int(sv.max_num_batched_tokens or 8192)
    out: dict[str, dict] = {}
    for role, pr in (("prefill", result.prefill), ("decode", result.decode)):
        pool = pr.pool
        cfg: dict[str, object] = {
            "tensor_parallel_size": pool.tp,
            "pipeline_parallel_size": pool.pp,
        }
        if project.model.is_moe:
            cfg["moe_expert_parallel_size"] = pool.ep
            cfg["moe_tensor_parallel_size"] = max(1, pool.tp // pool.ep)
        cfg.update(
            {
                "max_batch_size": _batch(result, role),
                "max_num_tokens": budget,
                "max_seq_len": wl.isl + wl.osl,
                "enable_chunked_prefill": True,
                "kv_cache_config": {
                    "free_gpu_memory_fraction": sv.gpu_memory_utilization,
                    "dtype": kv,
                },
            }
        )
        if role == "prefill" and rules.get("context_disable_overlap_scheduler"):
            cfg["disable_overlap_scheduler"] = True
        cfg["cache_transceiver_config"] = {"backend": backend, "max_tokens_in_buffer": wl.isl}
        out[f"trtllm-{role}.yaml"] = cfg
    pre = [s for s in servers if s.role == "prefill"]
    dec = [s for s in servers if s.role == "decode"]
    out["disagg-config.yaml"] = {
        "hostname": LISTEN,
        "port": 8000,
        "backend": "pytorch",
        "context_servers": {"num_instances": len(pre), "urls": [f"{s.host}:{s.port}" for s in pre]},
        "generation_servers": {
            "num_instances": len(dec),
            "urls": [f"{s.host}:{s.port}" for s in dec],
        },
    }
    return out


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
    if engine not in c.ENGINES:
        raise StudioError(f"engine '{engine}' is not supported; allowed: {', '.join(c.ENGINES)}")
    model, notes = c.model_path(project, model_path)
    if engine == "trtllm" and any(
        s.vendor != "nvidia"
        for s in project.cluster.gpu_specs.values()
        if s.id in set(result.prefill.gpu_types + result.decode.gpu_types)
    ):
        raise StudioError(
            "TensorRT-LLM disaggregated serving runs on NVIDIA GPUs only; export for vllm or sglang"
        )
    if engine == "vllm" and result.mode.transfer_backend == "ucx":
        notes.append(
            "vLLM reaches UCX through NIXL: the servers use NixlConnector (UCX is NIXL's default transport)."
        )
    recipe = build_recipe(project, result, engine, hosts)
    lines = _header(project, result, engine, model, notes)
    files: dict[str, str] = {}
    if engine == "trtllm":
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
        body.append(_server_command(engine, model, s))
    body.append("\n" + c.comment(["router: send requests here once every server is up"]))
    body.append(_router_command(engine, recipe))
    files[f"{engine}-disagg-commands.sh"] = "".join(body)
    return ExportBundle(files=files, notes=tuple(notes)), recipe


def _header(project: Project, result, engine: str, model: str, notes: list[str]) -> list[str]:
    wl = project.workload
    t = result.transfer
    lines = [
        f"Layout Studio disaggregated export for {c.ENGINE_VERSIONS[engine]}",
        f"Project: {project.name}",
        f"Model: {project.model.name} -> {model}",
        f"Serving: {result.label} = {result.gpus} GPUs (transfer backend {result.mode.transfer_backend})",
        f"Workload: {wl.isl} input + {wl.osl} output tokens",
        f"TTFT {result.ttft_ms:.4g} ms (queue {result.queue_ms:.3g} + prefill {result.prefill_ms:.4g} + KV transfer "
        f"{t.time_ms:.3g}); TPOT {result.tpot_ms:.3g} ms",
        f"KV transfer: {t.bytes_per_request / MIB:,.1f} MiB per request over {t.bottleneck_name or '-'}",
        f"Throughput: {result.output_tokens_per_s:,.0f} output tokens/s ({result.output_tokens_per_s_per_gpu:,.1f} per GPU); "
        f"limited by the {result.limited_by} at {result.saturation_rate_per_s:.3g} req/s",
    ]
    if notes:
        lines.append("Notes:")
        lines += [f"  - {n}" for n in notes]
    return lines


def _server_command(engine: str, model: str, s: Server) -> str:
    head: list[c.Word]
    if engine == "vllm":
        head = ["vllm", "serve", model]
    elif engine == "sglang":
        head = ["python3", "-m", "sglang.launch_server", "--model-path", model]
    else:
        head = ["trtllm-serve", model, "--config", f"trtllm-{s.role}.yaml"]
    flags = [(k, v) for k, v in s.args.items()] + [("--port", s.port)]
    return c.shell_command([head] + c.flag_groups(flags), env=list(s.env))


def _router_command(engine: str, r: DisaggRecipe) -> str:
    a = r.router
    if engine == "vllm":
        head: list[c.Word] = ["python3", str(a["script"])]
        flags = [(k, v) for k, v in a.items() if k != "script"]
        return c.shell_command([head] + c.flag_groups(flags))
    if engine == "sglang":
        groups: list[list] = [["python3", "-m", str(a["module"]), "--pd-disaggregation"]]
        for url, boot in cast("list[tuple[str, int | None]]", a["--prefill"]):
            groups.append(["--prefill", url] + ([boot] if boot is not None else []))
        for url in cast("list[str]", a["--decode"]):
            groups.append(["--decode", url])
        groups += c.flag_groups([("--host", a["--host"]), ("--port", a["--port"])])
        return c.shell_command(groups)
    return c.shell_command([["trtllm-serve", "disaggregated", "-c", str(a["config"])]])
