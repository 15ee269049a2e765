"""Write the files of an export into a folder as a set, with the studio's one atomic writer
(:func:`studio.io.atomic.write_files_atomic`): every target is checked first, the files are written
into a temporary folder beside them, and only then moved into place (``os.replace``, atomic per
file). A refused target or a failed write leaves the folder as it was, with no temporary files
behind; a symbolic link among the targets is replaced, never written through."""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path

from studio.core.errors import StudioError
from studio.io.export.checks.safety import escape_for_terminal


def _refuse(path: Path, why: str) -> StudioError:
    return StudioError(f"{why}; nothing was written", escape_for_terminal(str(path)))


def write_files(files: Mapping[str, str], folder: str | os.PathLike[str]) -> list[Path]:
    """Write ``files`` (name → text) into ``folder``, created when missing; ``.sh`` files are
    made executable. Returns the paths written, in order.

    Raises
    ------
    StudioError
        ``folder`` is not a folder, a file name is not a plain name, a target exists and is not
        a regular file (a folder, FIFO or device is never replaced), or the disk refuses a write.
    """
    target = Path(folder)
    if target.exists() and not target.is_dir():
        kind = "a file" if target.is_file() else "not a folder (a device, pipe or socket)"
        raise _refuse(target, f"-o must name a folder, and this is {kind}")
    for name in files:
        if not name or name in (".", "..") or "/" in name or "\\" in name or "\0" in name:
            raise _refuse(target / name, f"'{escape_for_terminal(name)}' is not a plain file name")
    paths = [target / name for name in files]
    for p in paths:
        try:
            mode = p.lstat().st_mode
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise _refuse(p, f"cannot inspect the target ({exc.strerror})") from None
        if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
            raise _refuse(p, "the target exists and is not a regular file")
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StudioError(f"cannot create the export folder ({exc.strerror or exc})",
                          escape_for_terminal(str(target))) from None
    from studio.io.atomic import write_files_atomic

    modes: dict[str | os.PathLike[str], int] = {p: 0o755 if p.name.endswith(".sh") else 0o644 for p in paths}
    try:
        return write_files_atomic(dict(zip(paths, files.values(), strict=True)), what="export file", modes=modes)
    except StudioError as exc:
        raise StudioError(exc.message, escape_for_terminal(exc.source or str(target))) from None
