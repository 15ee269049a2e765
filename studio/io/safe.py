"""Limited, execution-free readers shared by every loader (project files, presets, ``config.json``,
topology text, benchmark logs, autosaves).

Use these instead of ``Path.read_text`` / ``json.loads`` when a file comes from a user or a colleague:

* :func:`read_bytes_limited` / :func:`read_text_limited` refuse files over a size limit *before*
  reading them, and turn OS and UTF-8 errors into :class:`~studio.core.errors.StudioError`.
* :func:`loads_json_limited` decodes JSON with a nesting-depth limit (checked before the recursive
  decoder runs, so a ``[[[[...`` bomb cannot blow the stack) and a limit on the lists and objects
  for the text's size (``[[],[],…]`` would take 20x its size as Python objects), refuses
  ``NaN``/``Infinity`` and numbers that overflow to infinity, and reports syntax errors with line
  and column.
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
    return json_shape(text)[0]


def json_shape(text: str | bytes) -> tuple[int, int]:
    """(deepest nesting, number of lists and objects) of JSON text, brackets inside strings ignored.

    The count says what decoding will cost before it is done: every list or object becomes a
    Python object of at least :data:`CONTAINER_BYTES` bytes however short its text (``{}`` is two
    characters), see :func:`loads_json_limited`. The text is scanned in pieces of
    :data:`SCAN_CHUNK` characters, so the scan itself costs a fixed few MiB, not a multiple of the
    text (index arrays of a text made of brackets took 8 bytes per character).
    """
    state = _ShapeScan()
    for start in range(0, len(text), SCAN_CHUNK):
        piece = text[start:start + SCAN_CHUNK]
        state.feed(piece.encode("utf-8", "surrogatepass") if isinstance(piece, str) else piece)
    return state.deepest, state.containers


#: Characters of JSON text :func:`json_shape` looks at in one go.
SCAN_CHUNK = 1 << 18


class _ShapeScan:
    """The state :func:`json_shape` carries from one piece of text to the next."""

    def __init__(self) -> None:
        self.in_string = False  # the piece starts inside a string
        self.backslashes = 0  # length of the run of backslashes that ended the last piece
        self.depth = 0
        self.deepest = 0
        self.containers = 0

    def feed(self, raw: bytes) -> None:
        arr = np.frombuffer(raw, dtype=np.uint8)
        if arr.size == 0:
            return
        quotes = np.flatnonzero(arr == ord('"'))
        slashes = np.flatnonzero(arr == ord("\\"))
        carried = self.backslashes
        if slashes.size:
            # A quote is escaped when an odd run of backslashes ends just before it; a run at the
            # piece's start continues the one that ended the last piece.
            run_start = np.ones(slashes.size, dtype=bool)
            run_start[1:] = np.diff(slashes) != 1
            starts = np.flatnonzero(run_start)
            ends = np.append(starts[1:], slashes.size) - 1
            lengths = ends - starts + 1
            if slashes[0] == 0:
                lengths[0] += carried
            tail = int(lengths[-1]) if slashes[-1] == arr.size - 1 else 0
            escaped = slashes[ends[lengths % 2 == 1]] + 1
            if quotes.size:
                quotes = quotes[~np.isin(quotes, escaped)]
        else:
            tail = 0
        if carried % 2 == 1 and arr[0] == ord('"') and quotes.size and quotes[0] == 0:
            quotes = quotes[1:]  # escaped by the run that ended the last piece
        self.backslashes = tail  # a piece of backslashes only: its run already counts the carried one
        brackets = np.flatnonzero((arr == ord("[")) | (arr == ord("{")) | (arr == ord("]")) | (arr == ord("}")))
        if brackets.size:
            inside = (np.searchsorted(quotes, brackets) + int(self.in_string)) % 2 == 1
            chars = arr[brackets[~inside]]
            if chars.size:
                opens = (chars == ord("[")) | (chars == ord("{"))
                depths = np.cumsum(np.where(opens, 1, -1).astype(np.int64)) + self.depth
                self.deepest = max(self.deepest, int(depths.max()))
                self.depth = int(depths[-1])
                self.containers += int(np.count_nonzero(opens))
        self.in_string ^= bool(quotes.size % 2)


#: The least a decoded JSON list or object costs in CPython (an empty list is 56 bytes, an empty
#: dict 64, plus the 8-byte slot that holds it), whatever the length of its text.
CONTAINER_BYTES = 64
#: Decoding may cost at most this many times the text's size in lists and objects alone.
MAX_EXPANSION = 10


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
        Not UTF-8, not JSON (with line and column), nested deeper than ``max_depth``, holding
        ``NaN``/``Infinity``/an out-of-range number, or so many short lists and objects that
        decoding them would take more than :data:`MAX_EXPANSION` times the text's size.
    """
    if isinstance(text, bytes):
        text = decode_utf8(text, source, what)
    depth, containers = json_shape(text)
    if depth > max_depth:
        raise StudioError(
            f"{what} nests {depth} levels deep; at most {max_depth} levels are accepted", source
        )
    if containers * CONTAINER_BYTES > MAX_EXPANSION * max(len(text), 1024):
        # ``[[],[],…]``: 3 characters per list, 64+ bytes once decoded; refused before decoding so
        # that reading a file costs a small multiple of its size (a 64 MiB project of these: 1.4 GB)
        raise StudioError(
            f"{what} holds {containers:,} lists or objects in {file_size(len(text))} (one every "
            f"{len(text) / containers:.1f} characters); decoded they would take "
            f"{file_size(containers * CONTAINER_BYTES)}, more than {MAX_EXPANSION}x the file, so it is "
            "refused (real files hold far fewer, longer entries)",
            source,
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


def loads_yaml_limited(
    text: str,
    source: str = "<yaml>",
    max_depth: int = DEFAULT_MAX_DEPTH,
    what: str = "file",
) -> Any:
    """Decode YAML as plain data (mappings, lists, strings, numbers, booleans, null, dates); no
    Python object is ever built from a tag.

    The data is built straight from the parser's events (libyaml's when present), one event at a
    time: PyYAML's own loader first composes a tree of nodes with two position marks each, about
    250 bytes per node, so a 1 MiB config of ``[],`` took 480 MB; this way the cost is the data's.

    Raises
    ------
    StudioError
        Syntax errors (with line and column), nesting deeper than ``max_depth``, more than one
        document, a tag that is not plain data, or values that only exist in YAML (NaN, infinity).
    """
    import yaml

    try:
        data = _yaml_data(text, source, max_depth, what)
    except StudioError:
        raise
    except yaml.MarkedYAMLError as exc:
        if "nesting depth" in str(exc.problem):  # libyaml's own limit (1,000), met while it reads ahead
            raise StudioError(f"{what} nests too deep; at most {max_depth} levels are accepted", source) from None
        mark = exc.problem_mark
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark is not None else ""
        raise StudioError(f"{what} is not valid YAML: {exc.problem or exc}{where}", source) from None
    except (yaml.YAMLError, ValueError) as exc:
        raise StudioError(f"{what} is not valid YAML: {exc}", source) from None
    return data


_MERGE = object()  # the ``<<`` key of a YAML merge, until its value arrives
_SCALAR_TAGS = frozenset(f"tag:yaml.org,2002:{t}" for t in ("null", "bool", "int", "float", "str", "timestamp",
                                                              "binary"))
_PLAIN_TAGS = {"seq": (None, "!", "tag:yaml.org,2002:seq"), "map": (None, "!", "tag:yaml.org,2002:map")}


def _yaml_data(text: str, source: str, max_depth: int, what: str) -> Any:
    """The data of the one YAML document in ``text``, built from parser events (see
    :func:`loads_yaml_limited`)."""
    import yaml
    from yaml.constructor import SafeConstructor
    from yaml.nodes import ScalarNode
    from yaml.resolver import Resolver

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    resolver, constructor = Resolver(), SafeConstructor()
    anchors: dict[str, Any] = {}
    stack: list[list[Any]] = []  # [container, key waiting for its value, merges] (mappings)
    budget = MAX_EXPANSION * max(len(text), 1024) // CONTAINER_BYTES
    containers = 0
    no_key = object()
    root: list[Any] = []
    documents = 0

    def where(event: Any) -> str:
        mark = event.start_mark
        return f" at line {mark.line + 1} column {mark.column + 1}" if mark is not None else ""

    def add(value: Any, event: Any) -> None:
        if not stack:
            root.append(value)
            return
        frame = stack[-1]
        if isinstance(frame[0], list):
            frame[0].append(value)
        elif frame[1] is no_key:
            if isinstance(value, (dict, list)):
                raise StudioError(f"{what} is not valid YAML: a key must be a plain value{where(event)}", source)
            frame[1] = value
        else:
            key, frame[1] = frame[1], no_key
            if key is _MERGE:
                frame[2].append((value, event))  # merged when the mapping ends: its own keys win
            else:
                frame[0][key] = value

    def start(container: Any, event: Any, kind: str) -> None:
        if event.tag not in _PLAIN_TAGS[kind]:
            raise StudioError(f"{what} is not valid YAML: could not determine a constructor for the tag "
                              f"'{event.tag}'{where(event)}", source)
        if len(stack) >= max_depth:
            raise StudioError(f"{what} nests {max_depth + 1}+ levels deep; at most {max_depth} levels are "
                              "accepted", source)
        nonlocal containers
        containers += 1
        if containers > budget:
            raise StudioError(
                f"{what} holds more than {budget:,} lists or mappings in {file_size(len(text))}; decoded "
                f"they would take more than {MAX_EXPANSION}x the file, so it is refused (real files hold far "
                "fewer, longer entries)",
                source,
            )
        add(container, event)
        if event.anchor is not None:
            anchors[event.anchor] = container
        stack.append([container, no_key, []])

    for event in yaml.parse(text, Loader=loader):
        if isinstance(event, yaml.DocumentStartEvent):
            documents += 1
            if documents > 1:
                raise StudioError(f"{what} is not valid YAML: it holds more than one document{where(event)}", source)
        elif isinstance(event, yaml.AliasEvent):
            if event.anchor not in anchors:
                raise StudioError(f"{what} is not valid YAML: found undefined alias '{event.anchor}'{where(event)}",
                                  source)
            add(anchors[event.anchor], event)
        elif isinstance(event, yaml.ScalarEvent):
            tag = event.tag
            if tag is None or tag == "!":
                tag = resolver.resolve(ScalarNode, event.value, event.implicit)
            if tag == "tag:yaml.org,2002:merge" and stack and isinstance(stack[-1][0], dict) and stack[-1][1] is no_key:
                stack[-1][1] = _MERGE
                continue
            build = SafeConstructor.yaml_constructors.get(tag) if tag in _SCALAR_TAGS else None
            if build is None:
                raise StudioError(f"{what} is not valid YAML: could not determine a constructor for the tag "
                                  f"'{tag}'{where(event)}", source)
            marks: tuple[Any, Any] = (event.start_mark, event.end_mark)  # libyaml's marks serve as well
            value = build(constructor, ScalarNode(tag, event.value, *marks, event.style))
            if isinstance(value, float) and not math.isfinite(value):
                raise StudioError(f"{what} holds the number {value}{where(event)}; only finite numbers are allowed",
                                  source)
            if event.anchor is not None:
                anchors[event.anchor] = value
            add(value, event)
        elif isinstance(event, yaml.SequenceStartEvent):
            start([], event, "seq")
        elif isinstance(event, yaml.MappingStartEvent):
            start({}, event, "map")
        elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            container, _key, merges = stack.pop()
            for value, at in merges:
                for part in value if isinstance(value, list) else [value]:
                    if not isinstance(part, dict):
                        raise StudioError(f"{what} is not valid YAML: '<<' merges mappings only{where(at)}", source)
                    for k, v in part.items():
                        container.setdefault(k, v)  # the mapping's own keys, then earlier merges, win
    return root[0] if root else None


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
