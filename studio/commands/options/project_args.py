"""The project a command line describes: a PROJECT file (else the bundled example) with every
flag given applied over it (:func:`project_from_args`), and the flags' checks that name the flag.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from studio.commands.options.layout_args import checked_ep, layout_from_args
from studio.commands.options.project_flags import DEFAULT_EXAMPLE
from studio.core.errors import StudioError
from studio.core.hardware import Cluster
from studio.core.precision import DType
from studio.core.project import Project, drop_unrunnable_pinned
from studio.core.workload import Workload

if TYPE_CHECKING:
    if sys.version_info >= (3, 11):
        from importlib.resources.abc import Traversable
    else:
        from importlib.abc import Traversable


def _validated(obj, what: str, **changes):
    """``obj.replace(**changes)`` with validation errors turned into a :class:`StudioError`."""
    from studio.io.project_file import validation_message

    try:
        return obj.replace(**changes)
    except ValidationError as exc:
        message = validation_message(exc)
        errors = exc.errors()
        field = str(errors[0]["loc"][0]) if len(errors) == 1 and errors[0].get("loc") else None
        if field in changes and field != "precision":  # name the flag the user typed
            flag = "--" + field.replace("_", "-")
            raise StudioError(f"{flag}: {message.removeprefix(f'field {field!r}: ')}") from None
        raise StudioError(f"{what}: {message}") from None


def load_base_project(path: str | None) -> Project:
    """The PROJECT file (or the bundled example of that id, when no such file exists), or the
    bundled example project when ``path`` is None."""
    if path is not None:
        from studio.io.examples import missing_project_message, project_example
        from studio.io.project_file import load_project

        p = Path(path)
        example = project_example(path)
        if example is not None:  # an example id in place of the file: `sweep l40s-8x-llama-70b-fp8`
            return _bundled_example(example, f"bundled example {example.name}")
        if not p.exists():  # a FIFO or device is left to the reader, which names what it is
            raise StudioError(missing_project_message(path))
        if p.is_dir():
            raise StudioError(f"no such project file '{path}' (it is a folder)")
        return load_project(p)
    from studio.io.presets import example_paths

    examples = example_paths()
    node = examples.get(DEFAULT_EXAMPLE) or (examples[sorted(examples)[0]] if examples else None)
    if node is None:
        raise StudioError("no bundled example project found; give a PROJECT.json file")
    return _bundled_example(node, f"bundled example {node.name}")


#: The bundled examples this process has loaded: (file name, source) -> (file's bytes, project).
_EXAMPLES: dict[tuple[str, str], tuple[bytes, Project]] = {}


def _bundled_example(node: Traversable, source: str) -> Project:
    """:func:`studio.io.presets.load_example`, kept for the process while the file's bytes stay
    the same: a process that plans many command lines over the bundled example (the sanity matrix,
    a test run: ~1,300 of them, ~1 ms of unpickling each) decodes it once. The project is frozen, so
    sharing it is safe."""
    from studio.io.presets import load_example

    raw = node.read_bytes()
    seen = _EXAMPLES.get((node.name, source))
    if seen is not None and seen[0] == raw:
        return seen[1]
    project = load_example(node, source)
    _EXAMPLES[(node.name, source)] = (raw, project)
    return project


def _model(args, base: Project):
    """(architecture, model_ref) chosen by --model / --model-config, else the base project's."""
    if getattr(args, "model", None):
        from studio.io.presets import load_catalog

        return load_catalog().model(args.model).architecture, args.model
    if getattr(args, "model_config", None):
        from studio.io.importers.hf_config import load_model_config

        return load_model_config(args.model_config), str(args.model_config)
    return base.model, base.model_ref


def model_size_note(args: argparse.Namespace, project: Project) -> str | None:
    """With ``--model-config``: the config's parameter count checked against the checkpoint's own
    size hints in that folder (one line), or None without the flag or without hints."""
    path = getattr(args, "model_config", None)
    if not path:
        return None
    from studio.io.importers.checkpoint_size import size_note

    return size_note(path, project.model)


def _cluster(args, base: Project) -> Cluster | None:
    """The cluster the flags describe, or None when they leave the base project's cluster as is."""
    gpu_id = getattr(args, "gpu", None)
    template_id = getattr(args, "node_template", None)
    nodes = getattr(args, "nodes", None)
    per_node = getattr(args, "gpus_per_node", None)
    if not (gpu_id or template_id or nodes or per_node):
        return None
    from studio.core.building.builders import build_cluster
    from studio.io.presets import load_catalog

    cat = load_catalog()
    if template_id:
        template = cat.node(template_id)
    elif gpu_id:
        template = cat.template_for_gpu(gpu_id)
    else:
        used = {n.template for n in base.cluster.nodes}
        if len(used) != 1 or None in used:
            raise StudioError(
                "--nodes/--gpus-per-node need --gpu ID or --node-template ID: the project's cluster is "
                "not built from one node template"
            )
        only = used.pop()
        assert only is not None  # refused above
        template = cat.node(only)
        if nodes is None:
            nodes = max(1, len(base.cluster.nodes) // template.trays)
        gpu_id = base.cluster.gpu_types()[0] if base.cluster.gpus else None
    gpu_spec = cat.gpu(gpu_id or template.gpu_type)
    if per_node is not None and per_node != template.gpus_per_node:
        template = _validated(template, f"--gpus-per-node {per_node}", gpus_per_node=per_node)
    if template.trays > 1 and per_node is not None:
        # a rack template sized by the user: --nodes counts trays in one NVLink domain (up to the
        # rack's own tray count), so '--gpu gb200 --nodes 1 --gpus-per-node 1' is one GPU, not a rack
        trays = min(nodes or 1, template.trays)
        gpus = template.gpus_per_node
        template = _validated(template, f"--nodes {nodes or 1}", trays=trays,
                              name=f"{cat.gpu(template.gpu_type).name}: {trays} tray{'s' if trays > 1 else ''} × {gpus} GPU{'s' if gpus > 1 else ''}")
        return build_cluster(template, -(-(nodes or 1) // trays), gpu_spec, cat.links)
    return build_cluster(template, nodes or 1, gpu_spec, cat.links)


def _workload(args, base: Workload) -> Workload:
    changes = {
        key: getattr(args, key)
        for key in ("isl", "osl", "batch", "max_batch", "ttft_ms", "tpot_ms")
        if getattr(args, key, None) is not None
    }
    wl = _validated(base, "workload", **changes) if changes else base
    from studio.commands.options.reuse_args import apply_reuse_args

    reuse = apply_reuse_args(args, wl.reuse)
    if reuse is not wl.reuse:
        try:
            wl = wl.replace(reuse=reuse)
        except ValidationError as exc:
            from studio.io.project_file import validation_message

            raise StudioError(f"--system-prompt-tokens / --history-tokens: {validation_message(exc)}") from None
    if hasattr(args, "num_requests"):  # the command takes the load flags
        from studio.commands.options.load_args import apply_load_args

        wl = apply_load_args(args, wl)
    spec = getattr(args, "lengths", None)
    if spec:
        wl = apply_lengths(args, spec, wl)
    return wl


def apply_lengths(args, spec: str, wl: Workload) -> Workload:
    """``wl`` with the input and output lengths of ``--lengths ID``: ISL/OSL at the distributions'
    means, the load drawing requests from the distributions themselves."""
    from studio.io.workloads import lengths_for

    clash = [f"--{k.replace('_', '-')}" for k in ("isl", "osl", "isl_spread", "osl_spread", "isl_histogram",
                                                    "osl_histogram") if getattr(args, k, None) is not None]
    if clash:
        raise StudioError(f"--lengths sets the input and output lengths; leave out {', '.join(clash)}")
    isl_d, osl_d, isl, osl, _label = lengths_for(spec)
    return wl.replace(isl=isl, osl=osl, load=wl.load.replace(isl_dist=isl_d, osl_dist=osl_d))


def _serving(args, project: Project):
    changes: dict = {}
    if getattr(args, "weight_dtype", None):
        changes["weight_dtype"] = DType(args.weight_dtype)
        changes["precision"] = None  # an explicit dtype wins over a stored per-module precision
    if getattr(args, "kv_dtype", None):
        changes["kv_dtype"] = DType(args.kv_dtype)
    util = getattr(args, "gpu_memory_utilization", None)
    if util is not None:
        if not 0.05 < util <= 1.0:
            raise StudioError(f"--gpu-memory-utilization must be in (0.05, 1.0], got {util}")
        changes["gpu_memory_utilization"] = util
    if getattr(args, "price_per_gpu_hour", None) is not None:
        changes["price_per_gpu_hour"] = args.price_per_gpu_hour
    budget = getattr(args, "max_num_batched_tokens", None)
    if budget is not None:
        changes["max_num_batched_tokens"] = budget
    name = getattr(args, "calibration", None)
    if name is not None:
        if name not in project.calibrations:
            known = ", ".join(sorted(project.calibrations)) or "none (add one with `layout-studio calibrate`)"
            raise StudioError(f"--calibration '{name}' is not a profile of this project; known: {known}")
        changes["calibration"] = name
    from studio.commands.options.load_args import apply_spec_args

    spec = apply_spec_args(args, project.serving.speculative)
    if spec is not project.serving.speculative:
        changes["speculative"] = spec
    from studio.commands.options.feature_args import apply_feature_args

    features = apply_feature_args(args, project.serving.features)
    if features is not project.serving.features:
        changes["features"] = features
    from studio.commands.options.reuse_args import apply_tier_args

    tiers = apply_tier_args(args, project.serving.kv_tiers)
    if tiers is not project.serving.kv_tiers:
        changes["kv_tiers"] = tiers
    return _validated(project.serving, "serving", **changes) if changes else project.serving


def project_from_args(args: argparse.Namespace) -> Project:
    """Build the project the command line describes.

    Starts from the PROJECT file (or the bundled example) and applies every flag given. Without
    ``--dp``, DP = GPUs / (TP × PP) when that divides. The base project's pinned layouts (with the
    batches they were pinned at), Explorer settings, calibrations and serving mode are kept; a
    pinned layout that the model or cluster of the flags cannot run is dropped, with its batch.

    Raises
    ------
    StudioError
        Unknown preset id (with the nearest known ids), a layout that cannot exist on the cluster,
        or an invalid value; the message names the flag.
    """
    base = load_base_project(getattr(args, "project", None))
    model, model_ref = _model(args, base)
    model_changed = model_ref != base.model_ref or model is not base.model
    cluster = _cluster(args, base)
    cluster_changed = cluster is not None
    cluster = cluster or base.cluster
    gpus = cluster.num_gpus
    if gpus < 1:
        raise StudioError("the cluster has no GPUs; pass --gpu ID or --node-template ID")
    auto_layout = cluster_changed and not any(
        getattr(args, k, None) is not None for k in ("tp", "pp", "dp", "layers_per_stage")
    )
    if auto_layout:
        # The cluster came from flags and no split was asked for: start from the production rule
        # (TP inside a node, PP across nodes until the weights fit), not the example's layout.
        from studio.engine.search.defaults import default_layout

        per_node = max((len(n.gpus) for n in cluster.nodes), default=1)
        layout = default_layout(model, per_node, gpus)
        ep = getattr(args, "ep", None) or 1
        if ep > 1:
            layout = layout.replace(ep=checked_ep(model, ep, layout.tp, layout.dp))
        if getattr(args, "micro_batches", None):
            layout = layout.replace(micro_batches=args.micro_batches)
    else:
        layout = layout_from_args(args, base, gpus, model, cluster_changed, model_changed)
    workload = _workload(args, base.workload)
    serving = _serving(args, base)
    name = base.name
    if getattr(args, "project", None) is None and (model_changed or cluster_changed):
        name = f"{model.name} on {cluster.name}"
    try:
        project = Project(
            name=name,
            description=base.description,
            cluster=cluster,
            model=model,
            model_ref=model_ref,
            workload=workload,
            serving=serving,
            layout=layout,
            pinned=base.pinned,
            pinned_batches=base.pinned_batches,
            explorer=base.explorer,
            calibrations=base.calibrations,
            serving_mode=base.serving_mode,
        )
    except ValidationError as exc:
        from studio.io.project_file import validation_message

        raise StudioError(validation_message(exc)) from None
    if cluster_changed or model_changed:
        # the pinned layouts the new model or cluster cannot run go, with their batches, as when
        # the window changes the model (core.edits.with_model) or the cluster (follow_cluster)
        project = drop_unrunnable_pinned(project)
    if auto_layout and getattr(args, "micro_batches", None) is None and layout.ep == 1:
        from studio.engine.search.defaults import fitting_layout

        project = project.replace(layout=fitting_layout(project, details=False)[0])
    return _checked_tiers(args, apply_runtime_args(args, apply_cp_args(args, project)))


def _checked_tiers(args: argparse.Namespace, project: Project) -> Project:
    """``project`` with its KV tiers checked against the nodes' host memory, NVMe and engine version,
    and the nodes' host link filled in (the message names the flag)."""
    tiers = project.serving.kv_tiers
    if not (tiers.host_gib or tiers.disk_gib or project.workload.reuse.hit_tier != "hbm"):
        return project
    from studio.service.kv_tiers import checked_tiers

    try:
        checked = checked_tiers(project, tiers)
    except StudioError as exc:
        text = str(exc)
        for field, flag in (("kv_tiers.host_gib", "--kv-host-gib"), ("kv_tiers.disk_gib", "--kv-disk-gib")):
            if text.startswith(field) and getattr(args, flag[2:].replace("-", "_"), None) is not None:
                text = flag + text.removeprefix(field).replace("set it to 0", f"leave out {flag}")
        raise StudioError(text) from None
    return project if checked is tiers else project.replace(serving=project.serving.replace(kv_tiers=checked))


def apply_runtime_args(args: argparse.Namespace, project: Project) -> Project:
    """``project`` with ``--runtime`` / ``--runtime-version`` applied. Choosing an engine or a version
    without ``--gpu-memory-utilization`` takes that engine's default memory fraction (vLLM
    ``gpu_memory_utilization``, TensorRT-LLM ``free_gpu_memory_fraction``, SGLang's
    ``mem_fraction_static`` computed for the GPU and layout), as the engine would start with."""
    runtime = getattr(args, "runtime", None)
    version = getattr(args, "runtime_version", None)
    if runtime is None and version is None:
        return project
    from studio.service.project_edits.engine_choice import with_engine

    sv = project.serving
    new_runtime = runtime or sv.runtime
    new_version = version if version is not None else (sv.runtime_version if new_runtime == sv.runtime else None)
    try:
        return with_engine(project, new_runtime, new_version,
                           keep_fraction=getattr(args, "gpu_memory_utilization", None) is not None)
    except ValidationError as exc:
        from studio.io.project_file import validation_message

        raise StudioError(validation_message(exc), field="runtime_version") from None


def apply_cp_args(args: argparse.Namespace, project: Project) -> Project:
    """``project`` with ``--cp`` / ``--cp-mode`` applied to its layout; a CP the model or layout
    cannot use is refused with the rule (nothing is computed from it)."""
    from studio.core import parallelism

    cp, mode = getattr(args, "cp", None), getattr(args, "cp_mode", None)
    lay = project.layout
    if cp is None and mode is None:
        # the PROJECT file's CP gets the flag's checks: refused with the rule, never replaced by 1
        why = parallelism.cp_reason(project.model, lay.cp, lay.tp, lay.dp, lay.cp_mode)
        if why is None:
            return project
        allowed = ", ".join(map(str, parallelism.cp_options(project.model, lay.tp, lay.dp, lay.cp_mode)))
        raise StudioError(
            f"field 'layout.cp' ({lay.cp}, {lay.cp_mode}): {why}; allowed with TP={lay.tp}, DP={lay.dp} "
            f"({lay.cp_mode}): {allowed} (or pass --cp)",
            getattr(args, "project", None),
        )
    cp = lay.cp if cp is None else cp
    mode = lay.cp_mode if mode is None else mode
    why = parallelism.cp_reason(project.model, cp, lay.tp, lay.dp, mode)
    if why is not None:
        allowed = ", ".join(map(str, parallelism.cp_options(project.model, lay.tp, lay.dp, mode)))
        raise StudioError(f"--cp {cp}: {why}; allowed with TP={lay.tp}, DP={lay.dp} ({mode}): {allowed}")
    return project.replace(layout=lay.replace(cp=cp, cp_mode=mode))
