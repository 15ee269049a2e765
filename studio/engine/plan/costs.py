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
    activations and runtime (TensorRT-LLM's ``kv_cache_free_gpu_mem_fraction``) rather than of
    the device memory (vLLM, SGLang)."""
    return serving.runtime == "trtllm"


def project_budget(project: Project, layout: Layout, c: Constants) -> int:
    """The token budget one iteration of ``layout`` carries for ``project`` (see
    :func:`studio.engine.serving.trtllm_bench.token_budget`)."""
    return token_budget(project, layout.tp, layout.pp, int(c.max_num_batched_tokens))


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
    model, sv = project.model, project.serving
    precision = sv.effective_precision(model.precision)
    batch_limit = project.workload.max_batch if max_batch is None else max_batch
    free = kv_fraction_of_free(sv)
    lc = layout_costs(model, cached_layer_table(model), precision, sv.kv_dtype, layout, placement, topo, c,
                      sv.gpu_memory_utilization, batch_limit, replicas=replicas, fraction_of_free=free,
                      token_budget=project_budget(project, layout, c))
    if sv.speculative is None:
        return lc
    return with_drafter(lc, model, sv.speculative, precision, sv.kv_dtype, topo, c,
                        sv.gpu_memory_utilization, batch_limit, replicas, free)
