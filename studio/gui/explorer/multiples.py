"""Small multiples: the pipeline timeline of every TP × PP factorization of the cluster, stacked on
one shared (linked) time axis so bubbles and all-reduce costs compare at a glance."""

from __future__ import annotations

from PySide6.QtWidgets import (
    QButtonGroup,
    QHBoxLayout,
    QLabel,
    QRadioButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from studio.engine.plan.results import PlanResult
from studio.engine.plan.views import SEGMENT_KINDS
from studio.gui.toolkit.colors import SEGMENT_COLORS, SEGMENT_LABELS
from studio.gui.views.timeline import TimelinePlot

PLOT_HEIGHT = 120


class SmallMultiples(QWidget):
    """A column of timelines with linked x axes; ``set_plans`` replaces them all."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.phase = "decode"
        self.plans: list[tuple[str, PlanResult]] = []
        self.plots: list[TimelinePlot] = []
        self.titles: list[QLabel] = []
        top = QHBoxLayout()
        top.setContentsMargins(6, 2, 6, 2)
        self._group = QButtonGroup(self)
        for phase, text in (("decode", "One decode step"), ("prefill", "Prefill (first token)")):
            b = QRadioButton(text)
            b.setObjectName(f"multiples-{phase}")
            b.setChecked(phase == self.phase)
            b.toggled.connect(lambda on, ph=phase: self.set_phase(ph) if on else None)
            self._group.addButton(b)
            top.addWidget(b)
        top.addSpacing(12)
        self.caption = QLabel("")
        top.addWidget(self.caption)
        top.addStretch(1)
        # the colour key wraps on a line of its own: on one line it made the Explorer 1,200 px wide
        key = QLabel(" ".join(
            f"<span style='color:{SEGMENT_COLORS[k]}'>■</span>&nbsp;{SEGMENT_LABELS[k]}" for k in SEGMENT_KINDS
            if k in SEGMENT_COLORS))
        key.setWordWrap(True)
        key.setContentsMargins(4, 0, 4, 0)
        self._inner = QWidget()
        self._rows = QVBoxLayout(self._inner)
        self._rows.setContentsMargins(4, 0, 4, 4)
        self._rows.setSpacing(2)
        self._rows.addStretch(1)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(self._inner)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addLayout(top)
        lay.addWidget(key)
        lay.addWidget(scroll, 1)

    def _ensure(self, n: int) -> None:
        while len(self.plots) < n:
            title = QLabel("")
            title.setStyleSheet("font-weight: 600; padding-top: 4px;")
            plot = TimelinePlot()
            plot.setMinimumHeight(PLOT_HEIGHT)
            if plot.legend is not None:
                plot.legend.setVisible(False)  # one colour key for all, in the caption row
            if self.plots:
                plot.setXLink(self.plots[0])
            idx = self._rows.count() - 1  # before the stretch
            self._rows.insertWidget(idx, title)
            self._rows.insertWidget(idx + 1, plot)
            self.plots.append(plot)
            self.titles.append(title)
        for k, (plot, title) in enumerate(zip(self.plots, self.titles, strict=True)):
            plot.setVisible(k < n)
            title.setVisible(k < n)

    def set_plans(self, plans: list[tuple[str, PlanResult]]) -> None:
        """Show ``(title, plan)`` pairs, one timeline each."""
        self.plans = list(plans)
        self._ensure(len(self.plans))
        self._draw()

    def set_phase(self, phase: str) -> None:
        self.phase = phase
        self._draw()

    def shared_range(self) -> float:
        """Longest step among the shown timelines (ms): the common x extent."""
        totals = [p.timelines[self.phase].total_ms for _t, p in self.plans if self.phase in p.timelines]
        return max(totals, default=0.0)

    def _draw(self) -> None:
        for (title, plan), plot, label in zip(self.plans, self.plots, self.titles, strict=False):
            tl = plan.timelines.get(self.phase)
            plot.set_timeline(tl)
            lanes = len(tl.lanes) if tl is not None else 1
            plot.setFixedHeight(max(PLOT_HEIGHT, 60 + 14 * lanes))
            ar = plan.allreduce_us_per_layer_decode if self.phase == "decode" else plan.allreduce_us_per_layer_prefill
            label.setText(f"{title} — {plan.output_tokens_per_s_per_gpu:,.1f} tok/s/GPU, "
                          f"bubble {plan.bubble_fraction:.0%}, TP all-reduce {ar:,.1f} µs/layer"
                          + ("" if plan.fits else "  (does not fit)"))
        total = self.shared_range()
        if self.plots and total > 0:
            self.plots[0].setXRange(0, total * 1.02, padding=0)
            for plot in self.plots[: len(self.plans)]:
                plot.note.setPos(total * 1.01, plot.note.pos().y())
        self.caption.setText(f"{len(self.plans)} factorizations · shared time axis 0–{total:,.1f} ms")
