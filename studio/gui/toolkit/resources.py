"""Icons (SVG) and style sheets from the bundled ``resources/`` folder; light/dark theme; the
themed QApplication every window and offscreen drawing runs in (:func:`application`)."""

from __future__ import annotations

import sys
from functools import lru_cache
from typing import cast

from PySide6.QtCore import QByteArray
from PySide6.QtGui import QGuiApplication, QIcon, QImage, QPainter, QPalette, QPixmap
from PySide6.QtSvg import QSvgRenderer
from PySide6.QtWidgets import QApplication

from studio.io.presets import resources_root

#: Stroke colour of the monochrome line icons, and what it becomes on a dark palette.
LINE_COLOR, LINE_COLOR_DARK = "#495057", "#dee2e6"
#: Opacity of an icon drawn for a disabled action: clearly fainter than an enabled one in both themes.
DISABLED_OPACITY = 0.3


def icon(name: str, dark: bool | None = None) -> QIcon:
    """The icon ``resources/icons/NAME.svg``, rendered crisply at every device pixel ratio; an
    empty icon if the file is missing (a missing icon must not stop the window).

    On a dark palette (``dark``; ``None`` = ask the application) the grey line icons are drawn
    light, and every icon gets an explicit disabled form at :data:`DISABLED_OPACITY`, so a disabled
    action is told apart from an enabled one in both themes.
    """
    return _icon(name, is_dark() if dark is None else dark)


@lru_cache(maxsize=128)
def _icon(name: str, dark: bool) -> QIcon:
    node = resources_root() / "icons" / f"{name}.svg"
    try:
        data = node.read_bytes()
    except OSError:
        return QIcon()
    if dark:
        data = data.replace(LINE_COLOR.encode(), LINE_COLOR_DARK.encode())
    renderer = QSvgRenderer(QByteArray(data))
    ic = QIcon()
    for size in (16, 24, 32, 48, 64):
        img = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
        img.fill(0)
        p = QPainter(img)
        renderer.render(p)
        p.end()
        ic.addPixmap(QPixmap.fromImage(img))
        faint = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
        faint.fill(0)
        p = QPainter(faint)
        p.setOpacity(DISABLED_OPACITY)
        p.drawImage(0, 0, img)
        p.end()
        ic.addPixmap(QPixmap.fromImage(faint), QIcon.Mode.Disabled)
    return ic


def is_dark(app: QGuiApplication | None = None) -> bool:
    """Whether the system palette is dark (window colour darker than its text)."""
    app = app or cast("QGuiApplication | None", QGuiApplication.instance())
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


def application() -> QApplication:
    """The running QApplication, created (and themed) if needed."""
    app = cast("QApplication | None", QApplication.instance())
    if app is None:
        app = QApplication(sys.argv[:1])
        app.setApplicationName("Layout Studio")
        app.setOrganizationName("LayoutStudio")
        app.setWindowIcon(icon("app"))
        from studio.gui.toolkit import qt_messages  # drop the offscreen plugin's no-op warnings

        qt_messages.install(app.platformName())
    apply_theme(app)
    return app


def apply_theme(app: QApplication) -> None:
    """Light or dark style sheet, following the system palette.

    Setting a sheet re-polishes every widget that exists (0.3 s with a window open), even when it is
    the sheet already set; every offscreen render calls :func:`application`, so an unchanged sheet
    is left as it is."""
    sheet = style_sheet(is_dark(app))
    if app.styleSheet() != sheet:
        app.setStyleSheet(sheet)
