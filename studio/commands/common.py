"""Arguments shared by every command that works on one project: which model, which cluster, which
layout, which workload — and the one function that turns them into a :class:`Project`.

Commands use it like this::

    def register(subparsers):
        p = subparsers.add_parser("export", help="...")
        add_project_args(p, layout=True)
        p.set_defaults(func=run)

    def run(args) -> int:
        project = project_from_args(args)
        ...

Precedence: a PROJECT file (else the bundled example project) gives every value; each flag given on
the command line overrides the matching value. Every problem is a :class:`StudioError` naming the
flag and the allowed values, which :func:`studio.cli.main` turns into exit code 2.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from pydantic import ValidationError

from studio.cli_parser import bounded_int  # noqa: F401 - re-exported for commands
from studio.core import parallelism as par
from studio.core.errors import StudioError
from studio.core.hardware import Cluster
from studio.core.layout import Layout
from studio.core.precision import KV_DTYPES, WEIGHT_DTYPES, DType
from studio.core.project import Project
from studio.core.workload import Workload

#: The example project used when no PROJECT file is given (see ``presets/examples/``).
DEFAULT_EXAMPLE = "dgx-h100-2node-llama-405b"


# ----------------------------------------------------------------------------- argument parsing
def positive_int(text: str) -> int:
    """argparse type: an integer ≥ 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number ≥ 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number ≥ 1, got {value}")
    return value


def _finite_float(text: str, bound: str) -> float:
    """``text`` as a finite number meeting ``bound`` (``"> 0"`` or ``"≥ 0"``), else an argparse error
    that names the bound."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number {bound}, got {text!r}") from None
    meets = value > 0 if bound == "> 0" else value >= 0
    if not (meets and value < float("inf")):
        raise argparse.ArgumentTypeError(f"expected a finite number {bound}, got {text}")
    return value


def positive_float(text: str) -> float:
    """argparse type: a finite number > 0."""
    return _finite_float(text, "> 0")


def non_negative_float(text: str) -> float:
    """argparse type: a finite number ≥ 0."""
    return _finite_float(text, "≥ 0")


def batch_value(text: str) -> int | str:
    """argparse type: ``auto`` or an integer ≥ 1."""
    if text.strip().lower() == "auto":
        return "auto"
    try:
        return positive_int(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"expected 'auto' or a whole number ≥ 1, got {text!r}") from None


def int_list(text: str) -> tuple[int, ...]:
    """argparse type: comma-separated integers ≥ 1, e.g. ``63,63``."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not parts:
        raise argparse.ArgumentTypeError("expected comma-separated layer counts, e.g. 63,63")
    try:
        return tuple(positive_int(p) for p in parts)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated whole numbers ≥ 1 (e.g. 63,63), got {text!r}"
        ) from None


def add_project_args(parser: argparse.ArgumentParser, *, layout: bool) -> None:
    """Add the PROJECT argument and the model / cluster / layout / workload / serving flags.

    Parameters
    ----------
    parser:
        The sub-command's parser.
    layout:
        Add the layout flags (``--tp --pp --ep --dp --micro-batches --layers-per-stage``). Commands
        that enumerate layouts themselves (``sweep``) pass ``False``.
    """
    parser.add_argument(
        "project", nargs="?", metavar="PROJECT.json",
        help=f"project file to start from (default: the bundled example '{DEFAULT_EXAMPLE}')",
    )
    g = parser.add_argument_group("model")
    m = g.add_mutually_exclusive_group()
    m.add_argument("--model", metavar="ID", help="model preset id (see `layout-studio presets models`)")
    m.add_argument("--model-config", metavar="PATH", help="a Hugging Face config.json, or a folder holding one")

    g = parser.add_argument_group("cluster")
    g.add_argument("--gpu", metavar="ID", help="GPU preset id; alone it picks that GPU's usual node template")
    g.add_argument("--node-template", metavar="ID", help="node template id (see `layout-studio presets nodes`)")
    g.add_argument("--nodes", type=positive_int, metavar="N", help="number of nodes (default 1 with --gpu/--node-template)")
    g.add_argument("--gpus-per-node", type=positive_int, metavar="G", help="GPUs per node (changes the template's count)")

    if layout:
        g = parser.add_argument_group("layout")
        g.add_argument("--tp", type=positive_int, metavar="T", help="tensor-parallel size")
        g.add_argument("--pp", type=positive_int, metavar="P", help="pipeline-parallel stages")
        g.add_argument("--ep", type=positive_int, metavar="E", help="expert-parallel size (MoE models)")
        g.add_argument("--dp", type=positive_int, metavar="D", help="data-parallel replicas (default: GPUs / (TP×PP))")
        g.add_argument("--micro-batches", type=positive_int, metavar="M", help="pipeline micro-batches")
        g.add_argument("--layers-per-stage", type=int_list, metavar="L1,L2,...", help="layers of each stage, e.g. 63,63")
        add_cp_args(g)

    g = parser.add_argument_group("workload")
    g.add_argument("--isl", type=positive_int, metavar="N", help="input (prompt) tokens")
    g.add_argument("--osl", type=positive_int, metavar="N", help="output tokens")
    g.add_argument("--batch", type=batch_value, metavar="N|auto", help="concurrent sequences per replica, or auto")
    g.add_argument("--max-batch", type=positive_int, metavar="N", help="cap of batch auto")
    g.add_argument("--ttft-ms", type=positive_float, metavar="X", help="time-to-first-token target, ms")
    g.add_argument("--tpot-ms", type=positive_float, metavar="Y", help="time-per-output-token target, ms")

    g = parser.add_argument_group("serving")
    g.add_argument("--weight-dtype", choices=WEIGHT_DTYPES, help="quantise linear layers to this format")
    g.add_argument("--kv-dtype", choices=KV_DTYPES, help="KV-cache format")
    g.add_argument("--gpu-memory-utilization", type=positive_float, metavar="F", help="fraction of GPU memory the runtime may use (0.05..1]")
    g.add_argument("--price-per-gpu-hour", type=non_negative_float, metavar="USD", help="price of one GPU-hour (default: each GPU preset's)")
    g.add_argument("--calibration", metavar="NAME", help="calibration profile stored in the project")
    from studio.commands.load_args import add_spec_args

    add_spec_args(parser)


def add_cp_args(group: argparse._ActionsContainer) -> None:
    """Add ``--cp`` and ``--cp-mode`` (context parallelism; see docs/engine.md)."""
    group.add_argument("--cp", type=positive_int, metavar="C",
                       help="context-parallel size: the KV cache of each sequence split C ways along the sequence")
    group.add_argument("--cp-mode", choices=("decode", "prefill"),
                       help="decode: inside the TP group (vLLM --decode-context-parallel-size, default); "
                            "prefill: ring attention over C DP replicas")


def apply_cp_args(args: argparse.Namespace, project: Project) -> Project:
    """``project`` with ``--cp`` / ``--cp-mode`` applied to its layout; a CP the model or layout
    cannot use is refused with the rule (nothing is computed from it)."""
    from studio.core import parallelism

    cp, mode = getattr(args, "cp", None), getattr(args, "cp_mode", None)
    if cp is None and mode is None:
        return project
    lay = project.layout
    cp = lay.cp if cp is None else cp
    mode = lay.cp_mode if mode is None else mode
    why = parallelism.cp_reason(project.model, cp, lay.tp, lay.dp, mode)
    if why is not None:
        allowed = ", ".join(map(str, parallelism.cp_options(project.model, lay.tp, lay.dp, mode)))
        raise StudioError(f"--cp {cp}: {why}; allowed with TP={lay.tp}, DP={lay.dp} ({mode}): {allowed}")
    return project.replace(layout=lay.replace(cp=cp, cp_mode=mode))


def add_load_args(parser: argparse.ArgumentParser) -> None:
    """Add the load flags (``plan``, ``sweep``, ``simulate``): how the plan is served — a request
    rate, a closed loop of users or an offline batch — and the request-length spread. Applied by
    :func:`project_from_args` (see :func:`apply_load_args`)."""
    g = parser.add_argument_group("load (how the plan is served; see docs/load.md)")
    mode = g.add_mutually_exclusive_group()
    mode.add_argument("--rate", type=positive_float, metavar="R", help="open loop: R requests per second over all replicas")
    mode.add_argument("--concurrency", type=positive_int, metavar="N", help="closed loop: N users over all replicas")
    mode.add_argument("--offline", action="store_true", default=None, help="all requests queued at t = 0 (trtllm-bench)")
    g.add_argument("--arrival", choices=("poisson", "constant"), help="arrivals of --rate (default poisson)")
    g.add_argument("--num-requests", type=positive_int, metavar="N", help="requests simulated (default 1000)")
    g.add_argument("--seed", type=int, metavar="S", help="random seed of the simulation (0..2147483647)")
    g.add_argument("--max-num-batched-tokens", type=positive_int, metavar="N", help="token budget of one scheduler iteration")
    for which in ("isl", "osl"):
        lengths = g.add_mutually_exclusive_group()
        lengths.add_argument(f"--{which}-spread", type=non_negative_float, metavar="F",
                             help=f"{which.upper()} uniform on mean × (1 ± F), 0 ≤ F < 1 (0 = fixed)")
        lengths.add_argument(f"--{which}-histogram", metavar="FILE",
                             help=f"{which.upper()} from a CSV/JSON histogram of (length, weight)")


# ----------------------------------------------------------------------------- project building
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
    """The PROJECT file, or the bundled example project when ``path`` is None."""
    from studio.io.presets import example_paths
    from studio.io.project_file import load_project, project_from_json

    if path is not None:
        p = Path(path)
        if not p.exists():  # a FIFO or device is left to the reader, which names what it is
            raise StudioError(f"no such project file '{path}'")
        if p.is_dir():
            raise StudioError(f"no such project file '{path}' (it is a folder)")
        return load_project(p)
    examples = example_paths()
    node = examples.get(DEFAULT_EXAMPLE) or (examples[sorted(examples)[0]] if examples else None)
    if node is None:
        raise StudioError("no bundled example project found; give a PROJECT.json file")
    return project_from_json(node.read_text(encoding="utf-8"), f"bundled example {node.name}")


def _model(args, base: Project):
    """(architecture, model_ref) chosen by --model / --model-config, else the base project's."""
    if getattr(args, "model", None):
        from studio.io.presets import load_catalog

        return load_catalog().model(args.model).architecture, args.model
    if getattr(args, "model_config", None):
        from studio.io.hf_config import load_model_config

        return load_model_config(args.model_config), str(args.model_config)
    return base.model, base.model_ref


def model_size_note(args: argparse.Namespace, project: Project) -> str | None:
    """With ``--model-config``: the config's parameter count checked against the checkpoint's own
    size hints in that folder (one line), or None without the flag or without hints."""
    path = getattr(args, "model_config", None)
    if not path:
        return None
    from studio.io.hf_config import size_note

    return size_note(path, project.model)


def _cluster(args, base: Project) -> Cluster | None:
    """The cluster the flags describe, or None when they leave the base project's cluster as is."""
    gpu_id = getattr(args, "gpu", None)
    template_id = getattr(args, "node_template", None)
    nodes = getattr(args, "nodes", None)
    per_node = getattr(args, "gpus_per_node", None)
    if not (gpu_id or template_id or nodes or per_node):
        return None
    from studio.core.builders import build_cluster
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
        template = cat.node(used.pop())
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


def _valid_splits(model, gpus: int) -> str:
    """Up to eight TP × PP splits the model allows on ``gpus`` GPUs (:mod:`studio.core.parallelism`)."""
    splits = [f"TP{t}×PP{p}" for t in par.tp_options(model, gpus) for p in par.pp_options(model, t, gpus)]
    return ", ".join(splits[:8])


def _checked_ep(model, ep: int, tp: int, dp: int) -> int:
    """``--ep`` when the model and TP × DP allow it, else a :class:`StudioError` naming the flag and
    the allowed values."""
    why = par.ep_reason(model, ep, tp, dp)
    if why is not None:
        allowed = ", ".join(map(str, par.ep_options(model, tp, dp)))
        raise StudioError(f"--ep {ep}: {why}; allowed: {allowed}")
    return ep


def _layout(args, base: Project, gpus: int, model, cluster_changed: bool, model_changed: bool) -> Layout:
    """The layout the flags describe over ``gpus`` GPUs (the base project's values where unset;
    on a cluster built from flags without a PROJECT file, unset values are TP 1, PP 1, M 1 rather
    than the bundled example's)."""
    old = base.layout
    if cluster_changed and getattr(args, "project", None) is None:
        old = Layout()
    tp_flag, pp_flag, dp_flag = (getattr(args, k, None) for k in ("tp", "pp", "dp"))
    tp = tp_flag or old.tp
    pp = pp_flag or old.pp
    why = par.depth_reason(model, pp)
    if why is not None:
        raise StudioError(f"--pp {pp}: {why}")
    if dp_flag is not None:
        dp = dp_flag
        if tp * pp * dp != gpus:
            raise StudioError(
                f"layout TP={tp} × PP={pp} × DP={dp} uses {tp * pp * dp} GPUs, but the cluster has {gpus}; "
                f"TP × PP × DP must equal {gpus}"
            )
    elif gpus % (tp * pp) == 0:
        dp = gpus // (tp * pp)
    elif tp_flag is None and pp_flag is None and not hasattr(args, "tp"):
        tp, pp, dp = 1, 1, gpus  # a command without layout flags: any valid layout will do
    else:
        raise StudioError(
            f"TP={tp} × PP={pp} = {tp * pp} does not divide the cluster's {gpus} GPUs, so no DP fills it; "
            f"pick TP × PP dividing {gpus} (e.g. {_valid_splits(model, gpus)}) or pass --dp"
        )
    ep = getattr(args, "ep", None)
    if ep is None:
        ep = old.ep if (model.is_moe and not model_changed) else 1
        if par.ep_reason(model, ep, tp, dp) is not None:
            ep = 1
    else:
        ep = _checked_ep(model, ep, tp, dp)
    lps = getattr(args, "layers_per_stage", None)
    if lps is None and old.layers_per_stage is not None and pp == old.pp and not model_changed:
        lps = old.layers_per_stage
    if lps is not None:
        why = par.split_reason(model, lps, pp)
        if why is not None:
            raise StudioError(f"--layers-per-stage: {why}")
    same_ranks = (tp, pp, dp) == (old.tp, old.pp, old.dp) and not cluster_changed
    micro = getattr(args, "micro_batches", None) or old.micro_batches
    try:
        return Layout(
            tp=tp, pp=pp, dp=dp, ep=ep, micro_batches=micro, layers_per_stage=lps,
            placement=old.placement if same_ranks else None,
        )
    except ValidationError as exc:
        from studio.io.project_file import validation_message

        raise StudioError(f"invalid layout: {validation_message(exc)}") from None


def _workload(args, base: Workload) -> Workload:
    changes = {
        key: getattr(args, key)
        for key in ("isl", "osl", "batch", "max_batch", "ttft_ms", "tpot_ms")
        if getattr(args, key, None) is not None
    }
    wl = _validated(base, "workload", **changes) if changes else base
    if hasattr(args, "num_requests"):  # the command takes the load flags
        from studio.commands.load_args import apply_load_args

        wl = apply_load_args(args, wl)
    return wl


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
    from studio.commands.load_args import apply_spec_args

    spec = apply_spec_args(args, project.serving.speculative)
    if spec is not project.serving.speculative:
        changes["speculative"] = spec
    return _validated(project.serving, "serving", **changes) if changes else project.serving


def project_from_args(args: argparse.Namespace) -> Project:
    """Build the project the command line describes.

    Starts from the PROJECT file (or the bundled example) and applies every flag given. Without
    ``--dp``, DP = GPUs / (TP × PP) when that divides.

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
        from studio.engine.defaults import default_layout

        per_node = max((len(n.gpus) for n in cluster.nodes), default=1)
        layout = default_layout(model, per_node, gpus)
        ep = getattr(args, "ep", None) or 1
        if ep > 1:
            layout = layout.replace(ep=_checked_ep(model, ep, layout.tp, layout.dp))
        if getattr(args, "micro_batches", None):
            layout = layout.replace(micro_batches=args.micro_batches)
    else:
        layout = _layout(args, base, gpus, model, cluster_changed, model_changed)
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
            pinned=base.pinned if not (cluster_changed or model_changed) else (),
            calibrations=base.calibrations,
            serving_mode=base.serving_mode,
        )
    except ValidationError as exc:
        from studio.io.project_file import validation_message

        raise StudioError(validation_message(exc)) from None
    if auto_layout and getattr(args, "micro_batches", None) is None and layout.ep == 1:
        from studio.engine.defaults import fitting_layout

        project = project.replace(layout=fitting_layout(project)[0])
    return apply_cp_args(args, project)


# ----------------------------------------------------------------------------- text output
def json_safe(value):
    """``value`` with numpy scalars/arrays made plain and non-finite floats made ``None`` (strict
    JSON has no NaN or Infinity)."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:  # most leaves of a sweep's JSON
        return value
    if kind is float:
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):  # numpy scalar / array
        return json_safe(value.tolist())
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def print_json(value) -> None:
    """Print ``value`` as indented, strict JSON (one object, newline-terminated)."""
    import json

    print(json.dumps(json_safe(value), indent=2, ensure_ascii=False, allow_nan=False))


def fmt(value, digits: int = 3) -> str:
    """A number for a table: thousands separators for big values, ``digits`` significant digits
    for small ones, ``-`` for missing or non-finite values."""
    import math

    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    try:
        v = float(value)
    except (TypeError, ValueError):
        return str(value)
    if not math.isfinite(v):
        return "-"
    if v == 0:
        return "0"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:.{max(digits, 4) if abs(v) >= 1 else digits}g}"


def format_table(headers: list[str], rows: list[list[str]], right: set[int] | None = None) -> str:
    """Rows of strings as an aligned plain-text table; columns in ``right`` (default: all but the
    first) are right-aligned."""
    right = set(range(1, len(headers))) if right is None else right
    widths = [max(len(str(c)) for c in col) for col in zip(headers, *rows, strict=False)] if rows else [
        len(h) for h in headers
    ]

    def line(cells: list[str]) -> str:
        out = [
            str(c).rjust(w) if i in right else str(c).ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=False))
        ]
        return "  ".join(out).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths])] + [line(r) for r in rows])


def format_pairs(pairs: list[tuple[str, str]], indent: int = 2) -> str:
    """``label  value`` lines with the values aligned."""
    if not pairs:
        return ""
    width = max(len(k) for k, _ in pairs)
    return "\n".join(f"{' ' * indent}{k.ljust(width)}  {v}" for k, v in pairs)
