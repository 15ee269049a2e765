"""Dark theme: line icons are drawn light, and disabled actions are told apart from enabled ones."""

from __future__ import annotations

from PySide6.QtCore import QSize
from PySide6.QtGui import QIcon

from studio.gui.toolkit.resources import DISABLED_OPACITY, icon


def _ink(ic: QIcon, mode: QIcon.Mode = QIcon.Mode.Normal) -> tuple[float, float]:
    """Mean lightness and alpha of the icon's drawn pixels at 32 px."""
    img = ic.pixmap(QSize(32, 32), mode).toImage()
    px = [img.pixelColor(x, y) for x in range(img.width()) for y in range(img.height())]
    drawn = [c for c in px if c.alpha() > 20]
    return (sum(c.lightnessF() for c in drawn) / len(drawn), max(c.alphaF() for c in drawn))


def test_line_icons_are_light_on_a_dark_palette(qtbot):
    light, _ = _ink(icon("zoom-in", dark=False))
    dark, _ = _ink(icon("zoom-in", dark=True))
    assert light < 0.4 < 0.8 < dark


def test_disabled_icons_are_fainter_in_both_themes(qtbot):
    for dark in (False, True):
        ic = icon("fit", dark=dark)
        _, normal = _ink(ic)
        _, disabled = _ink(ic, QIcon.Mode.Disabled)
        assert disabled <= normal * DISABLED_OPACITY + 0.02
