"""Typed engine profiles: one serving engine at one version range, as ``presets/engines/*.json`` says.

A profile holds what makes the same layout run differently on vLLM, TensorRT-LLM and SGLang:

* :class:`SchedulerCost` — CPU time of one scheduler iteration against the running sequences, and
  whether it hides behind the GPU step (vLLM V1 async scheduling, SGLang's overlap scheduler,
  TensorRT-LLM's overlap scheduler) or adds to it (vLLM V0, V1 without async scheduling);
* :class:`EngineDefaults` — token budget, max running sequences, chunked prefill, prefix caching
  and the CUDA-graph capture sizes (:class:`GraphSizes`), some of them by GPU memory and TP
  (:class:`Tiered`);
* :class:`MemoryRule` — how the engine sizes its KV cache: a fraction of the device (vLLM), of
  what is free after weights and activations (TensorRT-LLM), or a static fraction computed from a
  reserve (SGLang).

Every value keeps its source (``sources``: dotted field → text) for ``plan --explain``. Parsing
lives in :mod:`studio.engine.runtime.loader`; these classes only compute.
"""

from __future__ import annotations

import bisect
from dataclasses import field, replace
from functools import lru_cache
from typing import Literal

import numpy as np

from studio.engine.runtime.reserves import ReserveRule
from studio.engine.step.records import frozen_result

MemoryMode = Literal["total", "free", "static"]
MoeExchangeKind = Literal["alltoall", "allgather"]


def parse_version(text: str) -> tuple[int, ...]:
    """``"0.6.3.post1"`` → ``(0, 6, 3)``: the leading dotted integers (raises ValueError if none)."""
    parts: list[int] = []
    for piece in text.strip().lstrip("vV").split("."):
        digits = ""
        for ch in piece:
            if not ch.isdigit():
                break
            digits += ch
        if not digits:
            break
        parts.append(int(digits))
        if len(digits) != len(piece):
            break
    if not parts:
        raise ValueError(f"'{text}' is not a version (expected numbers with dots, e.g. 0.6.3)")
    return tuple(parts)


@frozen_result
class Tier:
    """One row of a tiered default: applies below ``below_gib`` of device memory (None = any) or to
    GPUs whose id starts with one of ``gpu_prefixes``; ``value_from_tp`` replaces ``value`` from
    TP ``tp_from`` up."""

    value: float | None
    below_gib: float | None = None
    gpu_prefixes: tuple[str, ...] = ()
    tp_from: int | None = None
    value_from_tp: float | None = None

    def matches(self, gpu_id: str, memory_gib: float) -> bool:
        if self.gpu_prefixes:
            return gpu_id.startswith(self.gpu_prefixes)
        return self.below_gib is None or memory_gib < self.below_gib

    def pick(self, tp: int) -> float | None:
        if self.tp_from is not None and tp >= self.tp_from and self.value_from_tp is not None:
            return self.value_from_tp
        return self.value


@frozen_result
class Tiered:
    """A default that is one value, or the first matching :class:`Tier` for a GPU and TP."""

    tiers: tuple[Tier, ...]

    def at(self, gpu_id: str = "", memory_gib: float = 80.0, tp: int = 1) -> float | None:
        for t in self.tiers:
            if t.matches(gpu_id, memory_gib):
                return t.pick(tp)
        return self.tiers[-1].pick(tp)

    @property
    def constant(self) -> bool:
        return len(self.tiers) == 1 and not self.tiers[0].gpu_prefixes and self.tiers[0].below_gib is None


@frozen_result
class SchedulerCost:
    """CPU time of one scheduler iteration (µs) and how much of it the GPU waits for."""

    cpu_base_us: float
    cpu_per_seq_us: float
    detokenize_per_seq_us: float
    overlap: bool
    exposed_when_overlapped_us: float
    pipeline_per_seq_us: float = 0.0  # host time per running sequence per micro-batch under PP, not hidden

    def cpu_us(self, running: np.ndarray | float) -> np.ndarray:
        """CPU work of an iteration with ``running`` sequences (scheduling, input preparation,
        output processing and detokenisation where the engine does it in the loop)."""
        n = np.asarray(running, dtype=float)
        return self.cpu_base_us + (self.cpu_per_seq_us + self.detokenize_per_seq_us) * n

    def exposed_us(self, running: np.ndarray | float, gpu_us: np.ndarray | float) -> np.ndarray:
        """The part of the CPU work the GPU step does not hide (µs): all of it when the engine
        does not overlap; else a fixed residual plus what outlasts the GPU step."""
        cpu = self.cpu_us(running)
        if not self.overlap:
            return cpu
        gpu = np.asarray(gpu_us, dtype=float)
        return self.exposed_when_overlapped_us + np.maximum(cpu - gpu, 0.0)

    def pipeline_exposed_us(self, running: np.ndarray | float, micro_batches: np.ndarray | float) -> np.ndarray:
        """Host time (µs) a pipeline-parallel round of ``micro_batches`` micro-batch iterations
        adds when the engine's pipeline loop cannot hide its per-request work behind the GPU: each
        micro-batch iteration walks the ``running`` sequences (``pipeline_per_seq_us`` each)."""
        return np.asarray(running, dtype=float) * self.pipeline_per_seq_us * np.asarray(micro_batches, dtype=float)

    @property
    def adds_nothing(self) -> bool:
        return (self.cpu_base_us == 0 and self.cpu_per_seq_us == 0 and self.detokenize_per_seq_us == 0
                and self.exposed_when_overlapped_us == 0 and self.pipeline_per_seq_us == 0)


@frozen_result
class GraphSizes:
    """CUDA-graph capture sizes (decode batches) as ``(start, stop inclusive, step)`` ranges cut
    at ``max``; ``padding``: a batch rounds up to the next captured size (else only exact sizes
    use a graph). Beyond the largest size a batch runs eagerly, unpadded."""

    ranges: tuple[tuple[int, int, int], ...]
    max: Tiered
    padding: bool

    def sizes(self, gpu_id: str = "", memory_gib: float = 80.0, tp: int = 1) -> tuple[int, ...]:
        """The captured sizes for one GPU and TP, ascending."""
        top = self.max.at(gpu_id, memory_gib, tp)
        cap = int(top) if top is not None else 0
        out = sorted({b for a, z, s in self.ranges for b in range(a, z + 1, s) if b <= cap})
        return tuple(out)

    def capped(self, cap: int) -> tuple[int, ...]:
        """The captured sizes when no decode batch can exceed ``cap`` (the batch limit, or the token
        budget if smaller): the sizes up to ``cap``, plus ``cap`` itself when padding is on and a
        listed size lies above it — TensorRT-LLM's ``_filter_cuda_graph_batch_sizes``
        (tensorrt_llm/_torch/pyexecutor/model_engine.py): 'padding to max_cuda_graph_bs is
        acceptable' when the user asked to pad to a larger size."""
        every = self.sizes(memory_gib=0.0)
        kept = tuple(b for b in every if b <= cap)
        if self.padding and cap >= 1 and len(kept) < len(every) and (not kept or kept[-1] < cap):
            kept = (*kept, cap)
        return kept

    @staticmethod
    def padded(decode_seqs: np.ndarray, sizes: tuple[int, ...], padding: bool) -> np.ndarray:
        """Rows the GPU runs for ``decode_seqs`` decoding sequences (fractional means allowed: a
        mean batch pads as its whole part would): the next captured size when ``padding`` and it
        is within the largest, else the batch itself."""
        d = np.asarray(decode_seqs, dtype=float)
        if not padding or not sizes:
            return d
        arr = _size_array(sizes)
        need = np.ceil(d - 1e-9)
        idx = np.searchsorted(arr, need, side="left")
        inside = (d > 0) & (idx < arr.size)
        padded = arr[np.minimum(idx, arr.size - 1)]
        return np.where(inside, np.maximum(padded, d), d)

    @staticmethod
    def next_size(batch: int, sizes: tuple[int, ...]) -> int | None:
        """The captured size a decode batch of ``batch`` runs at, None beyond the largest (eager)."""
        i = bisect.bisect_left(sizes, batch)
        return sizes[i] if i < len(sizes) else None


@frozen_result
class EngineDefaults:
    """The engine's defaults that change a plan's numbers."""

    max_num_batched_tokens: Tiered
    budget_at_least_context: bool  # without chunked prefill the budget is at least one whole context
    chunked_above_context: int | None  # contexts longer than this turn chunked prefill on (vLLM V0) ...
    chunked_budget: int | None  # ... with this budget
    max_num_seqs: Tiered
    chunked_prefill: bool
    prefix_caching: bool
    graphs: GraphSizes
    #: CUDA graphs as the engine's offline benchmark configures them (TensorRT-LLM's trtllm-bench),
    #: capped by :meth:`GraphSizes.capped`; None = the library defaults above under every load
    bench_graphs: GraphSizes | None = None


@frozen_result
class SglangReserve:
    """SGLang's memory reserve behind ``mem_fraction_static`` (MiB terms of server_args.py)."""

    base_mib: float
    per_chunk_token_mib: float
    min_chunk_tokens: float
    per_graph_batch_mib: float
    per_tp_pp_mib: float
    floor_mib_above_60_gib: float

    def reserve_mib(self, chunk_tokens: float, graph_max_bs: float, tp: int, pp: int, memory_gib: float) -> float:
        r = (self.base_mib + max(chunk_tokens, self.min_chunk_tokens) * self.per_chunk_token_mib
             + graph_max_bs * self.per_graph_batch_mib + tp * pp * self.per_tp_pp_mib)
        if memory_gib > 60:
            r = max(r, self.floor_mib_above_60_gib)
        return r


@frozen_result
class MemoryRule:
    """How the engine sizes its KV cache.

    ``total``: KV = fraction × device − (weights + activation peak + runtime) (vLLM);
    ``free``: KV = fraction × (device − weights − activations − runtime) (TensorRT-LLM);
    ``static``: KV = fraction × device − weights − runtime, activations and graphs living in the
    reserve the fraction leaves (SGLang). ``graphs_in_budget``: CUDA-graph memory is taken out
    before the KV cache is sized (else it comes from the margin the fraction leaves).
    """

    mode: MemoryMode
    fraction: float | None  # None: computed from ``reserve``
    graphs_in_budget: bool
    reserve: SglangReserve | None
    reserves: ReserveRule | None = None  # the terms kept out of the KV cache (None: the cost constants')


@frozen_result
class MoeExchange:
    """How the MoE layers of a layout whose expert-parallel group spans attention-DP ranks move
    tokens between those ranks.

    ``alltoall``: each token goes to the ranks holding its experts and comes back (dispatch and
    combine); ``allgather``: every rank gathers every rank's (quantized) tokens and routing before
    its local experts run, and the partial outputs are reduce-scattered back in the activation
    format — TensorRT-LLM 1.0's CUTLASS MoE unless an all-to-all backend applies.
    ``alltoall_gpu_prefixes``: GPUs on which the engine picks its all-to-all anyway (multi-node
    NVLink memory), when the EP group is wider than a token's experts (``alltoall_above_top_k``).
    ``backend``: the engine's default fused-MoE backend (``cutlass``), whose own measured table the
    experts are timed from where the kernel tables time several backends for a format.
    """

    kind: MoeExchangeKind = "alltoall"
    alltoall_gpu_prefixes: tuple[str, ...] = ()
    alltoall_above_top_k: bool = True
    backend: str = ""  # the fused-MoE backend whose own kernel table times the experts ("" = the fastest measured)

    def gathers(self, gpu_id: str, ep: int, top_k: int) -> bool:
        """Whether an EP group of ``ep`` ranks on ``gpu_id`` exchanges by all-gather/reduce-scatter."""
        if self.kind != "allgather":
            return False
        alltoall_here = bool(self.alltoall_gpu_prefixes) and gpu_id.startswith(self.alltoall_gpu_prefixes)
        return not (alltoall_here and (ep > top_k or not self.alltoall_above_top_k))


@frozen_result
class EngineProfile:
    """One engine at one version range."""

    engine: str
    id: str
    label: str
    version_from: tuple[int, ...]
    version_until: tuple[int, ...]
    kernel_engine: str
    kernel_version: str
    scheduler: SchedulerCost
    defaults: EngineDefaults
    memory: MemoryRule
    file: str
    moe: MoeExchange = field(default_factory=MoeExchange)
    #: how many times longer the engine's host (Python) work takes on a GPU's own host CPU than on
    #: the x86 servers its scheduler figures were measured on (``scheduler.host_slowdown``, by GPU
    #: prefix: Grace on GB200); None = 1
    host_slowdown: Tiered | None = None
    sources: dict[str, str] = field(default_factory=dict, compare=False, hash=False)

    def scheduler_on(self, gpu_id: str = "", memory_gib: float = 80.0, tp: int = 1) -> SchedulerCost:
        """The scheduler's host times on ``gpu_id``'s host CPU (scaled by ``host_slowdown``)."""
        f = self.host_slowdown.at(gpu_id, memory_gib, tp) if self.host_slowdown is not None else None
        if not f or f == 1.0:
            return self.scheduler
        s = self.scheduler
        return replace(s, cpu_base_us=s.cpu_base_us * f, cpu_per_seq_us=s.cpu_per_seq_us * f,
                       detokenize_per_seq_us=s.detokenize_per_seq_us * f,
                       exposed_when_overlapped_us=s.exposed_when_overlapped_us * f,
                       pipeline_per_seq_us=s.pipeline_per_seq_us * f)

    def covers(self, version: tuple[int, ...]) -> bool:
        return self.version_from <= version < self.version_until

    @property
    def versions(self) -> str:
        """``"0.8.0 – <0.14.0"``."""
        return f"{_dotted(self.version_from)} – <{_dotted(self.version_until)}"

    def source(self, dotted: str) -> str:
        return self.sources.get(dotted, "")


def _dotted(v: tuple[int, ...]) -> str:
    return ".".join(str(x) for x in v)


@lru_cache(maxsize=64)
def _size_array(sizes: tuple[int, ...]) -> np.ndarray:
    """``sizes`` as a read-only float array, made once per tuple (an engine captures up to ~70 sizes,
    and the iteration model pads every decode micro-batch)."""
    arr = np.asarray(sizes, dtype=float)
    arr.flags.writeable = False
    return arr
