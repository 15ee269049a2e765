"""``layout-studio open FILE`` and ``layout-studio snapshot``: the commands that need the GUI.

Qt is imported only inside the functions, so that the rest of the command line runs (and imports)
without PySide6.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from studio.core.errors import StudioError


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``open`` and ``snapshot``."""
    p = subparsers.add_parser(
        "open",
        help="open the studio window on a project (no command: the bundled example)",
        description="Open the Layout Studio window on PROJECT.json, or on the bundled example.",
    )
    p.add_argument("file", nargs="?", metavar="PROJECT.json",
                   help="project file to open, or a bundled example's id (`layout-studio examples`)")
    p.set_defaults(func=_run_open)

    p = subparsers.add_parser(
        "snapshot",
        help="render the studio window offscreen to a PNG",
        description="Render the main window (canvas, metrics, timeline) of a project to a PNG file, "
        "without a display.",
    )
    p.add_argument("file", nargs="?", metavar="PROJECT.json",
                   help="project file or a bundled example's id (default: the bundled example)")
    p.add_argument("-o", "--output", required=True, metavar="FILE.png", help="PNG file to write")
    p.add_argument("--size", type=parse_size, default=(1280, 800), metavar="WxH", help="window size in pixels (default 1280x800)")
    p.add_argument("--view", choices=("main", "explorer", "explorer-window"), default="main",
                   help="main: the window as it opens; explorer: with the Explorer raised and its sweep done "
                   "(disaggregated pools too when the project is disaggregated); explorer-window: the Explorer alone")
    p.set_defaults(func=_run_snapshot)


def parse_size(text: str) -> tuple[int, int]:
    """argparse type: ``WIDTHxHEIGHT`` in pixels, each 200..8000."""
    m = re.fullmatch(r"\s*(\d{2,5})\s*[xX×]\s*(\d{2,5})\s*", text)
    if not m:
        raise argparse.ArgumentTypeError(f"expected WIDTHxHEIGHT such as 1280x800, got {text!r}")
    w, h = int(m.group(1)), int(m.group(2))
    if not (200 <= w <= 8000 and 200 <= h <= 8000):
        raise argparse.ArgumentTypeError(f"width and height must be 200..8000 pixels, got {w}x{h}")
    return w, h


def open_gui(path: str | None) -> int:
    """Open the studio window on ``path`` (None: the bundled example; a bundled example's id when
    no such file exists: that example, saved under a file name of the user's choosing); returns
    the exit code."""
    from studio.io.examples import missing_project_message, project_example

    example = project_example(path) if path is not None else None
    if example is not None:
        return _open_window(path=None, example=path)
    if path is not None and not Path(path).is_file():
        if Path(path).exists() and not Path(path).is_dir():  # a FIFO or device: say which
            from studio.io.project_file import load_project

            load_project(path)
        raise StudioError(missing_project_message(path))
    return _open_window(path=path)


def _open_window(path: str | None, example: str | None = None) -> int:
    _check_display()
    try:
        from studio.gui.window.app import run
    except ImportError as exc:
        raise StudioError(
            f"the studio window needs PySide6 and pyqtgraph ({exc}); the headless commands "
            "(plan, sweep, presets) work without them"
        ) from None
    return int((run(path) if example is None else run(None, example=example)) or 0)


def _check_display() -> None:
    """On Linux, refuse to open a window without a display (Qt would abort the process with a
    core dump) unless a Qt platform is chosen explicitly."""
    import os
    import sys

    if not sys.platform.startswith("linux") or os.environ.get("QT_QPA_PLATFORM"):
        return
    if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        raise StudioError(
            "no display to open the window on (DISPLAY and WAYLAND_DISPLAY are not set); run it in a "
            "desktop session, use `layout-studio snapshot -o FILE.png`, or set QT_QPA_PLATFORM=offscreen"
        )


def _run_open(args: argparse.Namespace) -> int:
    return open_gui(args.file)


def _run_snapshot(args: argparse.Namespace) -> int:
    from studio.commands.options.project_args import load_base_project

    out = Path(args.output)
    if out.suffix.lower() != ".png":
        raise StudioError(f"-o {args.output}: the snapshot is a PNG; name the file *.png")
    if out.parent and not out.parent.exists():
        raise StudioError(f"-o {args.output}: folder '{out.parent}' does not exist")
    from studio.io.atomic import check_target

    check_target(out, what="snapshot")  # never a folder, device or FIFO
    project = load_base_project(args.file) if args.file else None
    try:
        from studio.gui.window.snapshot import render_main_window
    except ImportError as exc:
        raise StudioError(f"snapshot needs PySide6 and pyqtgraph ({exc})") from None
    written = render_main_window(project, out, args.size, view=getattr(args, "view", "main"))
    print(written)
    return 0
