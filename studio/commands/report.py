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

from studio.commands.project_args import project_from_args
from studio.commands.project_flags import add_project_args
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
    g = p.add_argument_group("report")
    g.add_argument("-o", "--output", required=True, metavar="FILE.html|FILE.pdf",
                   help="report file; the suffix picks the format (.html or .pdf)")
    g.add_argument("--objective", choices=OBJECTIVES, default="throughput",
                   help="what the sweep's alternatives are best at when the project pins none (default throughput)")
    p.set_defaults(func=run)


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
    data = gather(project, objective=args.objective)
    print(write_report(data, out))
    return 0
