"""``layout-studio calibrate nccl``: fit a link kind's latency and bandwidth to nccl-tests logs and
save the fit as a named calibration profile (in a project, or as a standalone JSON file)."""

from __future__ import annotations

import argparse
import json

from studio.core.errors import StudioError


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``calibrate`` command and its ``nccl`` sub-command."""
    p = subparsers.add_parser("calibrate", help="fit the engine to your own measurements")
    sub = p.add_subparsers(dest="what", required=True, metavar="{nccl}")
    n = sub.add_parser(
        "nccl",
        help="fit a link kind's latency and bandwidth to nccl-tests logs",
        description="Read all_reduce_perf / sendrecv_perf logs, fit the latency and bandwidth of the link "
        "kind the test ran over so the engine reproduces the measured times, and print the error before "
        "and after. Without --project the GPUs are a bundled node template using that link kind.",
    )
    n.add_argument("files", nargs="+", help="nccl-tests stdout logs")
    n.add_argument("--link-kind", required=True, help="link kind id the test ran over (e.g. nvlink4-nvswitch)")
    n.add_argument("--project", help="project whose cluster ran the test (its first GPUs form the group)")
    n.add_argument("--save-as", help="profile name to store in --project (written back to the file)")
    n.add_argument("-o", "--output", help="write the profile as a standalone JSON file")
    n.add_argument("--ranks", type=int, help="ranks of the run when the log does not say")
    n.set_defaults(func=run_nccl)


def _reference_cluster(catalog, kind_id: str, ranks: int):
    """A cluster of bundled nodes whose GPUs reach each other over ``kind_id``."""
    from studio.core.builders import build_cluster

    kind = catalog.link(kind_id)
    for t in catalog.nodes.values():
        uses = (
            t.scale_up_link == kind_id
            if kind.family.value in ("nvlink", "nvlink-bridge", "xgmi")
            else t.nic_kind == kind_id
            if kind.family.is_network
            else t.pcie_switch_link == kind_id and t.fabric == "pcie"
        )
        if uses:
            nodes = -(-ranks // t.gpus_per_node)
            if kind.family.is_network and nodes < 2:
                nodes = 2
            return build_cluster(t, nodes, catalog.gpu(t.gpu_type), catalog.links)
    raise StudioError(f"no bundled node template uses link kind '{kind_id}'; pass --project")


def run_nccl(args: argparse.Namespace) -> int:
    """Fit, print, save."""
    from studio.core.project import CalibrationProfile
    from studio.engine.calibration import fit_link_kind, rms
    from studio.io.nccl_log import read_nccl_log
    from studio.io.presets import load_catalog

    logs = [read_nccl_log(f) for f in args.files]
    collectives = {log.collective for log in logs}
    if len(collectives) != 1 or None in collectives:
        raise StudioError(
            "the logs must all be one collective (all_reduce or sendrecv); found: "
            + ", ".join(sorted(str(c) for c in collectives))
        )
    collective = collectives.pop()
    ranks = args.ranks or logs[0].group_size
    if not ranks or ranks < 2:
        raise StudioError("the log does not say how many ranks ran; pass --ranks N")
    sizes: list[float] = []
    times: list[float] = []
    for log in logs:
        s, t = log.points()
        sizes += s
        times += t
    project = None
    if args.project:
        from studio.io.project_file import load_project

        project = load_project(args.project)
        cluster = project.cluster
    else:
        cluster = _reference_cluster(load_catalog(), args.link_kind, ranks)
    gpus = [g.id for g in cluster.gpus]
    if len(gpus) < ranks:
        raise StudioError(f"the run used {ranks} ranks but the cluster has {len(gpus)} GPUs")
    fit = fit_link_kind(cluster, gpus[:ranks], args.link_kind, sizes, times, collective=collective)
    before, after = rms(fit.default_residuals), fit.link_fit.rms_rel_error
    print(f"{collective} on {ranks} ranks, {fit.sizes.size} points, link kind {args.link_kind}")
    print(f"  fitted latency   {fit.link_fit.latency_us:.3g} µs per hop")
    print(f"  fitted bandwidth {fit.link_fit.bandwidth_gbps:.4g} GB/s per link")
    print(f"  RMS relative error: catalogue figures {before:.1%} -> fitted {after:.1%}")
    print("  size (B)        measured (µs)  default (µs)  fitted (µs)")
    for s, t, d, p in zip(fit.sizes, fit.times_us, fit.default_us, fit.predicted_us, strict=True):
        print(f"  {s:>14,.0f}  {t:>12.4g}  {d:>12.4g}  {p:>11.4g}")
    name = args.save_as or f"nccl-{args.link_kind}"
    profile = CalibrationProfile(
        name=name,
        description=f"{collective} on {ranks} ranks fitted to nccl-tests logs",
        link_fits={args.link_kind: fit.link_fit},
        fit_error={f"{args.link_kind}.rms_rel_error": after, f"{args.link_kind}.default_rms_rel_error": before},
        source_files=tuple(str(f) for f in args.files),
    )
    if args.output:
        from pathlib import Path

        Path(args.output).write_text(json.dumps(profile.model_dump(), indent=2) + "\n", encoding="utf-8")
        print(f"wrote profile '{name}' to {args.output}")
    if args.save_as:
        if project is None:
            raise StudioError("--save-as stores the profile in a project; give --project")
        from studio.io.project_file import save_project

        calib = dict(project.calibrations)
        calib[name] = profile
        save_project(project.replace(calibrations=calib), args.project)
        print(f"saved profile '{name}' in {args.project}")
    elif not args.output:
        print("(not saved: pass -o PROFILE.json or --project P --save-as NAME)")
    return 0
