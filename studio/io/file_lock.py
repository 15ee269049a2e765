"""An exclusive lock on a file that is replaced atomically (``os.replace``), for read-modify-write
updates by processes that run at once (three ``calibrate --save-as`` into one project).

The lock is taken on the file itself (``flock``), not on a lock file left beside it. Since every
save replaces the file by a new one, a process that waited holds a lock on the *old* file once it
gets it; it then sees that the path names another file now and locks that one instead, so each
update reads the file the previous one wrote. Where ``flock`` does not exist (Windows) the update
runs without a lock.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path

from studio.core.errors import StudioError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

#: How long an update waits for another one to finish before it gives up.
WAIT_S = 60.0


@contextlib.contextmanager
def locked(path: str | os.PathLike[str], what: str = "file", wait_s: float = WAIT_S) -> Iterator[Path]:
    """Hold an exclusive lock on ``path`` (links followed) while the block runs; a missing file is
    not locked (there is nothing another process could have written yet).

    Raises
    ------
    StudioError
        Another process held the lock for ``wait_s`` seconds.
    """
    target = Path(path).resolve()
    if fcntl is None or not target.is_file():
        yield target
        return
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fd = os.open(target, os.O_RDONLY)
        except FileNotFoundError:  # replaced between the check and the open: look again
            continue
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise StudioError(
                            f"another process has been writing this {what} for {wait_s:.0f} s; try again "
                            "when it has finished",
                            str(path),
                        ) from None
                    time.sleep(0.01)
            try:
                same = os.fstat(fd).st_ino == os.stat(target).st_ino
            except FileNotFoundError:
                same = False
            if same:
                yield target
                return
        finally:
            os.close(fd)  # closing the descriptor releases the lock
