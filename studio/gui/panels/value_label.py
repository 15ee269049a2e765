"""A headline value that is never elided: the number in the label's (bold) font, its unit smaller
beside it, and both scaled down together when the label is narrower than the text."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QPointF, QRectF, QSize, Qt
from PySide6.QtGui import QFont, QFontMetricsF, QPainter, QPaintEvent
from PySide6.QtWidgets import QLabel, QSizePolicy, QWidget

UNIT_SCALE = 0.72
"""Size of the unit relative to the number."""
MIN_SCALE = 0.7
"""The smallest scale the layout is asked to leave room for (``minimumSizeHint``); painting
shrinks further only when the widget is forced narrower than that."""


def split_unit(text: str) -> tuple[str, str]:
    """``"63.4k tok/s"`` → ``("63.4k", "tok/s")``; text without a space is all number.

    The number is everything up to the first space, the unit the rest (``"2,493 µs"``,
    ``"124.1 GiB"``); ``"$2.05"``, ``"33%"`` and ``"—"`` have no unit.
    """
    number, _sep, unit = text.strip().partition(" ")
    return number, unit.strip()


class ValueLabel(QLabel):
    """``text()`` is the full value (``"63.4k tok/s"``); what is painted always shows all of it.

    The style sheet's font and colour apply to the number; the unit is painted in the same colour,
    normal weight, at :data:`UNIT_SCALE` of the size. When the text is wider than the label both are
    scaled down until it fits (:attr:`scale` says by how much).
    """

    def __init__(self, text: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
        self.scale = 1.0
        self._laid_out_for: tuple | None = None  # (text, contents rect, font) the layout below is for
        self._layout: tuple[str, str, QFont, QFont, float, float] | None = None
        self._font_cache: dict[tuple[str, float], tuple[QFont, QFont, QFontMetricsF, QFontMetricsF]] = {}
        self._widths_for: tuple[str, str] | None = None  # (text, font) the widths below are of
        self._widths: dict[float, float] = {}  # by scale
        self._font_key: str | None = None  # self.font().key() until the font changes
        self.setText(text)

    # ------------------------------------------------------------------ fonts and widths
    def _key(self) -> str:
        """The label's font's key, made once per font (QFont.key builds a string: a result asked
        it ~60 times, through the size hints and the paint)."""
        key = self._font_key
        if key is None:
            key = self._font_key = self.font().key()
        return key

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt API: the font may have changed
        if event.type() in (QEvent.Type.FontChange, QEvent.Type.StyleChange):
            self._font_key = None
        super().changeEvent(event)

    def _fonts(self, scale: float) -> tuple[QFont, QFont]:
        number, unit, _mn, _mu = self._scaled_fonts(scale)
        return number, unit

    def _scaled_fonts(self, scale: float) -> tuple[QFont, QFont, QFontMetricsF, QFontMetricsF]:
        """The number's and the unit's fonts at ``scale`` of the label's font and their metrics, made
        once per font and scale (a new value asks for its width several times: the size hints, the fit)."""
        key = (self._key(), scale)
        made = self._font_cache.get(key)
        if made is None:
            number = _scaled(self.font(), scale)
            unit = _scaled(number, UNIT_SCALE)
            unit.setWeight(QFont.Weight.Normal)
            made = (number, unit, QFontMetricsF(number), QFontMetricsF(unit))
            if len(self._font_cache) > 64:  # a search for a fit makes a dozen; fonts seldom change
                self._font_cache.clear()
            self._font_cache[key] = made
        return made

    def text_width(self, scale: float = 1.0) -> float:
        """Width in pixels of the painted value at ``scale`` (number, gap, unit)."""
        text = self.text()
        key = (text, self._key())
        if key != self._widths_for:  # widths of another text or font
            self._widths_for = key
            self._widths.clear()
        w = self._widths.get(scale)
        if w is None:
            number, unit = split_unit(text)
            _fn, _fu, mn, mu = self._scaled_fonts(scale)
            w = mn.horizontalAdvance(number)
            if unit:
                w += mu.horizontalAdvance(" ") + mu.horizontalAdvance(unit)
            self._widths[scale] = w  # the size hints ask for the same widths again and again
        return w

    def fit_scale(self) -> float:
        """The largest scale (≤ 1) at which the whole value fits the label's current width.

        Font sizes do not scale text widths exactly (hinting, whole pixels), so the scale is
        searched for, not just divided out.
        """
        room = self.contentsRect().width() - 2
        if self.text_width(1.0) <= room:
            return 1.0
        lo, hi = 0.05, 1.0
        for _ in range(10):
            mid = (lo + hi) / 2
            if self.text_width(mid) <= room:
                lo = mid
            else:
                hi = mid
        return lo

    # ------------------------------------------------------------------ size hints
    def sizeHint(self) -> QSize:  # noqa: N802 - room for the value at full size
        m = self.contentsMargins()
        fm = self._scaled_fonts(1.0)[2]  # the label's font, as a copy at scale 1
        return QSize(int(self.text_width(1.0)) + 3 + m.left() + m.right(), int(fm.height()) + m.top() + m.bottom())

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - may shrink to MIN_SCALE, never elides
        m = self.contentsMargins()
        return QSize(int(self.text_width(MIN_SCALE)) + 3 + m.left() + m.right(), self.sizeHint().height())

    def setText(self, text: str) -> None:  # noqa: N802 - Qt API; hints depend on the text
        super().setText(text)
        self.updateGeometry()
        self.update()

    # ------------------------------------------------------------------ painting
    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 - Qt API
        rect = QRectF(self.contentsRect())
        key = (self.text(), rect, self._key())
        layout = self._layout
        if layout is None or key != self._laid_out_for:  # searched for only when text, size or font change
            self._laid_out_for = key
            layout = self._layout = self._lay_out(rect)
        number, unit, fn, fu, baseline, unit_x = layout
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.TextAntialiasing)
        p.setPen(self.palette().color(self.foregroundRole()))
        p.setFont(fn)
        p.drawText(QPointF(rect.left(), baseline), number)
        if unit:
            p.setFont(fu)
            p.drawText(QPointF(unit_x, baseline), unit)
        p.end()

    def _lay_out(self, rect: QRectF) -> tuple[str, str, QFont, QFont, float, float]:
        """(number, unit, their fonts, the baseline, the unit's x) of the value fitted into ``rect``."""
        number, unit = split_unit(self.text())
        self.scale = self.fit_scale()
        fn, fu, mn, mu = self._scaled_fonts(self.scale)
        baseline = rect.top() + (rect.height() + mn.ascent() - mn.descent()) / 2
        unit_x = rect.left() + mn.horizontalAdvance(number) + mu.horizontalAdvance(" ")
        return number, unit, fn, fu, baseline, unit_x


def _scaled(font: QFont, factor: float) -> QFont:
    """A copy of ``font`` at ``factor`` times its size (point or pixel sized)."""
    out = QFont(font)
    if out.pointSizeF() > 0:
        out.setPointSizeF(max(1.0, out.pointSizeF() * factor))
    else:
        out.setPixelSize(max(1, round(out.pixelSize() * factor)))
    return out
