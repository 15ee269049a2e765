"""``layout-studio calibrate nccl``: fit a link kind's latency and bandwidth to nccl-tests logs, and
``layout-studio calibrate serving``: fit the engine's efficiency factors to serving-benchmark results;
each saves the fit as a named calibration profile (in a project, or as a standalone JSON file)."""

from __future__ import annotations

import argparse
import json

from studio.commands.options.arg_types import bounded_int
from studio.core.errors import StudioError, first_error_message

#: Largest --tp/--pp: a cluster's GPU limit (``studio.core.hardware.MAX_CLUSTER_GPUS``,
#: not imported here so that building the parser stays light).
MAX_CLUSTER_GPUS = 65_536
#: Largest --isl/--osl (the project's workload limit) and --concurrency (its max_batch limit).
MAX_TOKENS = 10_000_000
MAX_BATCH = 1_000_000
#: Longest profile name (the project's limit).
MAX_PROFILE_NAME = 120


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``calibrate`` command and its ``nccl`` sub-command."""
    p = subparsers.add_parser("calibrate", help="fit the engine to your own measurements")
    sub = p.add_subparsers(dest="what", required=True, metavar="{nccl,serving}")
    n = sub.add_parser(
        "nccl",
        help="fit a link kind's latency and bandwidth to nccl-tests logs",
        description="Read all_reduce_perf / sendrecv_perf logs, fit the latency and bandwidth of the link "
        "kind the test ran over so the engine reproduces the measured times, and print the error before "
        "and after. Without --project the GPUs are a bundled node template using that link kind.",
    )
    n.add_argument("files", nargs="+", help="nccl-tests stdout logs (or bundled samples' ids, `layout-studio examples`)")
    n.add_argument("--link-kind", required=True, help="link kind id the test ran over (e.g. nvlink4-nvswitch)")
    n.add_argument("--project", help="project whose cluster ran the test (its first GPUs form the group)")
    n.add_argument("--save-as", help="profile name to store in --project (written back to the file)")
    n.add_argument("-o", "--output", help="write the profile as a standalone JSON file")
    from studio.service.nccl_fit import MAX_FIT_RANKS, MIN_FIT_RANKS

    n.add_argument("--ranks", type=bounded_int(MIN_FIT_RANKS, MAX_FIT_RANKS),
                   help="ranks of the run when the log does not say")
    n.set_defaults(func=run_nccl)
    _register_serving(sub)


def _reference_cluster(catalog, kind_id: str, ranks: int):
    """A cluster of bundled nodes whose GPUs reach each other over ``kind_id``."""
    from studio.core.building.builders import MAX_NODES, build_cluster

    kind = catalog.link(kind_id)
    for t in catalog.nodes.values():
        uses = (
            t.scale_up_link == kind_id
            if kind.family.is_scale_up
            else t.nic_kind == kind_id
            if kind.family.is_network
            else t.pcie_switch_link == kind_id and t.fabric == "pcie"
        )
        if uses:
            nodes = -(-ranks // t.gpus_per_node)
            if kind.family.is_network and nodes < 2:
                nodes = 2
            if nodes > MAX_NODES:
                raise StudioError(
                    f"--ranks: {ranks:,} ranks on '{t.id}' nodes ({t.gpus_per_node} GPUs each) need "
                    f"{nodes:,} nodes; the reference cluster has at most {MAX_NODES:,} nodes "
                    f"({MAX_NODES * t.gpus_per_node:,} ranks); pass --project with a cluster that large"
                )
            return build_cluster(t, nodes, catalog.gpu(t.gpu_type), catalog.links)
    raise StudioError(f"no bundled node template uses link kind '{kind_id}'; pass --project")


def _load_project(args: argparse.Namespace):
    """``--project``: the file, or the bundled example of that id (which ``--save-as`` cannot write)."""
    from studio.commands.options.project_args import load_base_project
    from studio.io.examples import project_example

    if args.save_as and project_example(args.project) is not None:
        raise StudioError(
            f"--save-as writes the profile into --project, and '{args.project}' is a bundled example; "
            f"copy it first (layout-studio examples {args.project} > mine.json) and pass --project mine.json"
        )
    return load_base_project(args.project)


def _save_profile(args: argparse.Namespace, project, profile) -> None:
    """Write ``profile`` where the flags say: ``-o`` as a standalone JSON file, ``--save-as`` into
    ``--project`` (written back to its file); print where it went, or how to keep it."""
    name = profile.name
    if args.output:
        from studio.io.atomic import write_text_atomic

        text = json.dumps(profile.model_dump(), indent=2, ensure_ascii=False) + "\n"
        write_text_atomic(text, args.output, what="profile")
        print(f"wrote profile '{name}' to {args.output}")
    if args.save_as:
        if project is None:
            raise StudioError("--save-as stores the profile in a project; give --project")
        from studio.io.project_file import update_project

        # read again under a lock and add to what the file holds now: a --save-as running at the
        # same time into the same project keeps its profile
        update_project(args.project, lambda p: p.replace(calibrations={**p.calibrations, name: profile}))
        print(f"saved profile '{name}' in {args.project}")
    elif not args.output:
        print("(not saved: pass -o PROFILE.json or --project P --save-as NAME)")


def check_profile_name(name: str | None) -> None:
    """Refuse a ``--save-as`` name the project cannot store, before any fitting is done."""
    if name is None:
        return
    if not name.strip() or len(name) > MAX_PROFILE_NAME:
        raise StudioError(
            f"--save-as: a profile name has 1 to {MAX_PROFILE_NAME} characters (got {len(name)})"
        )
    from studio.io.safe import find_bad_text

    if find_bad_text(name) is not None or any(ord(c) < 32 or c == "\x7f" for c in name):
        raise StudioError("--save-as: the profile name holds control characters or invalid text")


def check_output(path: str | None) -> None:
    """Refuse a ``-o`` target that cannot take the profile (a folder, FIFO or device, a missing
    folder) before any fitting is done, not after minutes of it."""
    if path:
        from studio.io.atomic import check_target

        check_target(path, what="profile")


def _profile(cls, **fields):
    """Build the profile; a value it refuses becomes a one-line error naming the field."""
    from pydantic import ValidationError

    try:
        return cls(**fields)
    except ValidationError as exc:
        raise StudioError(f"cannot store the profile: {first_error_message(exc, quote_field=True)}") from None


def run_nccl(args: argparse.Namespace) -> int:
    """Fit, print, save (the fit itself: :func:`studio.service.nccl_fit.fit_nccl`, as in the window)."""
    import sys

    from studio.core.project import CalibrationProfile
    from studio.io.examples import input_file
    from studio.io.importers.nccl_log import read_nccl_log
    from studio.io.presets import load_catalog
    from studio.service.nccl_fit import fit_nccl, fit_ranks, one_collective

    check_profile_name(args.save_as)
    check_output(args.output)
    logs = [read_nccl_log(input_file(f, "nccl-tests log", "nccl-")) for f in args.files]
    one_collective(logs)
    ranks = fit_ranks(logs, args.ranks)
    catalog = load_catalog()
    project = None
    if args.project:
        project = _load_project(args)
        cluster = project.cluster
    else:
        cluster = _reference_cluster(catalog, args.link_kind, ranks)
    result = fit_nccl(cluster, logs, args.link_kind, ranks, list(catalog.nodes.values()),
                      kind=catalog.link(args.link_kind))
    for message in result.warnings:
        print(f"layout-studio: warning: {message}", file=sys.stderr)
    fit, before, after = result.fit, result.before, result.after
    collective = result.collective
    print(f"{collective} on {ranks} ranks, {fit.sizes.size} points, link kind {args.link_kind}")
    print(f"  fitted latency   {fit.link_fit.latency_us:.3g} µs per hop")
    print(f"  fitted bandwidth {fit.link_fit.bandwidth_gbps:.4g} GB/s per link")
    print(f"  RMS relative error: catalogue figures {before:.1%} -> fitted {after:.1%}")
    print("  size (B)        measured (µs)  default (µs)  fitted (µs)")
    for s, t, d, p in zip(fit.sizes, fit.times_us, fit.default_us, fit.predicted_us, strict=True):
        print(f"  {s:>14,.0f}  {t:>12.4g}  {d:>12.4g}  {p:>11.4g}")
    name = args.save_as or f"nccl-{args.link_kind}"
    profile = _profile(
        CalibrationProfile,
        name=name,
        description=f"{collective} on {ranks} ranks fitted to nccl-tests logs",
        link_fits={args.link_kind: fit.link_fit},
        fit_error=result.fit_error,
        source_files=tuple(str(f) for f in args.files),
    )
    _save_profile(args, project, profile)
    return 0


# ----------------------------------------------------------------------------- calibrate serving
def _register_serving(sub: argparse._SubParsersAction) -> None:
    from studio.core.precision import KV_DTYPES, WEIGHT_DTYPES
    from studio.engine.search.calibration import SERVING_PARAMS

    s = sub.add_parser(
        "serving",
        help="fit the engine's efficiency factors to serving-benchmark results",
        description="Read `vllm bench serve` / benchmark_serving.py JSON (one object or one per line), "
        "genai-perf profile_export_genai_perf.json or trtllm-bench throughput reports; fit the engine's "
        "efficiency factors (least squares in log space, bounded 0.05..1) so it reproduces the measured "
        "output tok/s (and TTFT/TPOT where reported); print predicted against measured for every run. "
        "Values a file does not record (TP, ISL, ...) come from the flags; values it records win.",
    )
    s.add_argument("files", nargs="+", help="result files")
    s.add_argument("--gpu", help="GPU preset id the runs used (default: the project's, else required)")
    s.add_argument("--model", help="model preset id the runs served (default: the project's, else required)")
    s.add_argument("--project", help="project whose cluster, model and serving settings ran the benchmark")
    gpus = bounded_int(1, MAX_CLUSTER_GPUS)
    tokens = bounded_int(1, MAX_TOKENS)
    s.add_argument("--tp", type=gpus, help="tensor-parallel size when the file does not say")
    s.add_argument("--pp", type=gpus, help="pipeline-parallel size when the file does not say (default 1)")
    s.add_argument("--isl", type=tokens, help="input tokens per request when the file does not say")
    s.add_argument("--osl", type=tokens, help="output tokens per request when the file does not say")
    s.add_argument("--concurrency", type=bounded_int(1, MAX_BATCH),
                   help="requests in flight when the file does not say")
    s.add_argument("--weight-dtype", choices=WEIGHT_DTYPES, help="weight format served (e.g. fp8)")
    s.add_argument("--kv-dtype", choices=KV_DTYPES, help="KV-cache format served")
    s.add_argument("--gpu-memory-utilization", type=float, help="memory fraction the runtime used")
    s.add_argument(
        "--fit", default=",".join(SERVING_PARAMS),
        help=f"comma-separated engine constants to fit (default {','.join(SERVING_PARAMS)}; "
        "also e.g. decode_step_overhead_us or hbm_efficiency:h200-sxm)",
    )
    s.add_argument("--save-as", help="profile name to store in --project (written back to the file)")
    s.add_argument("-o", "--output", help="write the profile as a standalone JSON file")
    s.set_defaults(func=run_serving)


def _serving_base(args: argparse.Namespace):
    """The project the runs are evaluated on: --project, else a bundled node of --gpu with --model."""
    from studio.core.building.builders import build_cluster
    from studio.core.precision import DType
    from studio.core.project import Project
    from studio.io.presets import load_catalog

    cat = load_catalog()
    project = None
    if args.project:
        project = _load_project(args)
    if project is None and not (args.gpu and args.model):
        raise StudioError("give --gpu ID and --model ID (or --project P) for the hardware and model the runs used")
    if args.model:
        model = cat.model(args.model).architecture
    else:
        assert project is not None  # refused above without --project
        model = project.model
    if args.gpu:
        cluster = build_cluster(cat.template_for_gpu(args.gpu), 1, cat.gpu(args.gpu), cat.links)
    else:
        assert project is not None
        cluster = project.cluster
    base = project or Project(cluster=cluster, model=model, model_ref=args.model)
    base = base.replace(cluster=cluster, model=model)
    changes: dict = {}
    if args.weight_dtype:
        changes.update(weight_dtype=DType(args.weight_dtype), precision=None)
    if args.kv_dtype:
        changes["kv_dtype"] = DType(args.kv_dtype)
    if args.gpu_memory_utilization is not None:
        if not 0.05 < args.gpu_memory_utilization <= 1.0:
            raise StudioError(f"--gpu-memory-utilization must be in (0.05, 1.0], got {args.gpu_memory_utilization}")
        changes["gpu_memory_utilization"] = args.gpu_memory_utilization
    if changes:
        base = base.replace(serving=base.serving.replace(**changes))
    return base, project


def _bound_note(name: str, value: float) -> str:
    """A warning when a fitted factor stopped at its bound: the engine could not reproduce the
    runs with any allowed value, so the formats, layout or GPU given probably differ from the runs'."""
    from studio.engine.search.calibration import EFFICIENCY_BOUNDS, OTHER_BOUNDS

    lo, hi = OTHER_BOUNDS.get(name.partition(":")[0], EFFICIENCY_BOUNDS)
    if value >= hi * (1 - 1e-6):
        return (f"   (stopped at the upper bound {hi:g}: the runs are faster than the engine can be; "
                "check --weight-dtype, --kv-dtype, --tp and --gpu)")
    if value <= lo * (1 + 1e-6):
        return f"   (stopped at the lower bound {lo:g}: the runs are slower than the engine can be)"
    return ""


def run_serving(args: argparse.Namespace) -> int:
    """Read, fit, print the per-run table, save."""
    from studio.io.importers.serving_bench import fit_files, serving_profile

    check_profile_name(args.save_as)
    check_output(args.output)
    base, project = _serving_base(args)
    params = tuple(p.strip() for p in args.fit.split(",") if p.strip())
    gpus = base.cluster.gpu_types()
    for name in params:
        qualifier = name.partition(":")[2]
        if qualifier and qualifier not in gpus:
            raise StudioError(
                f"--fit: '{name}' names GPU '{qualifier}', which the runs did not use, so fitting it "
                f"changes nothing; the runs' GPUs: {', '.join(gpus)}"
            )
    fit = fit_files(base, args.files, params=params, tp=args.tp, pp=args.pp, isl=args.isl, osl=args.osl,
                    concurrency=args.concurrency)
    gpu = base.cluster.gpu_types()[0]
    print(f"{len(fit.points)} runs of {base.model.id} on {gpu}")
    for p, reason in fit.skipped:
        print(f"  skipped {p.label}: {reason}")
    if fit.skipped and not (args.weight_dtype or args.kv_dtype):
        print("  (if these runs served quantised weights or an FP8 KV cache, say so with "
              "--weight-dtype / --kv-dtype: the engine assumes the project's formats)")
    for name, v0, v in zip(fit.params, fit.defaults, fit.values, strict=True):
        print(f"  {name:<28} {v0:.4g} -> {v:.4g}{_bound_note(name, v)}")
    errors = fit.fit_error()
    for m in fit.measures():
        print(f"  RMS relative error of {m}: defaults {errors[f'serving.{m}.default_rms_rel_error']:.1%} "
              f"-> fitted {errors[f'serving.{m}.rms_rel_error']:.1%}")
    for m in fit.measures():
        print(f"\n  {'run':<52} {'measured':>10} {'default':>10} {'fitted':>10} {'error':>7}   [{m}]")
        for p, d, f in zip(fit.points, fit.default_pred, fit.fitted_pred, strict=True):
            meas = p.measured(m)
            if meas:
                print(f"  {p.label[:52]:<52} {meas:>10,.5g} {d[m]:>10,.5g} {f[m]:>10,.5g} {(f[m] - meas) / meas:>+7.1%}")
    name = args.save_as or f"serving-{gpu}-{base.model.id}"
    profile = serving_profile(fit, name, base, args.files)
    _save_profile(args, project, profile)
    return 0
