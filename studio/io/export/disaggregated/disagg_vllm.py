"""vLLM's part of a disaggregated export: ``--kv-transfer-config`` with a KV connector per server,
NIXL side-channel or Mooncake bootstrap ports, and the proxy that joins the pools (NIXL's toy
proxy, or vLLM's Mooncake proxy that forwards the request id and the bootstrap address).

A host-DRAM KV tier (``serving.kv_tiers.host_gib``) extends the prefill workers' prefix cache in the
plan (:mod:`studio.engine.disagg.reuse`); vLLM's ``--kv-offloading-size`` would replace the P/D
connector, so the prefill servers get ``MultiConnector`` with the P/D connector and vLLM's
``OffloadingConnector`` instead (rule ``vllm.disagg.host_tier``)."""

from __future__ import annotations

import json
from typing import cast

from studio.core.project import Project
from studio.core.serving_mode import PoolLayout
from studio.io.export import common as c
from studio.io.export.checks.findings import Finding
from studio.io.export.checks.rules import rules_for
from studio.io.export.checks.safety import host_port
from studio.io.export.checks.startup_rules import rule
from studio.io.export.disaggregated.disagg import (
    LISTEN,
    SIDE_CHANNEL_STRIDE,
    DisaggRecipe,
    Server,
    disagg_rules,
    pool_batch,
)
from studio.io.export.prefix_cache import GIB, host_tier_gib_per_gpu, vllm_workers

HOST_TIER_RULE = "vllm.disagg.host_tier"


def _host_tier_rule(version: str | None):
    """The host-tier rule when it holds for ``version`` (else None)."""
    r = rule(HOST_TIER_RULE)
    return r if r.applies(version) else None


def host_tier_bytes(project: Project, pool: PoolLayout) -> int:
    """``cpu_bytes_to_use`` of one server of ``pool``: the tier's share of each of its GPUs, for all of
    the server's workers (0: no host tier)."""
    per_gpu = host_tier_gib_per_gpu(project)
    return int(per_gpu * vllm_workers(pool.tp, pool.pp) * GIB) if per_gpu > 0 else 0


def _host_tier_note(project: Project, result) -> list[str]:
    if not project.serving.kv_tiers.host_gib:
        return []
    r = rule(HOST_TIER_RULE)
    gib = host_tier_gib_per_gpu(project)
    backend = result.mode.transfer_backend
    if _connector_of(backend) not in r.params["p_d_connectors"]:
        return [f"The host KV tier ({gib:g} GiB per GPU) the plan counts on the prefill workers is not exported: "
                f"vLLM's {_connector_of(backend)} has not been checked beside its OffloadingConnector in a "
                f"MultiConnector, and --kv-offloading-size would replace the P/D connector ({r.cite()})."]
    return [f"The prefill servers keep the plan's host KV tier ({gib:g} GiB per GPU) through "
            f"{r.params['wrapper']}: {_connector_of(backend)} first, then {r.params['connector']} with "
            f"{r.params['size_key']} for the server's workers; the decode servers have none, as in the plan, and "
            f"--kv-offloading-size is not used because vLLM would replace the P/D connector with it ({r.cite()})."]


def _connector_of(backend: str) -> str:
    return str(disagg_rules("vllm")["connectors"][backend]["kv_connector"])


def notes(project: Project, result) -> list[str]:
    """What the vLLM recipe runs differently from the plan, or needs besides vLLM."""
    backend = result.mode.transfer_backend
    tier = _host_tier_note(project, result)
    if backend == "mooncake":
        return tier + [
            "vLLM runs Mooncake with its in-tree MooncakeConnector (vLLM 0.13 and later): each server gets "
            "its own VLLM_MOONCAKE_BOOTSTRAP_PORT, and the router is vLLM's mooncake_connector_proxy.py, which "
            "gives the decode server the prefill server's bootstrap address; install Mooncake's transfer "
            "engine (pip install mooncake-transfer-engine) on every node."
        ]
    if backend == "ucx":
        return tier + ["vLLM reaches UCX through NIXL: the servers use NixlConnector (UCX is NIXL's default transport)."]
    return tier


def ports(rules: dict, role: str, host: str, on_host: int, of_role: int, backend: str
          ) -> tuple[list[tuple[str, str]], int | None, int | None]:
    """Environment, side-channel port and bootstrap port of the ``on_host``-th server on a host."""
    if backend == "mooncake":
        mc = rule("vllm.mooncake.bootstrap_port").params
        port = int(mc["default"]) + int(mc["stride"]) * on_host
        return [(str(mc["env"]), str(port))], port, port if role == "prefill" else None
    side = int(rules["side_channel_port_default"]) + SIDE_CHANNEL_STRIDE * on_host
    return [(rules["side_channel_host_env"], host), (rules["side_channel_port_env"], str(side))], side, None


def engine_args(project: Project, result, role: str, pool: PoolLayout, rules: dict, backend: str,
                bootstrap: int | None) -> dict[str, object]:
    """``vllm serve`` flags of one server."""
    sv, wl = project.serving, project.workload
    kv, _ = c.kv_cache_value(project, rules_for("vllm").kv.emit, "vLLM")
    seqs = pool_batch(result, role)
    conn = rules["connectors"][backend]
    cfg: dict[str, object] = {"kv_connector": conn["kv_connector"], "kv_role": conn[f"{role}_role"]}
    host = _host_tier_rule(rules_for("vllm").release)
    if (role == "prefill" and host is not None and conn["kv_connector"] in host.params["p_d_connectors"]
            and (size := host_tier_bytes(project, pool)) > 0):
        offload = {"kv_connector": host.params["connector"], "kv_role": "kv_both",
                   "kv_connector_extra_config": {host.params["size_key"]: size}}
        cfg = {"kv_connector": host.params["wrapper"], "kv_role": cfg["kv_role"],
               "kv_connector_extra_config": {"connectors": [cfg, offload]}}
    args: dict[str, object] = {
        "--tensor-parallel-size": pool.tp,
        "--pipeline-parallel-size": pool.pp,
        "--max-model-len": wl.isl + wl.osl,
        "--gpu-memory-utilization": sv.gpu_memory_utilization,
        "--kv-cache-dtype": kv,
        "--max-num-seqs": seqs,
        "--max-num-batched-tokens": max(int(sv.max_num_batched_tokens or 8192), seqs),
    }
    if (graphs := c.graph_capture_max("vllm", project, pool.tp, pool.pp)) is not None:
        args["--max-cudagraph-capture-size"] = graphs  # the capture sizes the plan assumed
    if project.model.is_moe:
        args["--enable-expert-parallel"] = pool.ep > 1
    args.update({"--host": LISTEN, rules["flag"]: json.dumps(cfg, separators=(",", ":"))})
    return args


def router(rules: dict, servers: list[Server], backend: str) -> dict[str, object]:
    """The proxy's arguments."""
    pre = [s for s in servers if s.role == "prefill"]
    dec = [s for s in servers if s.role == "decode"]
    if backend == "mooncake":
        return {
            "script": rule("vllm.mooncake.proxy").params["proxy"],
            "--prefill": [(f"http://{host_port(s.host, s.port)}", s.bootstrap_port) for s in pre],
            "--decode": [f"http://{host_port(s.host, s.port)}" for s in dec],
            "--host": LISTEN,
            "--port": int(rules["proxy_port_default"]),
        }
    return {
        "script": rules["proxy"],
        "--host": LISTEN,
        "--port": int(rules["proxy_port_default"]),
        "--prefiller-hosts": [s.host for s in pre],
        "--prefiller-ports": [s.port for s in pre],
        "--decoder-hosts": [s.host for s in dec],
        "--decoder-ports": [s.port for s in dec],
    }


def configs(project: Project, result, rules: dict, servers: list[Server]) -> dict[str, dict]:
    """vLLM takes everything on its command line: no config files."""
    return {}


def server_command(model: str, s: Server) -> str:
    head: list[c.Word] = ["vllm", "serve", model]
    return c.shell_command([head] + c.flag_groups([*s.args.items(), ("--port", s.port)]), env=list(s.env))


def router_command(r: DisaggRecipe) -> str:
    a = r.router
    if "--prefill" in a:
        from studio.io.export.disaggregated.disagg import url_router_groups

        return c.shell_command(url_router_groups(["python3", str(a["script"])], a))
    flags = [(k, v) for k, v in a.items() if k != "script"]
    head: list[c.Word] = ["python3", str(a["script"])]
    return c.shell_command([head] + c.flag_groups(flags))


def check(r: DisaggRecipe, rules: dict, src: str) -> list[Finding]:
    """The vllm disaggregated rules of ``presets/engines/rules.json`` (``engines.vllm.disaggregated``) on ``r``."""
    out: list[Finding] = []
    flag = rules["flag"]
    ranges: dict[str, list[tuple[int, int, str]]] = {}
    for s in r.servers:
        name = f"{s.role} {s.index}"
        try:
            cfg = json.loads(str(s.args.get(flag, "")))
        except json.JSONDecodeError:
            out.append(Finding("error", flag, f"{name}: not a JSON object", src))
            continue
        if not isinstance(cfg, dict) or not cfg.get("kv_connector"):
            out.append(
                Finding(
                    "error",
                    flag,
                    f"{name}: no kv_connector, so the server does not transfer KV",
                    src,
                )
            )
            continue
        if cfg.get("kv_role") not in rules["kv_roles"]:
            out.append(
                Finding(
                    "error",
                    flag,
                    f"{name}: kv_role {cfg.get('kv_role')!r} is not one of "
                    f"{', '.join(rules['kv_roles'])} (vLLM refuses it at start)",
                    src,
                )
            )
        elif (
            s.role == "prefill"
            and cfg["kv_role"] == "kv_consumer"
            or s.role == "decode"
            and cfg["kv_role"] == "kv_producer"
        ):
            out.append(
                Finding(
                    "error",
                    flag,
                    f"{name}: kv_role {cfg['kv_role']} cannot serve the {s.role} side",
                    src,
                )
            )
        if s.side_port is not None and r.backend != "mooncake":
            tp = int(cast(int, s.args.get("--tensor-parallel-size", 1))) * int(
                cast(int, s.args.get("--pipeline-parallel-size", 1))
            )
            ranges.setdefault(s.node, []).append((s.side_port, s.side_port + tp, name))
    for node, spans in ranges.items():
        spans.sort()
        for (a0, a1, an), (b0, _b1, bn) in zip(spans, spans[1:], strict=False):
            if b0 < a1:
                out.append(
                    Finding(
                        "error",
                        rules["side_channel_port_env"],
                        f"{an} (ports {a0}..{a1 - 1}) and {bn} "
                        f"(from {b0}) share NIXL side-channel ports on node {node}",
                        src,
                    )
                )
    a = r.router
    if "--prefill" in a:  # the Mooncake proxy: its own rules (startup.py DISAGG_EVALUATORS)
        return out
    for side in ("prefiller", "decoder"):
        hosts, ports = a.get(f"--{side}-hosts", []), a.get(f"--{side}-ports", [])
        if len(hosts) != len(ports):  # type: ignore[arg-type]
            out.append(
                Finding(
                    "error",
                    f"--{side}-ports",
                    f"{len(hosts)} hosts but {len(ports)} ports "  # type: ignore[arg-type]
                    "(the proxy raises ValueError)",
                    src,
                )
            )
    want = {(s.host, s.port) for s in r.servers}
    lists = {k: cast("list[str | int]", a.get(k, [])) for k in (
        "--prefiller-hosts", "--prefiller-ports", "--decoder-hosts", "--decoder-ports")}
    listed = set(zip(lists["--prefiller-hosts"], lists["--prefiller-ports"], strict=False)) | set(
        zip(lists["--decoder-hosts"], lists["--decoder-ports"], strict=False)
    )
    for host, port in sorted(want - listed, key=str):
        out.append(
            Finding(
                "warning",
                "proxy",
                f"server {host}:{port} is not behind the proxy (it gets no requests)",
                src,
            )
        )
    return out
