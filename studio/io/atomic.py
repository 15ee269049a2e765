"""The one writer every output goes through: atomic, regular files only, tidy on failure.

* :func:`write_text_atomic` / :func:`write_bytes_atomic` write one file: the data goes to a
  temporary file in the target's folder, is flushed and fsynced, and is renamed over the target
  with :func:`os.replace`, so a crash at any moment leaves the old or the new file, never a mix.
* :func:`write_files_atomic` writes a *set* of files (an export): every file goes to a temporary
  folder first, every target is checked, and only then are the files moved into place, so a
  problem found on the way leaves every old file untouched.

Targets that exist must be regular files: a device node, FIFO, socket or folder is refused, never
replaced. A symbolic link at the target is replaced by the new file, never written through (the file
it named is left as it was; exports, ``--csv``, reports, profiles and ``import-topo -o``; a link to a device, FIFO or
folder is refused like one), unless the caller asks to follow it (``follow_links=True``: saving a project opened through a link updates the linked file).
Every output file of the studio goes through this module: project saves, autosave snapshots, exports,
``sweep --csv``, reports (HTML and PDF), calibration profiles, ``import-topo -o`` and PNG images. A missing folder is created only when the caller
asks (``make_dirs=True``). The temporary file is removed on every path Python still runs; files
left by a ``kill -9`` (``.NAME.PID.RANDOM.tmp``) are removed by the next write to the same target
once their process is gone.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Mapping
from pathlib import Path

from studio.core.errors import StudioError


def _why(exc: OSError) -> str:
    return exc.strerror or exc.__class__.__name__


def check_target(path: str | os.PathLike[str], make_dirs: bool = False, what: str = "file",
                 follow_links: bool = False) -> Path:
    """Where a write to ``path`` will land, after checking that it may be written there.

    Parameters
    ----------
    path:
        The target file.
    make_dirs:
        Create missing folders (otherwise a missing folder is an error).
    what:
        What is written, for messages ("project file", "profile").
    follow_links:
        A symbolic link at ``path`` names the target (True), or is itself replaced (False).

    Returns
    -------
    Path
        The target (with ``follow_links``, links resolved).

    Raises
    ------
    StudioError
        The target is a folder or a special file, or its folder is missing (and ``make_dirs`` is
        false), not a folder, or cannot be created.
    """
    p = Path(path)
    link = p.is_symlink()
    if link and follow_links:
        p = p.resolve()
        link = False
    try:
        st = os.stat(p)  # a link's target is only looked at (stat opens nothing), never written
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise StudioError(f"cannot write {what} ({_why(exc)})", str(p)) from None
    if link and st is not None and stat.S_ISREG(st.st_mode):
        st = None  # a link to a file: the link itself is replaced below, the file left as it was
    if st is not None:
        if stat.S_ISDIR(st.st_mode):
            raise StudioError(f"this is a folder; give a file name to write the {what} to", str(p))
        if not stat.S_ISREG(st.st_mode):
            raise StudioError(
                f"this is not a regular file (a device, pipe or socket); {what}s are only written "
                "to regular files",
                str(p),
            )
        return p
    directory = p.parent if str(p.parent) else Path(".")
    if directory.is_dir():
        return p
    if directory.exists():
        raise StudioError(f"cannot write {what}: '{directory}' is not a folder", str(p))
    if not make_dirs:
        raise StudioError(f"cannot write {what}: the folder '{directory}' does not exist", str(p))
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StudioError(f"cannot create the folder '{directory}' ({_why(exc)})", str(p)) from None
    return p


_TMP_NAME = re.compile(r"\.(?P<name>.+)\.(?P<pid>[0-9]{1,10})\.[a-z0-9_]{1,16}\.tmp")


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):  # OverflowError: above any possible PID
        return False
    except OSError:  # exists but belongs to someone else, or the platform cannot tell
        return True
    return True


def remove_stale_temps(target: Path) -> int:
    """Delete ``.NAME.PID.*.tmp`` files next to ``target`` whose writing process is gone (left by a
    kill during a save). Returns how many were removed."""
    directory = target.parent if str(target.parent) else Path(".")
    removed = 0
    prefix = f".{target.name}."
    try:
        entries = [e for e in os.scandir(directory) if e.name.startswith(prefix) and e.name.endswith(".tmp")]
    except OSError:
        return 0
    for entry in entries[:1000]:
        m = _TMP_NAME.fullmatch(entry.name)
        if m is None or m.group("name") != target.name or _pid_alive(int(m.group("pid"))):
            continue
        with contextlib.suppress(OSError):
            if entry.is_file(follow_symlinks=False):
                os.unlink(entry.path)
                removed += 1
    return removed


def _mode_of(p: Path) -> int | None:
    try:
        st = os.lstat(p)
    except OSError:
        return None
    return stat.S_IMODE(st.st_mode) if stat.S_ISREG(st.st_mode) else None


def _default_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def backup_path(path: str | os.PathLike[str]) -> Path:
    """Where a write with ``keep_backup=True`` keeps the previous version of ``path``."""
    p = Path(path)
    return p.with_name(p.name + ".bak")


def _make_backup(p: Path) -> None:
    """Point ``NAME.bak`` at the current file without ever touching ``NAME`` itself.

    A hard link is instant and costs no space (after the rename the target is a new inode, the
    link keeps the old one); where links fail (some network or FAT file systems) a copy is made.
    The backup itself is replaced atomically, so a crash here leaves the old backup.
    """
    bak = backup_path(p)
    if bak.exists() and not bak.is_file():
        return  # never replace a folder or device that happens to be called NAME.bak
    tmp_bak = p.with_name(f".{p.name}.bak.{os.getpid()}.tmp")
    with contextlib.suppress(OSError):
        os.unlink(tmp_bak)
    try:
        try:
            os.link(p, tmp_bak)
        except OSError:
            shutil.copy2(p, tmp_bak)
        os.replace(tmp_bak, bak)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp_bak)
        raise


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


def _encode(text: str, target: Path, what: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise StudioError(
            f"cannot write {what}: the text holds {text[exc.start]!a} at character {exc.start}, "
            "which is not valid Unicode (a lone surrogate); nothing was written",
            str(target),
        ) from None


def write_bytes_atomic(
    data: bytes,
    path: str | os.PathLike[str],
    keep_backup: bool = False,
    make_dirs: bool = False,
    what: str = "file",
    follow_links: bool = False,
) -> Path:
    """Write ``data`` to ``path`` atomically (see the module docstring).

    Parameters
    ----------
    data:
        The bytes.
    path:
        The target; a symbolic link there is replaced (``follow_links``: the file it names is).
    keep_backup:
        Keep the previous file as ``NAME.bak``.
    make_dirs:
        Create missing folders.
    what:
        What is written, for messages.
    follow_links:
        Write to the file a link at ``path`` names instead of replacing the link.

    Returns
    -------
    Path
        The file written.

    Raises
    ------
    StudioError
        The target is not a regular file, its folder is missing or not writable, or the disk is
        full; the old file is then left untouched and no temporary file remains.
    """
    p = check_target(path, make_dirs=make_dirs, what=what, follow_links=follow_links)
    directory = p.parent if str(p.parent) else Path(".")
    remove_stale_temps(p)
    old_mode = _mode_of(p)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.{os.getpid()}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise StudioError(f"cannot write in folder ({_why(exc)})", str(directory)) from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, old_mode if old_mode is not None else _default_mode())
        if keep_backup and old_mode is not None:
            with contextlib.suppress(OSError):  # no backup is better than no save
                _make_backup(p)
        check_target(p, what=what)  # still a regular file (or missing) right before the rename
        os.replace(tmp, p)  # the only step that touches the target: atomic
        _fsync_dir(directory)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise StudioError(f"cannot save ({_why(exc)}); the previous file is unchanged", str(p)) from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return p


def write_text_atomic(
    text: str,
    path: str | os.PathLike[str],
    keep_backup: bool = False,
    make_dirs: bool = False,
    what: str = "file",
    follow_links: bool = False,
) -> Path:
    """Write UTF-8 ``text`` (as given, no line-end translation) to ``path`` atomically; see :func:`write_bytes_atomic`."""
    p = Path(path)
    return write_bytes_atomic(_encode(text, p, what), p, keep_backup=keep_backup, make_dirs=make_dirs, what=what,
                              follow_links=follow_links)


def write_files_atomic(
    files: Mapping[str | os.PathLike[str], str | bytes],
    make_dirs: bool = False,
    what: str = "file",
    modes: Mapping[str | os.PathLike[str], int] | None = None,
) -> list[Path]:
    """Write a set of files so that a failure leaves every old file as it was.

    Every file is first written to a temporary folder next to its target (flushed and fsynced);
    then every target is checked (a regular file or missing, its folder present); only then are
    the files renamed into place, one :func:`os.replace` each. Text is written as UTF-8.

    Parameters
    ----------
    files:
        Target path -> text or bytes.
    make_dirs:
        Create missing folders.
    what:
        What is written, for messages.
    modes:
        Permission bits of some targets (e.g. ``0o755`` for a script); the others keep the old
        file's, or get the default of a new file.

    Returns
    -------
    list[Path]
        The files written, in the order given.

    Raises
    ------
    StudioError
        A target is not a regular file, a folder is missing or not writable, the disk is full, or
        a text is not valid Unicode. Nothing has been replaced then, and the temporary folders are
        removed.
    """
    wanted = {Path(k): v for k, v in (modes or {}).items()}
    targets = [(check_target(path, make_dirs=make_dirs, what=what), content) for path, content in files.items()]
    staging: dict[Path, Path] = {}
    placed: list[tuple[Path, Path]] = []
    try:
        for target, content in targets:
            directory = target.parent if str(target.parent) else Path(".")
            if directory not in staging:
                try:
                    staging[directory] = Path(tempfile.mkdtemp(prefix=f".export.{os.getpid()}.", dir=directory))
                except OSError as exc:
                    raise StudioError(f"cannot write in folder ({_why(exc)})", str(directory)) from None
            data = content if isinstance(content, bytes) else _encode(content, target, what)
            tmp = staging[directory] / target.name
            try:
                with open(tmp, "wb") as fh:
                    fh.write(data)
                    fh.flush()
                    os.fsync(fh.fileno())
                mode = wanted.get(target, _mode_of(target))
                os.chmod(tmp, mode if mode is not None else _default_mode())
            except OSError as exc:
                raise StudioError(f"cannot write {what} ({_why(exc)}); no file was changed", str(target)) from None
            placed.append((tmp, target))
        for _tmp, target in placed:
            check_target(target, what=what)
        for tmp, target in placed:
            try:
                os.replace(tmp, target)
            except OSError as exc:
                raise StudioError(f"cannot write {what} ({_why(exc)})", str(target)) from None
        for directory in staging:
            _fsync_dir(directory)
    finally:
        for folder in staging.values():
            shutil.rmtree(folder, ignore_errors=True)
    return [target for _tmp, target in placed]
