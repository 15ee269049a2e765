"""Icons (SVG) and style sheets from the bundled ``resources/`` folder; light/dark theme."""

from __future__ import annotations

from functools import lru_cache

from PySide6.QtCore import QByteArray
from PySide6.QtGui import QGuiApplication, QIcon, QImage, QPainter, QPalette, QPixmap
from PySide6.QtSvg import QSvgRenderer

from studio.io.presets import resources_root


@lru_cache(maxsize=64)
def icon(name: str) -> QIcon:
    """The icon ``resources/icons/NAME.svg``, rendered crisply at every device pixel ratio; an
    empty icon if the file is missing (a missing icon must not stop the window)."""
    node = resources_root() / "icons" / f"{name}.svg"
    try:
        data = node.read_bytes()
    except OSError:
        return QIcon()
    renderer = QSvgRenderer(QByteArray(data))
    ic = QIcon()
    for size in (16, 24, 32, 48, 64):
        img = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
        img.fill(0)
        p = QPainter(img)
        renderer.render(p)
        p.end()
        ic.addPixmap(QPixmap.fromImage(img))
    return ic


def is_dark(app: QGuiApplication | None = None) -> bool:
    """Whether the system palette is dark (window colour darker than its text)."""
    app = app or QGuiApplication.instance()
    if app is None:
        return False
    pal = app.palette()
    return pal.color(QPalette.ColorRole.Window).lightness() < pal.color(QPalette.ColorRole.WindowText).lightness()


def style_sheet(dark: bool) -> str:
    """The QSS of the light or dark theme ("" if it cannot be read)."""
    node = resources_root() / "style" / ("dark.qss" if dark else "light.qss")
    try:
        return node.read_text(encoding="utf-8")
    except OSError:
        return ""
