"""Project → costs: the one place a project's layout becomes the step model's costs.

:func:`project_costs` reads what the costs depend on from the project — the model and its layer
table, the precision served, the KV-cache dtype, the memory fraction and how the runtime reads it
(:func:`kv_fraction_of_free`), the batch limit, the token budget (:func:`project_budget`) and the
drafter of speculative decoding — and builds :class:`~studio.engine.step.costing.LayoutCosts`.
The plan (:func:`studio.engine.plan.evaluate.evaluate`), serving under load, the sweep and both
pools of a disaggregated plan all call it, so they cost the same layout the same way.
"""

from __future__ import annotations

from collections import OrderedDict

from studio.core.architecture import LLMArchitecture
from studio.core.layout import Layout
from studio.core.project import Project
from studio.core.workload import ServingConfig
from studio.engine.fabric.topology import Topology
from studio.engine.kv_tiers.prefix_cache import PrefixCacheEstimate
from studio.engine.serving.trtllm_bench import token_budget
from studio.engine.step.constants import Constants
from studio.engine.step.costing import LayoutCosts, layout_costs
from studio.engine.step.identity_cache import cached_by_identity
from studio.engine.step.shapes import LayerTable, layer_table
from studio.engine.step.speculative import with_drafter

_TABLES: OrderedDict[int, tuple[LLMArchitecture, LayerTable]] = OrderedDict()


def cached_layer_table(model: LLMArchitecture) -> LayerTable:
    """Per-layer table of ``model``, cached by object identity (small LRU)."""
    return cached_by_identity(_TABLES, model, 16, layer_table)


def kv_fraction_of_free(serving: ServingConfig) -> bool:
    """Whether ``gpu_memory_utilization`` is a fraction of the memory left free after weights,
    activations and runtime (TensorRT-LLM's ``kv_cache_free_gpu_mem_fraction``, its profile's
    ``memory.mode`` 'free') rather than of the device memory (vLLM, SGLang)."""
    from studio.engine.runtime.loader import resolve

    return resolve(serving.runtime, serving.runtime_version).profile.memory.mode == "free"


def project_batch_limit(project: Project, layout: Layout, max_batch: int | None = None) -> int:
    """Running sequences one replica of ``layout`` may hold: the workload's (or a pool's) limit and
    the engine's ``max_num_seqs`` / ``max_batch_size``, whichever is smaller."""
    from studio.engine.runtime.setup import batch_limit, engine_setup

    limit = project.workload.max_batch if max_batch is None else max_batch
    return batch_limit(limit, engine_setup(project, layout.tp, layout.pp))


def project_budget(project: Project, layout: Layout, c: Constants) -> int:
    """The token budget one iteration of ``layout`` carries for ``project`` (see
    :func:`studio.engine.serving.trtllm_bench.token_budget`)."""
    from studio.engine.runtime.setup import engine_setup

    return token_budget(project, layout.tp, layout.pp, engine_setup(project, layout.tp, layout.pp).token_budget)


def project_costs(
    project: Project,
    layout: Layout,
    placement: tuple[str, ...],
    topo: Topology,
    c: Constants,
    *,
    replicas: list[int] | None = None,
    max_batch: int | None = None,
) -> LayoutCosts:
    """Batch-independent costs of ``layout`` on ``placement`` for ``project``.

    ``replicas`` limits the DP replicas whose links are costed (the sweep samples a few);
    ``max_batch`` replaces the workload's batch limit (a disaggregated pool's own).

    Raises
    ------
    StudioError
        If two GPUs of a group are not linked, or the project's speculative decoding cannot run
        on this model.
    """
    from studio.engine.features.effects import feature_constants, with_features
    from studio.engine.runtime.setup import engine_setup

    model, sv = project.model, project.serving
    precision = sv.effective_precision(model.precision)
    engine = engine_setup(project, layout.tp, layout.pp)
    batch_limit = project_batch_limit(project, layout, max_batch)
    free = engine.memory_mode == "free"
    c_moe = feature_constants(project, layout, c)  # c itself unless a routing skew is set
    lc = layout_costs(model, cached_layer_table(model), precision, sv.kv_dtype, layout, placement, topo, c_moe,
                      sv.gpu_memory_utilization, batch_limit, replicas=replicas, fraction_of_free=free,
                      token_budget=project_budget(project, layout, c), engine=engine)
    if sv.speculative is not None:
        lc = with_drafter(lc, model, sv.speculative, precision, sv.kv_dtype, topo, c_moe,
                          sv.gpu_memory_utilization, batch_limit, replicas, free)
    return with_features(project, layout, lc, topo, c)  # lc itself with every feature off


def prefix_reuse(project: Project, layout: Layout, cap_tokens: int, kv_bytes_per_token: float, batch: int,
                 request_ms: float) -> PrefixCacheEstimate | None:
    """What prefix caching does to one replica of ``layout`` (None when caching is off or nothing
    repeats, so the plan's figures stay exactly those without it): the LRU's hits over the HBM left
    by ``batch`` running requests and the host / NVMe tiers, at the rate ``batch`` users reach when
    each request takes ``request_ms`` plus the think time between turns. Hits are counted in the
    runtime's whole KV blocks; with prefix-aware routing each replica re-reads its share of the
    documents."""
    from studio.engine.kv_tiers.prefix_cache import estimate
    from studio.engine.kv_tiers.tiers import block_tokens, prefix_cache_on, tier_tokens

    if not prefix_cache_on(project):
        return None
    wl = project.workload
    gpus = layout.tp * layout.pp
    host, disk = tier_tokens(project, gpus, kv_bytes_per_token)
    running = batch * (wl.isl + wl.osl) - (batch - 1) * wl.reuse.system_prompt_tokens
    latency_s = request_ms / 1e3
    if wl.load.mode == "rate" and wl.load.rate_per_s:
        rate = wl.load.rate_per_s / max(layout.replicas, 1)
    else:
        rate = batch / max(latency_s + wl.reuse.think_time_s, 1e-9)
    return estimate(wl.reuse, float(wl.isl), float(wl.osl), rate_per_s=rate, latency_s=latency_s,
                    capacity_tokens=(max(cap_tokens - running, 0.0), host, disk),
                    block_tokens=block_tokens(project.serving.runtime),
                    documents=wl.reuse.documents / max(layout.replicas, 1) if project.serving.kv_tiers.prefix_routing
                    else None,
                    running=float(batch))


def with_prefix_load(project: Project, layout: Layout, lc: LayoutCosts, prefix: PrefixCacheEstimate) -> LayoutCosts:
    """``lc`` carrying what ``prefix``'s hits do to every iteration of one replica of ``layout``: the
    computed suffix attends to the cached prefix, and the hits held in host memory / on NVMe are
    loaded over the replica's links, behind the prefill or before it as the runtime does
    (:func:`studio.engine.kv_tiers.tiers.load_overlaps`)."""
    from studio.engine.kv_tiers.prefix_cache import prefix_load
    from studio.engine.kv_tiers.tiers import load_gbps, load_overlaps

    sv = project.serving
    kv = project.model.kv_bytes_per_token(sv.kv_dtype)
    gbps = load_gbps(layout.tp * layout.pp, sv.kv_tiers.host_link_gbps)
    return lc.replace(prefix=prefix_load(prefix, kv, gbps, load_overlaps(sv.runtime)))
