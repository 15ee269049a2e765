"""Read and write project files (JSON with ``schema_version``).

Loading never executes anything from the file: the bytes are size-limited, decoded as UTF-8,
parsed by :mod:`studio.io.safe` (nesting limit, finite numbers only), migrated to the current
schema and validated. Every problem becomes a :class:`~studio.core.errors.StudioError` naming the
file and the place (JSON line and column, or the field path with the allowed values).

Saving is atomic: the text goes to a temporary file in the same folder, which is flushed and
fsynced, then renamed over the target with :func:`os.replace`. The previous file stays in place
until that rename, so a kill at any moment leaves either the old or the new file. The previous
version is kept as ``NAME.bak`` (a hard link, or a copy where links are not supported), made
*before* the rename.
"""

from __future__ import annotations

import os
import re
import types
import typing
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from studio.core.errors import StudioError
from studio.core.project import PinnedLayoutError, Project, check_pinned, migrate
from studio.core.units import file_size, whole_mib
from studio.io.atomic import backup_path, write_text_atomic
from studio.io.safe import decode_text, find_bad_text, loads_json_limited, read_bytes_limited

__all__ = [
    "MAX_PROJECT_BYTES",
    "MAX_PROJECT_DEPTH",
    "backup_path",
    "load_project",
    "project_from_bytes",
    "project_from_data",
    "project_from_json",
    "project_to_json",
    "save_project",
    "update_project",
    "validation_message",
    "write_text_atomic",
]

MAX_PROJECT_BYTES = 64 * 1024 * 1024
#: Deepest JSON nesting in a project file (real files nest about 8 levels).
MAX_PROJECT_DEPTH = 40


def project_to_json(project: Project) -> str:
    """Serialise a project (stable key order, indented).

    Raises
    ------
    StudioError
        The project holds text that is not valid Unicode (a lone surrogate); the message names the
        field.
    """
    try:
        return project.model_dump_json(indent=2, exclude_defaults=False) + "\n"
    except ValueError as exc:  # pydantic_core.PydanticSerializationError, e.g. "\udfff" in a name
        where = find_bad_text(project.model_dump(mode="python"))
        field = f"field '{where}' " if where else ""
        raise StudioError(f"cannot save: {field}holds text that is not valid Unicode ({exc})") from None


# ----------------------------------------------------------------------------- messages
def _model_at(loc: tuple[Any, ...], root: type[BaseModel]) -> type[BaseModel] | None:
    """The model class that owns the last element of ``loc`` (best effort)."""
    current: Any = root
    for part in loc[:-1]:
        current = _unwrap(current)
        if isinstance(current, type) and issubclass(current, BaseModel):
            field = current.model_fields.get(str(part))
            if field is None:
                return None
            current = field.annotation
            continue
        origin = typing.get_origin(current)
        args = typing.get_args(current)
        if origin in (tuple, list) and args:
            current = args[0]
        elif origin is dict and len(args) == 2:
            current = args[1]
        else:
            return None
    current = _unwrap(current)
    if isinstance(current, type) and issubclass(current, BaseModel):
        return current
    return None


def _unwrap(tp: Any) -> Any:
    """``X | None`` -> ``X``; container types are left for the caller."""
    args = [a for a in typing.get_args(tp) if a is not type(None)]
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        models = [a for a in args if isinstance(a, type) and issubclass(a, BaseModel)]
        if len(models) == 1:
            return models[0]
        if len(args) == 1:
            return args[0]
    return tp


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def validation_message(exc: ValidationError, root: type[BaseModel] = Project) -> str:
    """Up to three validation errors as ``field 'a.b.c': message``, with the allowed field names
    for unknown fields and the rejected value for bad ones."""
    parts = []
    errors = exc.errors()
    for e in errors[:3]:
        loc = tuple(e.get("loc", ()))
        where = ".".join(str(p) for p in loc)
        msg = str(e.get("msg", "")).removeprefix("Value error, ")
        kind = e.get("type", "")
        if kind == "extra_forbidden" and loc:
            model = _model_at(loc, root)
            if model is not None:
                msg = f"unknown field; allowed here: {', '.join(model.model_fields)}"
        elif kind == "missing":
            msg = "is missing (required)"
        elif "input" in e and kind not in ("model_type", "dict_type", "tuple_type", "list_type"):
            if not isinstance(e["input"], (dict, list, tuple)):
                msg = f"{msg} (got {_short(e['input'])})"
        parts.append(f"field '{where}': {msg}" if where else msg)
    more = len(errors) - 3
    return "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")


# ----------------------------------------------------------------------------- loading
#: A ``\\uD800``-``\\uDFFF`` escape in JSON text (one starting with ``\\u`` scans fast).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _may_hold_surrogate(text: str) -> bool:
    """False when JSON ``text`` cannot decode to a lone UTF-16 surrogate: it has no surrogate
    escape and no surrogate character. True (the decoded strings are then walked one by one) for a
    surrogate pair too, or a literal backslash followed by ``ud800``."""
    if "\\u" in text and _SURROGATE_ESCAPE.search(text):
        return True
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def project_from_data(
    data: Any, source: str = "<project>", *, surrogates_possible: bool = True, owned: bool = False
) -> Project:
    """Migrate and validate an already decoded project (a ``dict``). ``surrogates_possible=False``
    (the JSON text was seen to hold none) skips the walk over every string, which took ~10 s of a
    million-GPU file the size check then refused. ``owned=True`` (``data`` was decoded for this
    call and nobody else holds it) lets an old file be migrated in place instead of on a deep copy.

    Raises
    ------
    StudioError
        Naming the file and the field; a :class:`~studio.core.project.PinnedLayoutError` when
        only pinned layouts cannot run on the project's model and cluster (its ``without`` is the
        project with them left out).
    """
    data = migrate(data, source, in_place=owned)
    bad = find_bad_text(data) if surrogates_possible else None
    if bad is not None:
        raise StudioError(
            f"field '{bad}': holds a lone UTF-16 surrogate (\\ud800-\\udfff escape), which is not "
            "valid Unicode text and could not be saved again",
            source,
        )
    try:
        project = Project.model_validate(data)
    except ValidationError as exc:
        raise StudioError(validation_message(exc), source) from None
    except (ValueError, TypeError, RecursionError) as exc:  # a validator tripped on odd input
        raise StudioError(f"invalid project: {exc}", source) from None
    try:
        check_pinned(project)  # a pinned layout that cannot run is refused here, not when compared
    except PinnedLayoutError as exc:
        raise exc.with_source(source) from None
    return project


def project_from_json(text: str, source: str = "<project>") -> Project:
    """Decode, migrate and validate project JSON text."""
    data = loads_json_limited(text, source, max_depth=MAX_PROJECT_DEPTH, what="project file")
    return project_from_data(data, source, surrogates_possible=_may_hold_surrogate(text), owned=True)


def project_from_bytes(raw: bytes, source: str = "<project>") -> Project:
    """Decode (UTF-8), migrate and validate the bytes of a project file."""
    if len(raw) > MAX_PROJECT_BYTES:
        raise StudioError(
            f"project file is {file_size(len(raw))}; at most {whole_mib(MAX_PROJECT_BYTES)}",
            source,
        )
    return project_from_json(decode_text(raw, source, "project file"), source)


def load_project(path: str | os.PathLike[str]) -> Project:
    """Load a project file.

    Raises
    ------
    StudioError
        Unreadable, too large, not UTF-8 JSON, from a newer version, or invalid.
    """
    raw = read_bytes_limited(path, MAX_PROJECT_BYTES, "project file")
    return project_from_bytes(raw, str(path))


# ----------------------------------------------------------------------------- saving
def update_project(
    path: str | os.PathLike[str], change: typing.Callable[[Project], Project], keep_backup: bool = True
) -> Path:
    """Apply ``change`` to the project *as the file holds it now* and save the result, with the
    file locked meanwhile (:func:`studio.io.file_lock.locked`): an update by another process that
    runs at the same time (a second ``calibrate --save-as``) is read, not overwritten.

    Raises
    ------
    StudioError
        The file cannot be read or written, or another process held it for a minute.
    """
    from studio.io.file_lock import locked

    with locked(path, what="project file"):
        return save_project(change(load_project(path)), path, keep_backup=keep_backup)


def save_project(project: Project, path: str | os.PathLike[str], keep_backup: bool = True,
                 follow_links: bool = True) -> Path:
    """Write ``project`` to ``path`` atomically; keep the previous file as ``.bak``.

    A symbolic link at ``path`` is followed (a project opened through a link is saved back to the
    file it names) unless ``follow_links`` is false: a new file written to a name the user gave
    (``import-topo -o``) replaces a link found there instead of writing through it.

    Returns
    -------
    Path
        The file written (with ``follow_links``, the file a link at ``path`` names).

    Raises
    ------
    StudioError
        The target is a folder or a special file, its folder is missing or not writable, the disk
        is full, or the project holds text that cannot be saved; the old file is then left untouched.
    """
    return write_text_atomic(project_to_json(project), path, keep_backup=keep_backup, what="project file",
                             follow_links=follow_links)
