"""Write the files of an export into a folder as a set: every target is checked first, the files
are written into a temporary folder beside them, and only then moved into place (``os.replace``,
atomic per file). A refused target or a failed write leaves the folder as it was, with no
temporary files behind."""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Mapping
from pathlib import Path

from studio.core.errors import StudioError
from studio.io.export.safety import escape_for_terminal


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
    staging: str | None = None
    try:
        target.mkdir(parents=True, exist_ok=True)
        staging = tempfile.mkdtemp(prefix=".layout-studio-export-", dir=target)
        for name, text in files.items():
            tmp = Path(staging) / name
            with open(tmp, "w", encoding="utf-8", newline="\n") as fh:
                fh.write(text)
                fh.flush()
                os.fsync(fh.fileno())
            os.chmod(tmp, 0o755 if name.endswith(".sh") else 0o644)
        for name, p in zip(files, paths, strict=True):
            os.replace(Path(staging) / name, p)
    except UnicodeEncodeError:
        raise StudioError("the export holds text that is not valid Unicode; nothing was written",
                          escape_for_terminal(str(target))) from None
    except OSError as exc:
        raise StudioError(f"cannot write the export ({exc.strerror or exc})",
                          escape_for_terminal(str(target))) from None
    finally:
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)
    return paths
