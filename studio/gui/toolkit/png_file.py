"""Save a picture (``QImage`` or ``QPixmap``) as a PNG file with the studio's one atomic writer
(:mod:`studio.io.atomic`): encoded in memory, then written beside the target and renamed, so a
full disk or a kill leaves the old file, never half a picture."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QBuffer, QByteArray, QIODevice
from PySide6.QtGui import QImage, QPixmap

from studio.core.errors import StudioError


def save_png(picture: QImage | QPixmap, path: str | Path, what: str = "PNG image") -> Path:
    """Write ``picture`` to ``path`` as PNG.

    Raises
    ------
    StudioError
        Qt could not encode the picture, or the file cannot be written (the old file is then
        unchanged).
    """
    from studio.io.atomic import write_bytes_atomic

    data = QByteArray()
    buf = QBuffer(data)
    buf.open(QIODevice.OpenModeFlag.WriteOnly)
    ok = picture.save(buf, "PNG")  # type: ignore[call-overload]  # PySide6 takes the format as str (its stubs say bytes, which it refuses)
    buf.close()
    if not ok or data.isEmpty():
        raise StudioError(f"cannot encode the {what} as PNG", str(path))
    return write_bytes_atomic(bytes(data.data()), path, what=what)
