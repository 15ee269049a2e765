"""Metric cards: a headline value is never elided. It shrinks when its label is narrow, the panel
asks the dock for room for it, and at the usual window sizes every bundled example shows every
value, title and caption in full."""

from __future__ import annotations

from pathlib import Path

import pytest
from gui_helpers import close_window
from PySide6.QtCore import QCoreApplication

from studio.gui.panels.value_label import MIN_SCALE, ValueLabel, split_unit
from studio.io.project_file import load_project

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "presets" / "examples").glob("*.json"))
SIZES = [(1280, 800), (1600, 1000), (1920, 1080)]


@pytest.mark.parametrize(("text", "parts"), [
    ("63.4k tok/s", ("63.4k", "tok/s")),
    ("2,493 µs", ("2,493", "µs")),
    ("$2.05", ("$2.05", "")),
    ("33%", ("33%", "")),
    ("—", ("—", "")),
])
def test_split_unit(text, parts):
    assert split_unit(text) == parts


def test_a_narrow_value_shrinks_instead_of_eliding(qtbot):
    label = ValueLabel("63.4k tok/s")
    qtbot.addWidget(label)
    full = label.text_width(1.0)
    label.resize(int(full) + 10, 30)
    assert label.fit_scale() == 1.0
    label.resize(int(full * 0.6), 30)
    scale = label.fit_scale()
    assert scale < 0.65
    assert label.text_width(scale) <= label.contentsRect().width()  # all of it is painted
    assert label.text() == "63.4k tok/s"
    assert label.minimumSizeHint().width() >= label.text_width(MIN_SCALE)
    label.show()
    label.grab()  # paints without error at the shrunken size
    assert label.scale == pytest.approx(scale)


def _window(qtbot, project, size):
    from studio.gui.toolkit.resources import application
    from studio.gui.window.app import build_window

    application()  # the style sheet the studio runs with (card paddings and fonts), whatever ran before

    win = build_window(project, threaded=False)
    win.ask_save = lambda: "discard"
    qtbot.addWidget(win)
    win.resize(*size)
    win.show()
    win.doc.recompute_now()
    assert win.doc.result_is_current, win.doc.error
    return win


def _clipped(win) -> list[str]:
    out = []
    for key, card in win.metrics.cards.items():
        if card.value.fit_scale() < 1.0:
            out.append(f"{key} value '{card.value.text()}' at {card.value.fit_scale():.0%}")
        out += [f"{key} '{lab.text()}'" for lab in (card.title, card.caption) if lab.is_elided]
    return out


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_every_example_shows_every_figure_in_full(qtbot, path):
    """One window per example, opened at the first size and resized to the others as a user does
    (a window costs ~0.7 s to build). A shown window lays its cards out again on each resize: every
    card's scale, width and elision came out the same as in a window opened at that size when this
    test stopped opening one per size."""
    win = _window(qtbot, load_project(path), SIZES[0])
    for size in SIZES:
        win.resize(*size)
        QCoreApplication.sendPostedEvents()  # any layout request the resize posted
        assert (win.width(), win.height()) == size
        bar = win.statusBar().geometry()  # the window is laid out at this size: the bar spans its foot
        assert (bar.width(), bar.bottom()) == (size[0], size[1] - 1)
        assert _clipped(win) == [], size
    close_window(win)


def test_a_narrowed_metrics_dock_keeps_values_legible(qtbot):
    from PySide6.QtCore import Qt

    gb200 = next(p for p in EXAMPLES if "gb200" in p.stem)  # the widest values: 63.4k tok/s, 1.14M tok
    win = _window(qtbot, load_project(gb200), (1280, 800))
    dock = win.docks["Live metrics"]
    QCoreApplication.sendPostedEvents()  # the window lays out the new figures (as it has long before a user drags a dock)
    win.resizeDocks([dock], [120], Qt.Orientation.Horizontal)  # the user drags it as narrow as it goes
    QCoreApplication.sendPostedEvents()  # and the layout requests the drag posted
    assert dock.width() < 330
    for key, card in win.metrics.cards.items():
        assert card.value.fit_scale() >= MIN_SCALE - 0.02, key
        assert card.value.text_width(card.value.fit_scale()) <= card.value.contentsRect().width(), key
    close_window(win)
