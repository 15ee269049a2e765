"""Prefix caching and the KV tiers of a plan (``serving.kv_tiers``) in each engine's own keys, only
where the engine version accepts them (``prefix_cache``, ``kv_host_tier`` and ``kv_disk_tier`` of
``features`` in ``presets/engines/rules.json``, each with the version and file it was read from).

Sizes follow each engine's unit: vLLM ``kv-offloading-size`` is GiB for the whole engine, which its
CPU offloading spec splits over every worker of the engine (``parallel_config.world_size``: TP × PP ×
prefill CP; ``vllm/v1/kv_offload/cpu/spec.py`` and ``vllm/config/parallel.py:964`` of the 0.33.0
wheel — its help text says "summed across all TP ranks", which holds at PP 1 only), TensorRT-LLM
``host_cache_size`` bytes per rank, SGLang ``hicache-size`` GB per rank. The project's tier is GiB
per node, split over the node's GPUs.
"""

from __future__ import annotations

from studio.core.errors import StudioError
from studio.core.project import Project
from studio.io.export.features import _entry, _put

GIB = 1024**3


def _per_gpu_gib(project: Project, gib: float) -> float:
    per_node = max((len(n.gpus) for n in project.cluster.nodes), default=1)
    return gib / max(per_node, 1)


def vllm_workers(tp: int, pp: int, pcp: int = 1) -> int:
    """Workers of one vLLM engine, over which its offloading buffer is split (TP × PP × prefill CP)."""
    return tp * pp * pcp


def sglang_hicache_gb(per_gpu_gib: float) -> int:
    """SGLang ``hicache-size`` (whole GB per rank, at least 1) of a tier's share of one GPU."""
    return max(1, int(per_gpu_gib * GIB / 1e9))


def host_tier_gib_per_gpu(project: Project) -> float:
    """The project's host-DRAM KV tier per GPU, GiB (0: none)."""
    host = project.serving.kv_tiers.host_gib
    return _per_gpu_gib(project, host) if host else 0.0


def _check_offload(project: Project, host_gib: float, size: float, key: str) -> None:
    """Refuse a project whose older ``features.kv_offload_gib`` asks vLLM for another offloading size
    than its host KV tier (both write ``key``; the tier is the one the plan's figures count)."""
    old = project.serving.features.kv_offload_gib
    if old is not None and abs(old - size) > 1e-3 * max(size, 1.0):
        raise StudioError(
            f"serving.features.kv_offload_gib ({old:g} GiB) and serving.kv_tiers.host_gib ({host_gib:g} GiB per "
            f"node, {size:g} GiB for this vLLM server) both set vLLM {key} and differ; the host KV tier is the one "
            "the plan counts: clear serving.features.kv_offload_gib, or set the tier to the size you want",
            field="kv_offload_gib")


def apply_prefix_cache(engine: str, label: str, version: str | None, project: Project,
                       cfg: dict[str, object]) -> list[str]:
    """Write prefix caching and the host / NVMe KV tiers into ``cfg`` (in place); returns notes on
    what the engine version does not accept and so was left out."""
    t = project.serving.kv_tiers
    notes: list[str] = []
    if t.prefix_cache is not None and (e := _entry("prefix_cache", engine, version, label, notes)):
        _put(cfg, str(e["key"]), t.prefix_cache if e["writes"] == "on" else not t.prefix_cache)
    ranks = vllm_workers(project.layout.tp, project.layout.pp, project.layout.cp if project.layout.cp_mode == "prefill" else 1)
    if t.host_gib and (e := _entry("kv_host_tier", engine, version, label, notes)):
        per_gpu = host_tier_gib_per_gpu(project)
        if engine == "vllm":
            size = round(per_gpu * ranks, 3)
            _check_offload(project, t.host_gib, size, str(e["key"]))
            _put(cfg, str(e["key"]), size)
            _put(cfg, str(e["backend_key"]), str(e["backend"]))
        elif engine == "trtllm":
            _put(cfg, str(e["key"]), int(per_gpu * GIB))
        else:
            _put(cfg, str(e["enable_key"]), True)
            _put(cfg, str(e["key"]), sglang_hicache_gb(per_gpu))
    if t.disk_gib and (e := _entry("kv_disk_tier", engine, version, label, notes)):
        _put(cfg, str(e["key"]), int(_per_gpu_gib(project, t.disk_gib) * GIB))
        if "rule" in e:  # TensorRT-LLM: the path and the KV cache manager the tier needs (rule trtllm.kv.disk_tier)
            from studio.io.export.checks.startup_rules import startup_rules

            r = startup_rules()[str(e["rule"])]
            _put(cfg, str(r.params["path_key"]), str(r.params["path"]))
            _put(cfg, str(r.params["v2_key"]), True)
            notes.append(f"{label} NVMe KV tier: {e['key']} with {r.params['path_key']} {r.params['path']}, which the "
                         f"recipe creates on every node (mkdir -p): point it at the node's local NVMe mount; and "
                         f"{r.params['v2_key']} true, since only KV cache manager v2 uses the disk tier (a prototype "
                         f"setting in this version) [{r.cite()}].")
        else:
            notes.append(f"{label}: set {e['path_key']} to a directory on the node's local NVMe; the NVMe KV tier "
                         "needs it and the plan cannot know the mount point.")
    return notes


def disk_dir(cfg: dict[str, object], engine: str) -> str | None:
    """The NVMe KV directory ``cfg`` names (TensorRT-LLM's ``disk_cache_path``), which a recipe creates on
    every node before it starts the server; ``None`` without one."""
    from studio.io.export.features import feature_rules

    e = feature_rules().get("kv_disk_tier", {}).get(engine)
    if not isinstance(e, dict) or "path_key" not in e:
        return None
    node: object = cfg
    for part in str(e["path_key"]).split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return node if isinstance(node, str) and node else None
