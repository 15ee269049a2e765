"""The prefix cache under the memory bars: a line with its hit rate and the prefill it saves, then
the KV tiers of one replica — HBM, host DRAM and NVMe, each a bar of its capacity filled by what the
running batch and the reused prefixes (the working set) take of it, with the share of prompt tokens
each tier serves. A click shows the hit rate's explanation.

:func:`paint_tier_bars` draws on any QPainter, so the report draws the same picture.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QColor, QFont, QFontMetrics, QPainter, QPen
from PySide6.QtWidgets import QSizePolicy, QWidget

from studio.service.kv_tiers import TierUse

#: Fill colours (light, the row's text is written over them): the running batch's KV, the cached
#: prefixes, the tier's unused capacity.
RUNNING_COLOR = "#a5d8ff"
PREFIX_COLOR = "#b2f2bb"
EMPTY_COLOR = "#f1f3f5"
#: The short name each tier's row starts with (the tooltip names it in full).
SHORT = {"HBM": "HBM", "host DRAM": "Host", "NVMe": "NVMe"}
#: Height of one row (px) and the part of the widget the memory bars' minimum keeps for it (the
#: window's minimum grows by no more).
ROW_H = 13
TIER_ROOM = 12


def headline_forms(pc: dict[str, float]) -> list[str]:
    """The first line, longest form first: hit rate and prompt tokens not prefilled per request."""
    hit, saved, prompt = pc["hit_rate"], pc["saved_prefill_tokens"], pc["prompt_tokens"]
    return [f"Prefix cache {hit:.0%} hit · saves {saved:,.0f} of {prompt:,.0f} prompt tokens' prefill",
            f"Prefix cache {hit:.0%} hit · −{saved:,.0f} of {prompt:,.0f} tok prefill",
            f"Prefix cache {hit:.0%} hit · −{saved:,.0f} tok prefill",
            f"Prefix {hit:.0%} hit · −{saved:,.0f} tok"]


def _gib(x: float) -> str:
    return f"{x:,.0f}" if x >= 10 else f"{x:,.1f}"


def row_text(t: TierUse) -> str:
    """What the row of tier ``t`` says (over its bar, where it fits)."""
    if t.capacity_gib <= 0:
        return "none"
    node = f" (node {_gib(t.node_gib)})" if t.node_gib is not None else ""
    return f"{_gib(t.used_gib)} of {_gib(t.capacity_gib)} GiB{node} · hits {t.hit_rate:.0%}"


def row_forms(t: TierUse) -> list[str]:
    """The row's text from the longest to the shortest form, the first that fits is drawn."""
    if t.capacity_gib <= 0:
        return ["none"]
    return [row_text(t), f"{_gib(t.used_gib)} of {_gib(t.capacity_gib)} GiB · hits {t.hit_rate:.0%}",
            f"{_gib(t.used_gib)}/{_gib(t.capacity_gib)} GiB · {t.hit_rate:.0%}",
            f"{_gib(t.used_gib)}/{_gib(t.capacity_gib)} {t.hit_rate:.0%}"]


def describe_tiers(tiers: Sequence[TierUse]) -> str:
    """Tooltip: every tier's parts in GiB, and what the figures mean."""
    rows = ["KV tiers of one replica (the LRU fills them in order: HBM, host DRAM, NVMe)"]
    for t in tiers:
        if t.capacity_gib <= 0:
            rows.append(f"{t.name}: no such tier")
            continue
        part = f"running batch {_gib(t.running_gib)} GiB, " if t.running_gib else ""
        rows.append(f"{t.name}: {part}reused prefixes {_gib(t.prefix_gib)} GiB of {_gib(t.capacity_gib)} GiB; "
                    f"serves {t.hit_rate:.1%} of prompt tokens")
    rows.append("Reused prefixes: the system prompt once, the history of every conversation between turns, "
                "the re-read documents")
    return "\n".join(rows)


def paint_tier_bars(p: QPainter, rect: QRectF, tiers: Sequence[TierUse], font: QFont | None = None,
                    headline: Sequence[str] = ()) -> list[str]:
    """Draw in ``rect`` the first of ``headline``'s forms that fits, then one row per tier: its
    short name, then a bar of its capacity filled by the running batch and the reused prefixes,
    with used / capacity and hits written over it. Returns the text of each line as shown."""
    font = font or QFont()
    fm = QFontMetrics(font)
    p.save()
    p.setFont(font)
    shown: list[str] = []
    if not tiers:
        p.restore()
        return shown
    line = rect.height() / (len(tiers) + (1 if headline else 0))
    if headline:
        bold = QFont(font)
        bold.setBold(True)
        p.setFont(bold)
        bfm = QFontMetrics(bold)
        head = next((f for f in headline if bfm.horizontalAdvance(f) <= rect.width()),
                    bfm.elidedText(headline[-1], Qt.TextElideMode.ElideRight, int(rect.width())))
        p.setPen(QColor("#212529"))
        p.drawText(QRectF(rect.left(), rect.top(), rect.width(), line),
                   Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, head)
        shown.append(head)
        p.setFont(font)
        rect = rect.adjusted(0, line, 0, 0)
    name_w = max(fm.horizontalAdvance(SHORT.get(t.name, t.name)) for t in tiers) + 6
    bar_w = max(rect.width() - name_w, 10.0)
    for k, t in enumerate(tiers):
        y = rect.top() + k * line
        bar = QRectF(rect.left() + name_w, y + 1, bar_w, max(line - 2, 4.0))
        p.setPen(QColor("#212529"))
        p.drawText(QRectF(rect.left(), y, name_w, line), Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter,
                   SHORT.get(t.name, t.name))
        p.fillRect(bar, QColor(EMPTY_COLOR))
        if t.capacity_gib > 0:
            x = bar.left()
            for gib, color in ((t.running_gib, RUNNING_COLOR), (t.prefix_gib, PREFIX_COLOR)):
                w = bar.width() * min(gib / t.capacity_gib, 1.0)
                p.fillRect(QRectF(x, bar.top(), w, bar.height()), QColor(color))
                x += w
        p.setPen(QPen(QColor("#868e96"), 1))
        p.drawRect(bar)
        p.setPen(QColor("#212529"))
        forms = row_forms(t)
        text = next((f for f in forms if fm.horizontalAdvance(f) <= bar.width() - 6),
                    fm.elidedText(forms[-1], Qt.TextElideMode.ElideRight, int(bar.width() - 6)))
        p.drawText(QPointF(bar.left() + 3, y + (line + fm.ascent() - fm.descent()) / 2), text)
        shown.append(text)
    p.restore()
    return shown


class KvTierBar(QWidget):
    """Widget showing :func:`paint_tier_bars` (hidden by its owner when the plan has no prefix cache).

    Signals
    -------
    clicked()
        The user clicked it (the owner shows the hit rate's explanation).
    """

    clicked = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.tiers: list[TierUse] = []
        self.headline: list[str] = []
        #: What each row showed when last painted (the form that fitted the width).
        self.shown: list[str] = []
        self._font = QFont()
        self._font.setPointSizeF(8.0)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setFixedHeight(4 * ROW_H + 4)
        self.setCursor(Qt.CursorShape.PointingHandCursor)

    def set_tiers(self, tiers: Sequence[TierUse], prefix_cache: dict[str, float] | None = None) -> None:
        """Show ``tiers`` under the headline of the plan's ``prefix_cache`` figures."""
        self.tiers = list(tiers)
        self.headline = headline_forms(prefix_cache) if prefix_cache is not None and self.tiers else []
        tip = describe_tiers(self.tiers) if self.tiers else ""
        self.setToolTip(f"{self.headline[0]}\n{tip}\nClick for how the hit rate is found" if self.headline else tip)
        self.update()

    def lines(self) -> list[str]:
        """The lines in full: the headline, then ``name: text`` per tier."""
        return self.headline[:1] + [f"{t.name}: {row_text(t)}" for t in self.tiers]

    def mousePressEvent(self, event) -> None:  # noqa: N802 - Qt API
        if event.button() == Qt.MouseButton.LeftButton:
            self.clicked.emit()
        super().mousePressEvent(event)

    def paintEvent(self, event) -> None:  # noqa: N802 - Qt API
        p = QPainter(self)
        p.fillRect(self.rect(), QColor("white"))
        self.shown = paint_tier_bars(p, QRectF(self.rect()).adjusted(6, 2, -4, -2), self.tiers, self._font,
                                     self.headline)
        p.end()
