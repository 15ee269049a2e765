"""What an edit makes the window redo: only what changed is laid out and painted again (no
timings here; ``benchmarks/gui.py`` measures them)."""

from __future__ import annotations

import pytest

from studio.gui.panels.metrics_panel import MetricsPanel


@pytest.fixture
def panel(qtbot):
    p = MetricsPanel()
    qtbot.addWidget(p)
    return p


def _changes(panel) -> list[tuple[int, int, int]]:
    out: list[tuple[int, int, int]] = []
    panel.why.document().contentsChange.connect(lambda pos, removed, added: out.append((pos, removed, added)))
    return out


def test_the_why_panel_replaces_only_the_figures_that_changed(panel):
    before = "latency.ttft = 247.7 ms\n  = queue 1.0 ms\n  + prefill 246.7 ms"
    after = "latency.ttft = 257.7 ms\n  = queue 1.0 ms\n  + prefill 256.7 ms"
    panel._set_why(before)
    changes = _changes(panel)
    panel._set_why(after)
    assert panel.why.toPlainText() == after
    # one edit from the first differing character to the last: the lines between are laid out again
    # only if they fall inside it (here they do; a result that changes one figure changes one line)
    assert changes == [(16, after.index("256") + 2 - 16, after.index("256") + 2 - 16)]
    panel._set_why(after)  # the same text: nothing happens
    assert len(changes) == 1


@pytest.mark.parametrize("after", [
    "",  # all of it goes
    "something else entirely",
    "latency.ttft = 247.7 ms",  # a prefix of the text shown
    "latency.ttft = 247.7 ms\n  = queue 1.0 ms\n  + prefill 246.7 ms\nAssumptions:\n  • one",  # grown
    "latency.ttft = 24\u00a07.7 ms 🙂 ms\n  = queue 1.0 ms",  # a no-break space, a character of two UTF-16 units
])
def test_the_why_panel_shows_exactly_the_new_text(panel, after):
    panel._set_why("latency.ttft = 247.7 ms 🙂\n  = queue 1.0 ms\n  + prefill 246.7 ms")
    panel._set_why(after)
    raw = panel.why.document().toRawText  # no-break spaces kept; a paragraph separator between lines
    assert raw() == after.replace("\n", "\u2029")
    panel._set_why("latency.ttft = 247.7 ms")
    assert raw() == "latency.ttft = 247.7 ms"


def test_the_why_panel_follows_a_document_changed_behind_its_back(panel):
    panel._set_why("one\ntwo")
    panel.why.setPlainText("three")
    panel._set_why("one\nfour")
    assert panel.why.toPlainText() == "one\nfour"
