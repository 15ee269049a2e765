"""Read and write project files (JSON with ``schema_version``).

Loading never executes anything from the file, refuses oversized files, runs migrations, and turns
every problem into a :class:`~studio.core.errors.StudioError` naming the file and the field.
Saving is atomic: a temporary file in the same folder, flushed and fsynced, then renamed over the
target; the previous version is kept as ``NAME.json.bak``.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from pydantic import ValidationError

from studio.core.errors import StudioError
from studio.core.project import Project, migrate

MAX_PROJECT_BYTES = 64 * 1024 * 1024


def project_to_json(project: Project) -> str:
    """Serialise a project (stable key order, indented)."""
    return project.model_dump_json(indent=2, exclude_defaults=False) + "\n"


def validation_message(exc: ValidationError) -> str:
    """First validation error as 'field 'a.b.c': message'."""
    parts = []
    for e in exc.errors()[:3]:
        loc = ".".join(str(p) for p in e.get("loc", ()))
        msg = str(e.get("msg", "")).removeprefix("Value error, ")
        parts.append(f"field '{loc}': {msg}" if loc else msg)
    more = len(exc.errors()) - 3
    return "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")


def project_from_json(text: str, source: str = "<project>") -> Project:
    """Decode, migrate and validate project JSON text."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise StudioError(f"not valid JSON ({exc})", source) from None
    data = migrate(data, source)
    try:
        return Project.model_validate(data)
    except ValidationError as exc:
        raise StudioError(validation_message(exc), source) from None


def load_project(path: str | os.PathLike[str]) -> Project:
    """Load a project file."""
    p = Path(path)
    try:
        size = p.stat().st_size
        if size > MAX_PROJECT_BYTES:
            raise StudioError(
                f"file is {size / 1e6:.0f} MB; project files are at most {MAX_PROJECT_BYTES // 2**20} MiB",
                str(p),
            )
        raw = p.read_bytes()
    except StudioError:
        raise
    except OSError as exc:
        raise StudioError(f"cannot read file ({exc.strerror or exc})", str(p)) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise StudioError(f"not UTF-8 text (byte {exc.start})", str(p)) from None
    return project_from_json(text, str(p))


def save_project(project: Project, path: str | os.PathLike[str], keep_backup: bool = True) -> Path:
    """Write ``project`` to ``path`` atomically; keep the previous file as ``.bak``."""
    p = Path(path)
    text = project_to_json(project)
    directory = p.parent if str(p.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise StudioError(f"cannot write in folder ({exc.strerror or exc})", str(directory)) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        if keep_backup and p.exists():
            bak = p.with_name(p.name + ".bak")
            try:
                os.replace(p, bak)
            except OSError:
                pass
        os.replace(tmp, p)
        _fsync_dir(directory)
    except OSError as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise StudioError(f"cannot save ({exc.strerror or exc})", str(p)) from None
    return p


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
