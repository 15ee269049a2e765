"""Engine exports: turn a plan into what vLLM, TensorRT-LLM or SGLang (or a Kubernetes cluster)
runs.

Use :func:`export_plan`; it returns an :class:`ExportBundle` of files (name → text), the notes on
what the engine cannot express, and the nearest layout it runs instead. Pure Python, no Qt.
"""

from __future__ import annotations

from collections.abc import Sequence

from studio.core.errors import StudioError
from studio.core.project import Project
from studio.engine.plan.results import PlanResult
from studio.io.export.checks.rules import rules_for
from studio.io.export.common import ENGINE_VERSIONS, ENGINES, FORMATS, EngineRecipe, ExportBundle
from studio.io.export.engines import ENGINE_FORMATS, ENGINE_LABELS, FORMAT_LABELS, engine_specs

__all__ = ["ENGINES", "ENGINE_FORMATS", "ENGINE_LABELS", "ENGINE_VERSIONS", "FORMATS", "FORMAT_LABELS",
           "EngineRecipe", "ExportBundle", "export_plan"]


def export_plan(
    project: Project,
    plan: PlanResult,
    *,
    engine: str,
    fmt: str = "command",
    model_path: str | None = None,
    hosts: Sequence[str] | None = None,
    slurm_nodes: Sequence[str] | None = None,
    notes: Sequence[str] = (),
) -> ExportBundle:
    """Export ``plan`` of ``project`` for ``engine`` in format ``fmt``.

    Parameters
    ----------
    project:
        The project the plan was computed for (model, cluster, workload, serving choices).
    plan:
        The engine's result for the layout to export (``plan.layout`` is exported).
    engine:
        ``"vllm"``, ``"trtllm"`` or ``"sglang"``.
    fmt:
        ``"command"`` (commands to paste), ``"yaml"`` (engine config file plus short commands),
        ``"script"`` (one bash script, ``launch.sh NODE_INDEX [RECIPE]``) or ``"k8s"`` (a
        LeaderWorkerSet manifest; vLLM and SGLang only).
    model_path:
        Checkpoint folder or Hugging Face id; default the model's Hugging Face id.
    hosts:
        Host name or IP address of each node the plan uses, in rank order; default: placeholders
        ``<HOST_i>`` in commands, ``HOST_i`` variables a script refuses to run without.
    slurm_nodes:
        Slurm node name of each node, in rank order (TensorRT-LLM's ``srun -w``); default: no
        ``-w``, srun runs on the allocation's nodes.
    notes:
        Notes to put first (e.g. that the layout was planned again for this engine).

    Returns
    -------
    ExportBundle

    Raises
    ------
    StudioError
        For an unknown engine or format, ``k8s`` with TensorRT-LLM, TensorRT-LLM on non-NVIDIA
        GPUs, a model path that is empty, starts with ``-`` or holds control characters, or a
        ``hosts`` list that does not match the nodes the plan uses or holds a non-host name.
    """
    from studio.io.export import common
    from studio.io.export.engines import engine_spec, format_refusal

    spec = engine_spec(engine)
    refusal = format_refusal(engine, fmt)
    if refusal is not None:
        raise StudioError(refusal)
    model, path_notes = common.model_path(project, model_path)
    notes = [*notes, *path_notes]
    dep = common.deployment(project, plan, hosts, script=fmt == "script", slurm_nodes=slurm_nodes)
    rules = rules_for(engine)
    if rules.vendor(dep.vendor) is None and (spec.vendor_only or fmt == "k8s"):
        what = "recipe" if spec.vendor_only else "Kubernetes recipe"
        gpus = ", ".join(sorted({s.name for s in project.cluster.gpu_specs.values()}))
        raise StudioError(
            f"{rules.version} has no {what} for {dep.vendor} GPUs ({gpus}); it supports "
            f"{', '.join(rules.vendors)} GPUs"
            + ("; export for " + " or ".join(e for e, s in engine_specs().items() if not s.vendor_only) + " instead"
               if spec.vendor_only else "")
        )
    if not plan.fits:
        notes.append(f"The plan does not fit ({plan.fit_reason}); the engine will fail to start as is.")
    return spec.exporter().build(project, plan, fmt, model, dep, notes)
