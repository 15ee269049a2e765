"""Validated bundled presets kept on disk between processes, keyed by what they were made from.

Reading a preset file means decoding its JSON and validating every entry (and, for a model, parsing
its Hugging Face ``config.json``); a command line that uses a GPU, its node template, the link kinds,
one model and the bundled example project spends ~10 ms of CPU on it in every process. A validated
value is therefore pickled once into the user's cache folder and read back by later processes:

- The key is a hash of the file's bytes, the cache format, the Python, pydantic and pydantic-core
  versions and the size and modification time of every module of :mod:`studio.core` and
  :mod:`studio.io` (the code that defines and builds the values), so an edited preset, an upgrade or
  a changed model class never meets an old entry.
- Anything wrong with an entry (missing, truncated, corrupt, unreadable, made by other code, not of
  the expected type) is the same as no entry: the file is loaded the normal way, with the normal
  errors, and the entry written again. Writing is best effort (atomic, a failure is ignored) and
  never goes inside the installed package.
- Only values loaded without error are stored; a broken preset is refused every time, as before.

The folder is ``$LAYOUT_STUDIO_CACHE_DIR`` when set, else the platform's user cache folder
(``$XDG_CACHE_HOME/layout-studio`` or ``~/.cache/layout-studio`` on Linux,
``~/Library/Caches/Layout Studio`` on macOS, ``%LOCALAPPDATA%\\Layout Studio\\Cache`` on Windows),
subfolder ``presets``. ``LAYOUT_STUDIO_NO_CACHE=1`` turns the cache off (nothing read or written).
"""

from __future__ import annotations

import os
import pickle
import sys
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import TypeVar

try:  # what hashlib.blake2b is, without importing hashlib's OpenSSL bindings (~1 ms)
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - an interpreter built without it
    from hashlib import blake2b

T = TypeVar("T")

CACHE_DIR_ENV = "LAYOUT_STUDIO_CACHE_DIR"
NO_CACHE_ENV = "LAYOUT_STUDIO_NO_CACHE"

#: Bump when what is stored changes shape in a way the other key parts do not see.
CACHE_FORMAT = 1

#: First bytes of every entry (an entry without them is not read further).
_MAGIC = b"layout-studio preset cache\n"


def cache_dir() -> Path | None:
    """The folder entries live in (not created here), or None when the cache is off."""
    if os.environ.get(NO_CACHE_ENV):
        return None
    env = os.environ.get(CACHE_DIR_ENV)
    if env:
        return Path(env) / "presets"
    try:
        home = Path.home()
    except (RuntimeError, KeyError, OSError):  # no home folder to keep a cache in
        return None
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA")
        root = (Path(base) if base else home / "AppData" / "Local") / "Layout Studio" / "Cache"
    elif sys.platform == "darwin":
        root = home / "Library" / "Caches" / "Layout Studio"
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        root = (Path(xdg) if xdg else home / ".cache") / "layout-studio"
    return root / "presets"


@lru_cache(maxsize=1)
def code_fingerprint() -> bytes:
    """What the cached values depend on besides their file: versions, and the size and modification
    time of every module of ``studio.core`` and ``studio.io`` (read once per process)."""
    import pydantic.version
    import pydantic_core

    import studio

    h = blake2b(digest_size=16)
    h.update(repr((CACHE_FORMAT, sys.version, sys.implementation.cache_tag, pydantic.version.VERSION,
                   pydantic_core.__version__, getattr(studio, "__version__", ""))).encode())
    package = Path(__file__).resolve().parents[1]
    for sub in ("core", "io"):
        try:
            entries = sorted(
                (e.name, st.st_size, st.st_mtime_ns)
                for e in os.scandir(package / sub) if e.name.endswith(".py") for st in (e.stat(),)
            )
        except OSError:
            entries = [("?", -1, -1)]
        h.update(repr((sub, entries)).encode())
    return h.digest()


def entry_path(kind: str, raw: bytes) -> Path | None:
    """Where the value made from ``raw`` (the bytes of one preset file) of ``kind`` is kept."""
    root = cache_dir()
    if root is None:
        return None
    h = blake2b(code_fingerprint(), digest_size=20)
    h.update(kind.encode())
    h.update(b"\0")
    h.update(raw)
    return root / f"{kind}-{h.hexdigest()}.pickle"


def cached(kind: str, raw: bytes, expected: type | tuple[type, ...], build: Callable[[], T]) -> T:
    """The value ``build()`` makes from ``raw``, read from the cache when an entry is there.

    Parameters
    ----------
    kind:
        What the file holds, file-name safe (``gpus``, ``model-llama-3.1-8b``, ...); an entry of
        the same kind made from other bytes or other code is removed when a new one is written.
    raw:
        The file's bytes, as read for this load.
    expected:
        Type of the value; an entry holding anything else is ignored.
    build:
        Loads and validates the value the normal way (its errors propagate, nothing is stored).
    """
    path = entry_path(kind, raw)
    if path is not None:
        value = _read(path, expected)
        if value is not None:
            return value
    value = build()
    if path is not None:
        _write(path, kind, value)
    return value


def _read(path: Path, expected: type | tuple[type, ...]):
    try:
        with open(path, "rb") as fh:
            if fh.read(len(_MAGIC)) != _MAGIC:
                return None
            value = pickle.load(fh)
    except Exception:  # noqa: BLE001 - a missing, corrupt or foreign entry is no entry
        return None
    return value if isinstance(value, expected) else None


def _write(path: Path, kind: str, value: object) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        with open(tmp, "wb") as fh:
            fh.write(_MAGIC)
            fh.write(data)
        os.replace(tmp, path)
    except Exception:  # noqa: BLE001 - a cache that cannot be written is only slower
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
        return
    try:  # entries of this kind made from other bytes or code would never be read again
        for old in path.parent.glob(f"{kind}-*.pickle"):
            digest = old.name[len(kind) + 1:-len(".pickle")]
            if old.name != path.name and len(digest) == 40 and all(c in "0123456789abcdef" for c in digest):
                old.unlink(missing_ok=True)
    except OSError:
        pass
