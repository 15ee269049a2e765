"""KV-cache tiers of one replica: what each engine turns on by default, how many tokens host DRAM
and NVMe hold for a replica, and the links a hit is loaded over.

Defaults, with their sources:

* vLLM: automatic prefix caching is on by default in the V1 engine (vLLM docs, "Automatic Prefix
  Caching"; ``--enable-prefix-caching`` / ``--no-enable-prefix-caching``).
* SGLang: the radix cache is on unless ``--disable-radix-cache`` (SGLang server arguments docs).
* TensorRT-LLM: ``KvCacheConfig.enable_block_reuse`` defaults to True (TensorRT-LLM LLM API
  reference, ``KvCacheConfig``).

Granularity of a hit and how a hit's load meets the prefill, per runtime:

* A hit is counted in whole KV blocks and never covers the last prompt token (the engine must
  compute at least one token to produce logits): vLLM's blocks hold 16 tokens by default (vLLM
  ``CacheConfig.block_size``; the vLLM blog "Inside vLLM's New KV Offloading Connector", Jan 2026:
  "by default 16 tokens per block"), SGLang's radix cache matches single tokens (``--page-size``
  default 1, SGLang server arguments), TensorRT-LLM's blocks hold 32 (``KvCacheConfig.tokens_per_block``
  default 32, TensorRT-LLM ``llmapi/llm_args.py``).
* vLLM's offloading / LMCache connectors load a request's hit before the scheduler computes it (the
  request waits in ``WAITING_FOR_REMOTE_KVS``), and TensorRT-LLM onboards host blocks into the GPU
  pool before the context step that reuses them: the load adds to the iteration. SGLang's HiCache
  loads host blocks layer by layer while the forward pass runs (LMSYS blog "SGLang HiCache", Sep
  2025: compute-transfer overlap), so only a load longer than the compute shows.

Link figures: PCIe 5.0 x16 carries 32 GT/s × 16 lanes ≈ 63 GB/s per direction (PCI-SIG PCIe 5.0
specification); one PCIe Gen4 x4 data-centre NVMe drive reads ~7 GB/s sequentially (e.g. Samsung
PM1733 data sheet: 7,000 MB/s). Each GPU of a replica loads its own KV shard over its own host link.
"""

from __future__ import annotations

from studio.core.project import Project

GIB = 1024**3

#: Tokens per KV block, the unit a prefix-cache hit is counted in (sources above).
BLOCK_TOKENS: dict[str, int] = {"vllm": 16, "sglang": 1, "trtllm": 32}
#: Whether the runtime hides a host / NVMe load behind the prefill layer by layer (sources above).
LOAD_OVERLAPS: dict[str, bool] = {"vllm": False, "trtllm": False, "sglang": True}
#: Share of a host link's line rate a DMA copy of KV blocks reaches: PCIe's packet and flow-control
#: overhead, the 0.80 this project uses for PCIe Gen5 DMA under one switch (presets/links.json,
#: pcie-gen5-switch); the vLLM offloading post measures ~50 GB/s one way on H100's 63 GB/s link.
HOST_DMA_EFFICIENCY = 0.80

#: Automatic prefix caching on by default, per runtime (sources above).
DEFAULT_ON: dict[str, bool] = {"vllm": True, "sglang": True, "trtllm": True}

#: Host-to-GPU bandwidth per GPU over PCIe 5.0 x16, GB/s (PCI-SIG PCIe 5.0: 32 GT/s × 16 lanes).
PCIE5_X16_GBPS = 63.0
#: Sequential read of one data-centre NVMe drive, GB/s (Samsung PM1733 data sheet, 7,000 MB/s).
NVME_READ_GBPS = 7.0


def block_tokens(runtime: str) -> int:
    """Tokens per KV block of ``runtime`` (1 for an unknown one: hits counted per token)."""
    return BLOCK_TOKENS.get(runtime, 1)


def load_overlaps(runtime: str) -> bool:
    """Whether ``runtime`` hides a host / NVMe hit's load behind the prefill (False: it adds)."""
    return LOAD_OVERLAPS.get(runtime, False)


def prefix_cache_on(project: Project) -> bool:
    """Whether the project's engine caches prefixes and its workload reuses any."""
    on = project.serving.kv_tiers.prefix_cache
    if on is None:
        on = DEFAULT_ON.get(project.serving.runtime, False)
    return bool(on) and project.workload.reuse.active


def tier_tokens(project: Project, gpus: int, kv_bytes_per_token: float) -> tuple[float, float]:
    """Tokens of KV the host-DRAM and NVMe tiers hold for one replica of ``gpus`` GPUs: the node's
    tiers split over the replicas that share its GPUs."""
    per_node = max((len(n.gpus) for n in project.cluster.nodes), default=1)
    share = gpus / max(per_node, 1)
    t = project.serving.kv_tiers
    to_tokens = GIB * share / max(kv_bytes_per_token, 1.0)
    return t.host_gib * to_tokens, t.disk_gib * to_tokens


def link_gbps(gpus: int, host_gbps: float | None = None) -> tuple[float, float]:
    """Host-memory and NVMe read bandwidth of one replica, GB/s: every GPU loads its shard over its
    own link (``host_gbps`` each, PCIe 5.0 x16 when not given), from one NVMe drive per GPU (a DGX H100 holds eight 3.84 TB U.2 data drives for eight
    GPUs, NVIDIA DGX H100 user guide)."""
    return (host_gbps or PCIE5_X16_GBPS) * gpus, NVME_READ_GBPS * gpus


def load_gbps(gpus: int, host_gbps: float | None = None) -> tuple[float, float]:
    """What a KV load reaches over :func:`link_gbps`: the host link at :data:`HOST_DMA_EFFICIENCY`
    of its line rate, NVMe at its data sheet's sequential read (already a measured rate)."""
    host, disk = link_gbps(gpus, host_gbps)
    return host * HOST_DMA_EFFICIENCY, disk
