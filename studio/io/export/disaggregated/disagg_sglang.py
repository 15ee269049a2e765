"""SGLang's part of a disaggregated export: ``--disaggregation-mode prefill|decode``, the transfer
backend, one bootstrap port per prefill server on a host, and ``sglang_router --pd-disaggregation``.

A host-DRAM KV tier (``serving.kv_tiers.host_gib``), which the plan counts on the prefill workers
(:mod:`studio.engine.disagg.reuse`), is the prefill servers' HiCache (``--enable-hierarchical-cache
--hicache-size``, GB per rank, as an aggregated SGLang export writes it); decode servers run without a
radix cache in SGLang's PD mode, so they get none (rule ``sglang.disagg.hicache_prefill``)."""

from __future__ import annotations

from typing import cast

from studio.core.errors import StudioError
from studio.core.project import Project
from studio.core.serving_mode import PoolLayout
from studio.io.export import common as c
from studio.io.export.checks.findings import Finding
from studio.io.export.checks.rules import rules_for
from studio.io.export.checks.safety import host_port
from studio.io.export.disaggregated.disagg import (
    LISTEN,
    DisaggRecipe,
    Server,
    pool_batch,
    url_router_groups,
)

HICACHE_RULE = "sglang.disagg.hicache_prefill"


def _hicache_entry(project: Project) -> dict | None:
    """SGLang's host-tier setting when the project has a host tier and the exported version takes
    it on disaggregated prefill servers (else None)."""
    from studio.io.export.checks.startup_rules import rule
    from studio.io.export.features import _entry
    from studio.io.export.prefix_cache import host_tier_gib_per_gpu

    version = rules_for("sglang").release
    if host_tier_gib_per_gpu(project) <= 0 or not rule(HICACHE_RULE).applies(version):
        return None
    return _entry("kv_host_tier", "sglang", version, "SGLang", [])


def _hicache_gb(project: Project) -> int:
    """``--hicache-size``: the tier's share of one GPU, GB per rank (as an aggregated export writes it)."""
    from studio.io.export.prefix_cache import host_tier_gib_per_gpu, sglang_hicache_gb

    return sglang_hicache_gb(host_tier_gib_per_gpu(project))


def _hicache_flags(project: Project) -> dict[str, object]:
    """The prefill servers' HiCache flags (empty: no host tier)."""
    e = _hicache_entry(project)
    if e is None:
        return {}
    return {"--" + str(e["enable_key"]): True, "--" + str(e["key"]): _hicache_gb(project)}


def notes(project: Project, result) -> list[str]:
    """The host KV tier, where the plan counts it."""
    if _hicache_entry(project) is None:
        return []
    from studio.io.export.checks.startup_rules import rule

    return [f"The prefill servers keep the plan's host KV tier as SGLang HiCache ({_hicache_gb(project)} GB per "
            f"rank); the decode servers have none, as in the plan: SGLang runs them without a radix cache "
            f"({rule(HICACHE_RULE).cite()})."]


def ports(rules: dict, role: str, host: str, on_host: int, of_role: int, backend: str
          ) -> tuple[list[tuple[str, str]], int | None, int | None]:
    boot = int(rules["bootstrap_port_default"]) + of_role if role == "prefill" else None
    return [], None, boot


def engine_args(project: Project, result, role: str, pool: PoolLayout, rules: dict, backend: str,
                bootstrap: int | None) -> dict[str, object]:
    """``sglang.launch_server`` flags of one server.

    Raises
    ------
    StudioError
        A transfer backend SGLang has no disaggregation for.
    """
    if backend not in rules["backends"]:
        raise StudioError(
            f"serving_mode.transfer_backend '{backend}' is not an SGLang disaggregation backend; "
            f"allowed: {', '.join(rules['backends'])}"
        )
    sv, wl = project.serving, project.workload
    kv, _ = c.kv_cache_value(project, rules_for("sglang").kv.emit, "SGLang")
    args: dict[str, object] = {
        "--tp-size": pool.tp,
        "--pp-size": pool.pp,
        "--context-length": wl.isl + wl.osl,
        "--mem-fraction-static": sv.gpu_memory_utilization,
        "--kv-cache-dtype": kv,
        "--max-running-requests": pool_batch(result, role),
        "--chunked-prefill-size": int(sv.max_num_batched_tokens or 8192),
    }
    if (graphs := c.graph_capture_max("sglang", project, pool.tp, pool.pp)) is not None:
        args["--cuda-graph-max-bs-decode"] = graphs  # the capture sizes the plan assumed
    if pool.ep > 1:
        args["--ep-size"] = pool.ep
    args.update({"--host": LISTEN, rules["mode_flag"]: role, rules["backend_flag"]: rules["backends"][backend]})
    if bootstrap is not None:
        args[rules["bootstrap_flag"]] = bootstrap
    if role == "prefill":
        args.update(_hicache_flags(project))
    ib = project.serving.features.ib_device
    if ib:
        from studio.io.export.features import feature_rules

        args["--" + str(feature_rules()["ib_device"]["sglang"]["key"])] = ib
    return args


def router(rules: dict, servers: list[Server], backend: str) -> dict[str, object]:
    pre = [s for s in servers if s.role == "prefill"]
    dec = [s for s in servers if s.role == "decode"]
    return {
        "module": rules["router"],
        "--prefill": [(f"http://{host_port(s.host, s.port)}", s.bootstrap_port) for s in pre],
        "--decode": [f"http://{host_port(s.host, s.port)}" for s in dec],
        "--host": LISTEN,
        "--port": int(rules["router_port_default"]),
    }


def configs(project: Project, result, rules: dict, servers: list[Server]) -> dict[str, dict]:
    return {}


def server_command(model: str, s: Server) -> str:
    head: list[c.Word] = ["python3", "-m", "sglang.launch_server", "--model-path", model]
    return c.shell_command([head] + c.flag_groups([*s.args.items(), ("--port", s.port)]), env=list(s.env))


def router_command(r: DisaggRecipe) -> str:
    a = r.router
    return c.shell_command(url_router_groups(["python3", "-m", str(a["module"]), "--pd-disaggregation"], a))


def check(r: DisaggRecipe, rules: dict, src: str) -> list[Finding]:
    """The sglang disaggregated rules of ``presets/engines/rules.json`` (``engines.sglang.disaggregated``) on ``r``."""
    out: list[Finding] = []
    boots: dict[tuple[str, int], str] = {}
    for s in r.servers:
        name = f"{s.role} {s.index}"
        mode = s.args.get(rules["mode_flag"])
        if mode not in ("prefill", "decode") or mode != s.role:
            out.append(
                Finding(
                    "error",
                    rules["mode_flag"],
                    f"{name}: {mode!r}; the {s.role} server needs '{s.role}'",
                    src,
                )
            )
        backend = s.args.get(rules["backend_flag"])
        if backend not in rules["backends"].values():
            out.append(
                Finding(
                    "error",
                    rules["backend_flag"],
                    f"{name}: {backend!r} is not one of {', '.join(rules['backends'].values())}",
                    src,
                )
            )
        if s.role == "prefill":
            port = int(cast(int, s.args.get(rules["bootstrap_flag"], rules["bootstrap_port_default"])))
            other = boots.get((s.node, port))
            if other:
                out.append(
                    Finding(
                        "error",
                        rules["bootstrap_flag"],
                        f"{name} and {other} share bootstrap port {port} on {s.host}",
                        src,
                    )
                )
            boots[(s.node, port)] = name
    pre = {u for u, _ in cast("list[tuple[str, int | None]]", r.router.get("--prefill", []))}
    dec = set(cast("list[str]", r.router.get("--decode", [])))
    from studio.io.export.checks.safety import host_port

    for s in r.servers:
        url = f"http://{host_port(s.host, s.port)}"
        if url not in (pre if s.role == "prefill" else dec):
            out.append(
                Finding(
                    "warning",
                    "router",
                    f"{s.role} {s.index} ({url}) is not given to the router",
                    src,
                )
            )
    return out
