"""The labels' caches (kept because the window restyles its labels many times while it is built)
must never show what an older font, width or text gave."""

from __future__ import annotations

from PySide6.QtGui import QFont, QFontMetrics
from PySide6.QtWidgets import QWidget

from studio.gui.panels.fit_label import FitLabel
from studio.gui.panels.section import Section
from studio.gui.panels.value_label import ValueLabel

LONG = "prefill 1,234.5 µs per boundary, decode 987.6 µs"


def _fit_label(qtbot, width: int) -> FitLabel:
    label = FitLabel(LONG)
    qtbot.addWidget(label)
    label.resize(width, 20)
    label.show()  # resize events are sent to a shown widget (a hidden one gets them when shown)
    return label


def test_fit_label_elides_again_when_its_font_grows(qtbot):
    label = _fit_label(qtbot, 0)
    label.resize(QFontMetrics(label.font()).horizontalAdvance(LONG) + 12, 20)  # the whole text fits
    assert not label.is_elided
    big = QFont(label.font())
    big.setPointSizeF(big.pointSizeF() * 2)
    label.setFont(big)  # same text, same width: only the font says it no longer fits
    assert label.is_elided
    assert label.toolTip() == LONG
    small = QFont(big)
    small.setPointSizeF(big.pointSizeF() / 2)
    label.setFont(small)
    assert not label.is_elided
    assert label.toolTip() == ""


def test_fit_label_follows_width_and_text(qtbot):
    label = _fit_label(qtbot, 60)
    assert label.is_elided
    label.setText("ok")
    assert not label.is_elided
    label.setText(LONG)
    assert label.is_elided
    label.resize(QFontMetrics(label.font()).horizontalAdvance(LONG) + 12, 20)
    assert not label.is_elided


def test_value_label_hints_follow_a_new_font(qtbot):
    label = ValueLabel("63.4k tok/s")
    qtbot.addWidget(label)
    before = (label.sizeHint(), label.text_width())
    big = QFont(label.font())
    big.setPointSizeF(big.pointSizeF() * 2)
    label.setFont(big)
    after = (label.sizeHint(), label.text_width())
    assert after[1] > before[1] * 1.5
    assert after[0].width() > before[0].width() and after[0].height() > before[0].height()


def test_value_label_follows_a_font_its_parent_gives_it(qtbot):
    parent = QWidget()
    qtbot.addWidget(parent)
    label = ValueLabel("2,493 µs", parent)
    label.ensurePolished()
    before = label.text_width()
    parent.setStyleSheet("QWidget { font-size: 30pt; }")  # inherited, over the application's sheet
    label.ensurePolished()
    assert label.text_width() > before * 1.5
    fresh = ValueLabel(label.text())  # no cache: measured in the label's font from the start
    qtbot.addWidget(fresh)
    fresh.setFont(label.font())
    assert label.text_width() == fresh.text_width()
    assert label.sizeHint() == fresh.sizeHint()


def test_section_summary_given_after_the_section_is_made(qtbot):
    body = QWidget()
    section = Section("Load", body)
    qtbot.addWidget(section)
    assert section.header.full_text == "Load"
    section.set_summary(lambda: "closed loop")
    assert section.header.full_text == "Load: closed loop"
    section.set_expanded(True)  # an expanded section shows its settings, not their summary
    assert section.header.full_text == "Load"
