"""TensorRT-LLM's part of a disaggregated export: one ``trtllm-serve`` config per pool (context
servers without the overlap scheduler, ``cache_transceiver_config`` whose buffer holds a whole
sequence) and ``trtllm-serve disaggregated -c disagg-config.yaml``."""

from __future__ import annotations

from studio.core.errors import StudioError
from studio.core.project import Project
from studio.core.serving_mode import PoolLayout
from studio.io.export import common as c
from studio.io.export.checks.findings import Finding
from studio.io.export.checks.rules import rules_for
from studio.io.export.disaggregated.disagg import LISTEN, DisaggRecipe, Server, pool_batch


def notes(project: Project, result) -> list[str]:
    """Refuses GPUs TensorRT-LLM does not run on.

    Raises
    ------
    StudioError
        A pool on non-NVIDIA GPUs.
    """
    used = set(result.prefill.gpu_types + result.decode.gpu_types)
    if any(s.vendor != "nvidia" for s in project.cluster.gpu_specs.values() if s.id in used):
        raise StudioError("TensorRT-LLM disaggregated serving runs on NVIDIA GPUs only; export for vllm or sglang")
    tiers = project.serving.kv_tiers
    if tiers.host_gib or tiers.disk_gib:
        return ["The host / NVMe KV tiers the plan counts on the prefill workers are not exported: TensorRT-LLM's "
                "KV offloading beside its cache transceiver has not been checked against its code; the context "
                "servers run on HBM alone, so prefix hits past HBM are recomputed. Export for vllm or sglang to keep "
                "the host tier."]
    return []


def ports(rules: dict, role: str, host: str, on_host: int, of_role: int, backend: str
          ) -> tuple[list[tuple[str, str]], int | None, int | None]:
    return [], None, None


def engine_args(project: Project, result, role: str, pool: PoolLayout, rules: dict, backend: str,
                bootstrap: int | None) -> dict[str, object]:
    return {"--host": LISTEN}  # everything else is in the pool's config file


def router(rules: dict, servers: list[Server], backend: str) -> dict[str, object]:
    return {"config": "disagg-config.yaml"}


def configs(
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
                "max_batch_size": pool_batch(result, role),
                "max_num_tokens": budget,
                "max_seq_len": wl.isl + wl.osl,
                "enable_chunked_prefill": True,
                "kv_cache_config": {
                    "free_gpu_memory_fraction": sv.gpu_memory_utilization,
                    "dtype": kv,
                },
            }
        )
        if (graphs := c.graph_capture_max("trtllm", project, pool.tp, pool.pp)) is not None:
            cfg["cuda_graph_config"] = {"max_batch_size": graphs}  # the capture sizes the plan assumed
        if role == "prefill" and rules.get("context_disable_overlap_scheduler"):
            cfg["disable_overlap_scheduler"] = True
        # a whole sequence's KV must fit the transfer buffer (startup rule trtllm.disagg.buffer)
        cfg["cache_transceiver_config"] = {"backend": backend, "max_tokens_in_buffer": wl.isl + wl.osl}
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


def server_command(model: str, s: Server) -> str:
    head: list[c.Word] = ["trtllm-serve", model, "--config", f"trtllm-{s.role}.yaml"]
    return c.shell_command([head] + c.flag_groups([*s.args.items(), ("--port", s.port)]), env=list(s.env))


def router_command(r: DisaggRecipe) -> str:
    return c.shell_command([["trtllm-serve", "disaggregated", "-c", str(r.router["config"])]])


def check(r: DisaggRecipe, rules: dict, src: str) -> list[Finding]:
    """The trtllm disaggregated rules of ``presets/engines/rules.json`` (``engines.trtllm.disaggregated``) on ``r``."""
    out: list[Finding] = []
    for name in ("trtllm-prefill.yaml", "trtllm-decode.yaml"):
        cfg = r.configs.get(name, {})
        ctc = cfg.get("cache_transceiver_config") or {}
        if ctc.get("backend") not in rules["allowed_backends"]:
            out.append(
                Finding(
                    "error",
                    f"{name}: cache_transceiver_config.backend",
                    f"{ctc.get('backend')!r} is not one of {', '.join(rules['allowed_backends'])}",
                    src,
                )
            )
    pre = r.configs.get("trtllm-prefill.yaml", {})
    if rules.get("context_disable_overlap_scheduler") and not pre.get("disable_overlap_scheduler"):
        out.append(
            Finding(
                "error",
                "trtllm-prefill.yaml: disable_overlap_scheduler",
                "context servers run without the overlap scheduler",
                src,
            )
        )
    dis = r.configs.get("disagg-config.yaml", {})
    for section in ("context_servers", "generation_servers"):
        sec = dis.get(section) or {}
        urls = list(sec.get("urls") or [])
        n = sec.get("num_instances", 1)
        if len(urls) != n:
            out.append(
                Finding(
                    "error",
                    f"disagg-config.yaml: {section}",
                    f"{len(urls)} urls for num_instances {n} (ValueError at start)",
                    src,
                )
            )
        seen: set[str] = set()
        for u in urls:
            if len(str(u).split(":")) != 2:
                out.append(
                    Finding(
                        "error",
                        f"disagg-config.yaml: {section}.urls",
                        f"{u!r} is not host:port "
                        "(an IPv6 address cannot be written here; use a host name)",
                        src,
                    )
                )
            if u in seen:
                out.append(
                    Finding(
                        "error", f"disagg-config.yaml: {section}.urls", f"{u} is listed twice", src
                    )
                )
            seen.add(u)
    return out
