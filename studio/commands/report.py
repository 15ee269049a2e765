"""``layout-studio report``: a stakeholder report (HTML or PDF) of a project's plan — summary,
cluster picture, layout comparison, memory, timelines, Pareto plot, warnings, launch commands.

The charts are drawn by the studio's own Qt code offscreen, so Qt is imported only inside
:func:`run`; without a display Qt runs on the ``offscreen`` platform.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from studio.commands.options.arg_types import positive_float
from studio.commands.options.project_args import project_from_args
from studio.commands.options.project_flags import add_project_args, add_runtime_args
from studio.core.errors import StudioError

SUFFIXES = (".html", ".htm", ".pdf")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``report`` command."""
    from studio.engine.search.sweep import OBJECTIVES

    p = subparsers.add_parser(
        "report",
        help="stakeholder report of a plan as one self-contained HTML or PDF file",
        description="Evaluate the layout, sweep the cluster for alternatives and write a report a "
        "manager can read: summary, cluster picture, comparison table, memory bars, timelines on one "
        "time axis, Pareto plot, warnings, assumptions and launch commands. Flags override the "
        "PROJECT file's values; without a PROJECT file the bundled example is used.",
    )
    add_project_args(p, layout=True)
    add_runtime_args(p)
    g = p.add_argument_group("report")
    g.add_argument("-o", "--output", required=True, metavar="FILE.html|FILE.pdf",
                   help="report file; the suffix picks the format (.html or .pdf)")
    g.add_argument("--objective", choices=OBJECTIVES, default="throughput",
                   help="what the sweep's alternatives are best at when the project pins none (default throughput)")
    g = p.add_argument_group("fleet section (a day of traffic; see docs/fleet.md)")
    g.add_argument("--traffic", metavar="ID|FILE", help="add a Fleet section for this traffic curve or file")
    g.add_argument("--peak", type=positive_float, metavar="R", help="rescale the traffic so its busiest slot is R req/s")
    g.add_argument("--ttft-p99-ms", type=positive_float, metavar="X", help="p99 TTFT target of the Fleet section, ms")
    g.add_argument("--tpot-p99-ms", type=positive_float, metavar="Y", help="p99 TPOT target of the Fleet section, ms")
    p.set_defaults(func=run)


def _fleet(args: argparse.Namespace, project):
    """The Fleet section's plan, when ``--traffic`` asked for one."""
    if args.traffic is None:
        if args.ttft_p99_ms is not None or args.tpot_p99_ms is not None or args.peak is not None:
            raise StudioError("--ttft-p99-ms/--tpot-p99-ms/--peak belong to the Fleet section: add --traffic ID|FILE")
        return None
    if args.ttft_p99_ms is None or args.tpot_p99_ms is None:
        raise StudioError("--traffic: the Fleet section needs both --ttft-p99-ms and --tpot-p99-ms")
    from studio.io.fleet_presets import load_traffic
    from studio.service.fleet import FleetOptions, capacity_plan

    traffic = load_traffic(args.traffic)
    if args.peak is not None:
        traffic = traffic.scaled_to_peak(args.peak)
    try:
        return capacity_plan(project, traffic, FleetOptions(args.ttft_p99_ms, args.tpot_p99_ms))
    except StudioError as exc:
        raise StudioError(f"--traffic: {exc.message}", exc.source) from None


def _check_output(text: str) -> Path:
    out = Path(text)
    if out.suffix.lower() not in SUFFIXES:
        raise StudioError(f"-o {text}: the report is HTML or PDF; name the file *.html or *.pdf")
    if not out.parent.is_dir():
        raise StudioError(f"-o {text}: folder '{out.parent}' does not exist")
    if out.is_dir():
        raise StudioError(f"-o {text}: is a folder; give a file name")
    from studio.io.atomic import check_target

    return check_target(out, what="report")  # never a device or FIFO (a link there is replaced)


def _headless_qt() -> None:
    """Use Qt's offscreen platform when there is no display to draw on."""
    if sys.platform.startswith("linux") and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def run(args: argparse.Namespace) -> int:
    """Build the project, gather the figures, draw and write the report; prints the file's path."""
    out = _check_output(args.output)
    project = project_from_args(args)
    _headless_qt()
    try:
        from studio.gui.report import gather, write_report
    except ImportError as exc:
        raise StudioError(f"the report draws its charts with PySide6 and pyqtgraph ({exc})") from None
    fleet = _fleet(args, project)
    data = gather(project, objective=args.objective)
    if fleet is not None:
        import dataclasses

        data = dataclasses.replace(data, fleet=fleet)
    print(write_report(data, out))
    return 0
