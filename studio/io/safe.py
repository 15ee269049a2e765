"""Limited, execution-free readers shared by every loader (project files, presets, ``config.json``,
topology text, benchmark logs, autosaves).

Use these instead of ``Path.read_text`` / ``json.loads`` when a file comes from a user or a colleague:

* :func:`read_bytes_limited` / :func:`read_text_limited` refuse files over a size limit *before*
  reading them, and turn OS and UTF-8 errors into :class:`~studio.core.errors.StudioError`.
* :func:`loads_json_limited` decodes JSON with a nesting-depth limit (checked before the recursive
  decoder runs, so a ``[[[[...`` bomb cannot blow the stack), refuses ``NaN``/``Infinity`` and
  numbers that overflow to infinity, and reports syntax errors with line and column.
* :func:`load_json_file` does both.
* :func:`loads_yaml_limited` uses YAML *safe* loading only (no object construction) with the same
  size and depth limits.

Nothing here evaluates, unpickles or imports anything from the input.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from studio.core.errors import StudioError
from studio.core.units import file_size

#: Default size limit for user files (project files, configs, logs).
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
#: Default JSON/YAML nesting limit; the deepest real project file nests about 8 levels.
DEFAULT_MAX_DEPTH = 64

_STRING_TEXT = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)


def _oserror_text(exc: OSError) -> str:
    return exc.strerror or exc.__class__.__name__


def open_regular(path: str | os.PathLike[str], what: str) -> BinaryIO:
    """Open a file for reading in binary mode, refusing anything but a regular file.

    The file is opened without blocking (a FIFO with no writer cannot hang the open) and checked
    with ``fstat`` on the open descriptor (so a link to ``/dev/zero`` is refused too, and the file
    cannot be swapped between the check and the read); the returned file blocks as usual.

    Raises
    ------
    StudioError
        Missing, unreadable, a folder, or a FIFO, socket or device node.
    """
    p = Path(path)
    try:
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise StudioError(f"{what} not found", str(p)) from None
    except IsADirectoryError:
        raise StudioError(f"this is a folder, not a {what}", str(p)) from None
    except OSError as exc:
        raise StudioError(f"cannot read {what} ({_oserror_text(exc)})", str(p)) from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise StudioError(f"this is a folder, not a {what}", str(p))
        if not stat.S_ISREG(mode):
            raise StudioError(
                f"{what} is a {_kind_of(mode)}, not a regular file; only regular files are read", str(p)
            )
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bytes_limited(path: str | os.PathLike[str], max_bytes: int, what: str) -> bytes:
    """Read a regular file's bytes, refusing it if it is larger than ``max_bytes``.

    The file is opened with :func:`open_regular` (FIFOs, sockets and device nodes such as
    ``/dev/zero`` are refused, also through a link, and a FIFO cannot hang the open), sized with
    ``fstat`` before reading, and then read with a hard cap of ``max_bytes + 1`` bytes, so a file
    that grows while it is read is refused too.

    Parameters
    ----------
    path:
        The file.
    max_bytes:
        Largest size accepted.
    what:
        What the file is, for messages ("project file", "config.json").

    Raises
    ------
    StudioError
        Missing, unreadable, not a regular file, or too large.
    """
    p = Path(path)
    with open_regular(p, what) as fh:
        try:
            size = os.fstat(fh.fileno()).st_size
            if size > max_bytes:
                raise StudioError(_too_big(size, max_bytes, what), str(p))
            # read what fstat says is there (read(n) sets aside n bytes first: asking for the cap
            # made every small file cost the whole limit, a 1.3 MiB project 64 MiB), then the rest
            # of a file that grew meanwhile, up to one byte past the cap
            raw = fh.read(min(size, max_bytes) + 1)
            if len(raw) > size:
                raw += fh.read(max_bytes + 1 - len(raw))
        except OSError as exc:
            raise StudioError(f"cannot read {what} ({_oserror_text(exc)})", str(p)) from None
    if len(raw) > max_bytes:
        raise StudioError(_too_big(len(raw), max_bytes, what), str(p))
    return raw


def _kind_of(mode: int) -> str:
    """A file type in words (for "only regular files are read" messages)."""
    if stat.S_ISFIFO(mode):
        return "pipe (FIFO)"
    if stat.S_ISCHR(mode):
        return "character device"
    if stat.S_ISBLK(mode):
        return "block device"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISDIR(mode):
        return "folder"
    return "special file"


def _too_big(size: int, max_bytes: int, what: str) -> str:
    return f"{what} is {file_size(size)}; at most {file_size(max_bytes)} is accepted"


def decode_utf8(raw: bytes, source: str, what: str = "file") -> str:
    """Decode UTF-8 (a leading byte-order mark is dropped); errors name the line and byte."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise StudioError(
            f"{what} is not UTF-8 text (bad byte 0x{raw[exc.start]:02x} at line {line}, "
            f"byte offset {exc.start})",
            source,
        ) from None
    return text.removeprefix("\ufeff")


def decode_text(raw: bytes, source: str, what: str = "file", fallback: str | None = None) -> str:
    """Decode text whose encoding is found from its start: a UTF-16 or UTF-8 byte-order mark, else
    UTF-16 recognised by its zero bytes (what Windows PowerShell's ``>`` writes), else UTF-8.

    Parameters
    ----------
    raw:
        The bytes.
    source:
        File name for messages.
    what:
        What the file is, for messages.
    fallback:
        An 8-bit codec (``"latin-1"``) used when the text is not UTF-8; ``None`` refuses such text.

    Raises
    ------
    StudioError
        Not decodable (bad UTF-16 or, without ``fallback``, bad UTF-8).
    """
    codec = None
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        codec = "utf-16"  # the BOM says which byte order; the codec drops it
    elif len(raw) >= 4 and raw[1:4:2] == b"\0\0" and raw[0:4:2].count(0) == 0:
        codec = "utf-16-le"
    elif len(raw) >= 4 and raw[0:4:2] == b"\0\0" and raw[1:4:2].count(0) == 0:
        codec = "utf-16-be"
    if codec is not None:
        try:
            return raw.decode(codec).removeprefix("\ufeff")
        except UnicodeDecodeError as exc:
            raise StudioError(
                f"{what} looks like UTF-16 text but byte offset {exc.start} is not ({exc.reason})", source
            ) from None
    if fallback is None:
        return decode_utf8(raw, source, what)
    try:
        return raw.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError:
        return raw.decode(fallback)


def read_text_limited(
    path: str | os.PathLike[str], max_bytes: int, what: str, fallback: str | None = None
) -> str:
    """Read a text file of at most ``max_bytes`` bytes: UTF-8 (with or without a byte-order mark)
    or UTF-16 (see :func:`decode_text`).

    Raises
    ------
    StudioError
        Missing, unreadable, not a regular file, too large, or not decodable.
    """
    raw = read_bytes_limited(path, max_bytes, what)
    return decode_text(raw, str(path), what, fallback=fallback)


def json_depth(text: str | bytes) -> int:
    """Deepest bracket nesting of JSON text, brackets inside strings ignored.

    Vectorised (numpy) and free of recursion, so it is fast and safe on hostile input: it looks only
    at the positions of quotes, backslashes and brackets.
    """
    raw = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    arr = np.frombuffer(raw, dtype=np.uint8)
    brackets = np.flatnonzero((arr == ord("[")) | (arr == ord("{")) | (arr == ord("]")) | (arr == ord("}")))
    if brackets.size == 0:
        return 0
    quotes = np.flatnonzero(arr == ord('"'))
    slashes = np.flatnonzero(arr == ord("\\"))
    if slashes.size and quotes.size:
        # A quote is escaped when an odd run of backslashes ends just before it.
        run_start = np.ones(slashes.size, dtype=bool)
        run_start[1:] = np.diff(slashes) != 1
        starts = np.flatnonzero(run_start)
        ends = np.append(starts[1:], slashes.size) - 1
        odd = ((ends - starts + 1) % 2) == 1
        escaped = slashes[ends[odd]] + 1
        quotes = quotes[~np.isin(quotes, escaped)]
    inside = (np.searchsorted(quotes, brackets) % 2) == 1
    outside = brackets[~inside]
    if outside.size == 0:
        return 0
    chars = arr[outside]
    step = np.where((chars == ord("[")) | (chars == ord("{")), 1, -1).astype(np.int32)
    return int(max(0, np.cumsum(step).max()))


class _NonFinite(ValueError):
    def __init__(self, token: str) -> None:
        super().__init__(token)
        self.token = token


def _reject_constant(token: str) -> Any:
    raise _NonFinite(token)


def _finite_float(token: str) -> float:
    value = float(token)
    if math.isinf(value):
        raise _NonFinite(token)
    return value


def _position(text: str, token: str) -> str:
    """'line L column C' of the first ``token`` outside strings (best effort)."""
    blanked = _STRING_TEXT.sub(lambda m: " " * len(m.group(0)), text)
    at = blanked.find(token)
    if at < 0:
        return "somewhere in the file"
    line = text.count("\n", 0, at) + 1
    col = at - (text.rfind("\n", 0, at) + 1) + 1
    return f"line {line} column {col}"


def loads_json_limited(
    text: str | bytes,
    source: str = "<json>",
    max_depth: int = DEFAULT_MAX_DEPTH,
    what: str = "file",
) -> Any:
    """Decode JSON text safely.

    Parameters
    ----------
    text:
        JSON text (``bytes`` are decoded as UTF-8 first).
    source:
        File name (or other label) used in messages.
    max_depth:
        Deepest ``[``/``{`` nesting accepted.
    what:
        What the text is, for messages.

    Raises
    ------
    StudioError
        Not UTF-8, not JSON (with line and column), nested deeper than ``max_depth``, or holding
        ``NaN``/``Infinity``/an out-of-range number.
    """
    if isinstance(text, bytes):
        text = decode_utf8(text, source, what)
    depth = json_depth(text)
    if depth > max_depth:
        raise StudioError(
            f"{what} nests {depth} levels deep; at most {max_depth} levels are accepted", source
        )
    try:
        return json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)
    except _NonFinite as exc:
        where = _position(text, exc.token)
        raise StudioError(
            f"{what} holds the number {exc.token!s} at {where}; only finite numbers are allowed",
            source,
        ) from None
    except json.JSONDecodeError as exc:
        raise StudioError(
            f"{what} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}", source
        ) from None
    except (ValueError, RecursionError) as exc:  # e.g. an integer with more than 4300 digits
        raise StudioError(f"{what} is not valid JSON: {exc}", source) from None


def load_json_file(
    path: str | os.PathLike[str],
    max_bytes: int = DEFAULT_MAX_BYTES,
    what: str = "file",
    max_depth: int = DEFAULT_MAX_DEPTH,
) -> Any:
    """Read and decode a JSON file with size and depth limits (see :func:`loads_json_limited`)."""
    text = read_text_limited(path, max_bytes, what)
    return loads_json_limited(text, str(path), max_depth=max_depth, what=what)


def _yaml_depth(node: Any, limit: int) -> int:
    """Depth of a composed YAML node tree, iteratively (stops counting past ``limit``)."""
    import yaml

    deepest = 0
    stack = [(node, 1)]
    seen: set[int] = set()
    while stack:
        current, depth = stack.pop()
        if id(current) in seen:  # aliases point back into the tree: count each node once
            continue
        seen.add(id(current))
        deepest = max(deepest, depth)
        if deepest > limit:
            return deepest
        if isinstance(current, yaml.SequenceNode):
            stack.extend((child, depth + 1) for child in current.value)
        elif isinstance(current, yaml.MappingNode):
            for key, value in current.value:
                stack.append((key, depth + 1))
                stack.append((value, depth + 1))
    return deepest


def loads_yaml_limited(
    text: str,
    source: str = "<yaml>",
    max_depth: int = DEFAULT_MAX_DEPTH,
    what: str = "file",
) -> Any:
    """Decode YAML with ``yaml.SafeLoader`` only (plain data, no Python objects).

    Raises
    ------
    StudioError
        Syntax errors (with line and column), nesting deeper than ``max_depth``, more than one
        document, or values that only exist in YAML (NaN, infinity).
    """
    import yaml

    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        if node is None:
            return None
        depth = _yaml_depth(node, max_depth)
        if depth > max_depth:
            raise StudioError(
                f"{what} nests {depth}+ levels deep; at most {max_depth} levels are accepted", source
            )
        loader = yaml.SafeLoader(text)
        try:
            data = loader.get_single_data()
        finally:
            loader.dispose()
    except StudioError:
        raise
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark is not None else ""
        raise StudioError(f"{what} is not valid YAML: {exc.problem or exc}{where}", source) from None
    except RecursionError:  # the YAML composer recurses once per level, before the depth check
        raise StudioError(f"{what} nests too deep; at most {max_depth} levels are accepted", source) from None
    except (yaml.YAMLError, ValueError) as exc:
        raise StudioError(f"{what} is not valid YAML: {exc}", source) from None
    _check_finite(data, source, what)
    return data


def _check_finite(data: Any, source: str, what: str) -> None:
    stack = [data]
    seen: set[int] = set()
    while stack:
        item = stack.pop()
        if isinstance(item, (dict, list)):
            if id(item) in seen:  # YAML aliases can share (or even loop back to) a container
                continue
            seen.add(id(item))
        if isinstance(item, float) and not math.isfinite(item):
            raise StudioError(f"{what} holds the number {item}; only finite numbers are allowed", source)
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def find_bad_text(data: Any, limit: int = 5_000_000) -> str | None:
    """The dotted path of the first string (key or value) in decoded JSON data that is not valid
    Unicode — a lone UTF-16 surrogate such as ``"\\udfff"``, which JSON allows as an escape but
    UTF-8 cannot store — or ``None`` when every string is fine.

    Iterative (no recursion); visits at most ``limit`` items.
    """
    stack: list[tuple[Any, str]] = [(data, "")]
    seen = 0
    while stack and seen < limit:
        item, where = stack.pop()
        seen += 1
        if isinstance(item, str):
            if not item.isascii() and _has_surrogate(item):
                return where or "(top level)"
        elif isinstance(item, dict):
            for key, value in item.items():
                path = f"{where}.{key}" if where else str(key)
                if isinstance(key, str) and not key.isascii() and _has_surrogate(key):
                    return path
                stack.append((value, path))
        elif isinstance(item, (list, tuple)):
            stack.extend((value, f"{where}.{i}" if where else str(i)) for i, value in enumerate(item))
    return None


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False
