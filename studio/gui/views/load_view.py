"""The "Load" view (a tab beside the timeline and the Explorer): how the current layout behaves as
traffic grows.

Left, mean and p99 TTFT against the request rate with the saturation rate marked; right, output
tokens/s per GPU against tokens/s per user (the latency–throughput trade-off). The plan's own
operating point (the project's load) is highlighted on both. The curve — closed form for the means,
a request simulation at each rate for p99 — runs in a worker thread through the application's one
scheduler (:class:`studio.gui.worker.ScheduledWork`, as the document's recompute and the Explorer's
sweep do) and only while the view is on screen (not while its tab is behind the timeline's or the
Explorer's); a curve for an older revision of the project is dropped.

After an edit the curve starts once the edits pause (:data:`DEBOUNCE_MS`), as the Explorer's sweep
does: a 16-GPU curve costs ~90 ms of CPU, and started at once on every result it competed with the
redraw of the edit itself for the interpreter (a link-kind edit of a 16-GPU plan took 45 ms to
redraw instead of 10 ms; ``python benchmarks/gui.py``). Raising the tab computes it at once.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QHideEvent, QShowEvent
from PySide6.QtWidgets import QDockWidget, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from studio.core.project import Project
from studio.engine.plan.results import PlanResult
from studio.gui.document import ProjectDocument
from studio.gui.toolkit.plain_plot import plain_plot
from studio.gui.worker import ScheduledWork, evaluate_work

MEAN_COLOR = "#4c6ef5"
P99_COLOR = "#e8590c"
SATURATION_COLOR = "#c92a2a"
POINT_COLOR = "#2b8a3e"
#: Rates on the curve (5 % … 97 % of saturation) and requests simulated at each for p99.
POINTS = 16
REQUESTS = 600
#: Quiet time after the last result before the curve of an edited project starts (ms).
DEBOUNCE_MS = 250

CurveFn = Callable[[Project], object]


def default_curve(project: Project, points: int = POINTS, requests: int = REQUESTS) -> object:
    """:func:`studio.engine.serving.under_load.load_curve` with p99 from the simulation."""
    from studio.engine.serving.under_load import load_curve

    return load_curve(project, points=points, percentiles=True, requests=requests)


def _key(*entries: tuple[str, str, str]) -> str:
    """A plot title that serves as its legend, ``(mark, colour, meaning)`` each: nothing covers the data."""
    return "&nbsp;&nbsp;".join(f'<span style="color:{color}">{mark}</span>&nbsp;{text}' for mark, color, text in entries)


class LoadView(QWidget):
    """Latency and throughput of the current layout against the load.

    Parameters
    ----------
    doc:
        The document; the view follows its results.
    curve:
        ``Project -> LoadCurve`` (default :func:`default_curve`); runs in a worker thread.

    Signals
    -------
    curveReady(object, int)
        A curve was drawn for the given revision.
    """

    curveReady = Signal(object, int)

    def __init__(self, doc: ProjectDocument, curve: CurveFn | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.doc = doc
        self.curve: object | None = None
        self.curve_revision = -1
        self._asked_revision = -1
        self._dock: QDockWidget | None = None
        self.jobs = ScheduledWork(evaluate_work(curve or default_curve), lambda: self.doc.project,
                                  debounce_ms=DEBOUNCE_MS, name="the load curve", parent=self)
        self.jobs.responded.connect(lambda r: self._on_curve(r.result, r.revision, r.error))

        self.status = QLabel("")
        self.status.setWordWrap(True)
        self.busy = QLabel("computing the load curve…")
        self.busy.setObjectName("hint")
        self.busy.hide()
        self.latency = plain_plot("req/s, all replicas", "TTFT (ms)")
        self.throughput = plain_plot("tokens/s per user", "output tokens/s per GPU")
        self.ttft_mean = self.latency.plot([], [], pen=pg.mkPen(MEAN_COLOR, width=2))
        self.ttft_p99 = self.latency.plot([], [], pen=pg.mkPen(P99_COLOR, width=2, style=Qt.PenStyle.DashLine))
        self.saturation = pg.InfiniteLine(angle=90, movable=False, pen=pg.mkPen(SATURATION_COLOR, width=1.5))
        self.saturation.hide()
        self.latency.addItem(self.saturation, ignoreBounds=True)
        self.point_latency = pg.ScatterPlotItem(size=14, symbol="o", pen=pg.mkPen("w", width=1),
                                                brush=pg.mkBrush(POINT_COLOR))
        self.latency.addItem(self.point_latency)
        self.point_latency.setZValue(20)
        self.tradeoff = self.throughput.plot([], [], pen=pg.mkPen(MEAN_COLOR, width=2), symbol="o", symbolSize=5,
                                             symbolBrush=MEAN_COLOR)
        self.point_throughput = pg.ScatterPlotItem(size=14, symbol="o", pen=pg.mkPen("w", width=1),
                                                   brush=pg.mkBrush(POINT_COLOR))
        self.throughput.addItem(self.point_throughput)
        self.point_throughput.setZValue(20)

        # short keys: a plot's title sets its minimum width, and the two share a laptop-wide dock
        self.latency.setTitle(_key(("━", MEAN_COLOR, "mean"), ("╍", P99_COLOR, "p99"),
                                   ("┃", SATURATION_COLOR, "saturation"), ("●", POINT_COLOR, "plan")), size="9pt")
        self.throughput.setTitle(_key(("━", MEAN_COLOR, "5–97 % of saturation"),
                                      ("●", POINT_COLOR, "this plan")), size="9pt")
        plots = QHBoxLayout()
        plots.addWidget(self.latency, 1)
        plots.addWidget(self.throughput, 1)
        box = QVBoxLayout(self)
        head = QHBoxLayout()
        head.addWidget(self.status, 1)
        head.addWidget(self.busy)
        box.addLayout(head)
        box.addLayout(plots, 1)
        doc.resultReady.connect(self._on_result)
        doc.errorChanged.connect(self._on_error)
        if doc.result_is_current:
            self._on_result(doc.result, doc.revision)

    # ------------------------------------------------------------------ compute
    def _on_result(self, result: PlanResult | None, revision: int) -> None:
        self._draw_point(result)
        if self.seen():
            self.refresh(debounced=True)

    def seen(self) -> bool:
        """Whether the view is on screen: shown, and not a dock tab behind another one (Qt keeps
        such a tab's widget visible, with nothing of it left to paint)."""
        return self.isVisible() and not self.visibleRegion().isEmpty()

    def follow_dock(self, dock: QDockWidget) -> None:
        """Compute when ``dock``'s tab is raised and drop a waiting curve when another tab
        covers it (``visibilityChanged``); no show or hide event comes then."""
        self._dock = dock
        dock.visibilityChanged.connect(lambda shown: self._on_shown() if shown else self._on_hidden())
        # floated out or docked back: on screen once the move is laid out, whatever the dock said
        dock.topLevelChanged.connect(lambda _floating: QTimer.singleShot(0, self.refresh_if_seen))

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 - Qt API
        super().showEvent(event)
        if self._dock is None:  # a docked view is shown with every tab, raised or not: its dock says
            self._on_shown()

    def hideEvent(self, event: QHideEvent) -> None:  # noqa: N802 - Qt API
        super().hideEvent(event)
        self._on_hidden()

    def _on_shown(self) -> None:
        if self.doc.result_is_current and self._asked_revision != self.doc.revision:
            self.refresh()

    def refresh_if_seen(self) -> None:
        """Compute the current project's curve now if the view is on screen and has none for it
        (a view built because its tab was just raised, or floated out of its tab area)."""
        if self.seen():
            self._on_shown()

    def _on_hidden(self) -> None:
        if self.jobs.pending:  # asked for but not started: nobody looks, ask again when shown
            self.jobs.timer.stop()
            self._asked_revision = -1
            self.busy.hide()

    def refresh(self, debounced: bool = False) -> None:
        """Compute the curve of the current project in the worker (no-op if already asked).

        Parameters
        ----------
        debounced:
            Start after :data:`DEBOUNCE_MS` without a further result (an edit) instead of now;
            a curve of an older revision in flight is dropped at once either way.
        """
        revision = self.doc.revision
        if self._asked_revision == revision:
            return
        self._asked_revision = revision
        self.busy.show()
        if debounced:
            self.jobs.schedule(revision)
        else:
            self.jobs.start(revision)

    @property
    def pending(self) -> bool:
        """A curve is asked for and waits for the edits to pause."""
        return self.jobs.pending

    def wait_idle(self, msecs: int = 30_000) -> bool:
        """Block until the curve being computed is done (tests, shutdown)."""
        return self.jobs.wait_idle(msecs)

    def _on_curve(self, curve: object | None, revision: int, error: str) -> None:
        if revision != self.doc.revision:
            return  # the project changed while the curve was computed
        self.busy.hide()
        if curve is None:
            self._clear(f"No load curve: {error}")
            return
        self.curve = curve
        self.curve_revision = revision
        self._draw_curve(curve)
        self._draw_point(self.doc.result if self.doc.result_is_current else None)
        self.curveReady.emit(curve, revision)

    def _on_error(self, message: str) -> None:
        if message:
            self._clear(f"No load curve: {message}")

    # ------------------------------------------------------------------ draw
    def _clear(self, text: str) -> None:
        self.curve = None
        for item in (self.ttft_mean, self.ttft_p99, self.tradeoff):
            item.setData([], [])
        for item in (self.point_latency, self.point_throughput):
            item.setData([], [])
        self.saturation.hide()
        self.status.setText(text)

    def _draw_curve(self, c) -> None:
        rate = np.asarray(c.rate_per_s, dtype=float)
        self.ttft_mean.setData(rate, np.asarray(c.ttft_ms, dtype=float))
        p99 = getattr(c, "ttft_p99_ms", None)
        if p99 is not None:
            self.ttft_p99.setData(rate, np.asarray(p99, dtype=float))
        else:
            self.ttft_p99.setData([], [])
        self.saturation.setValue(float(c.saturation_rate_per_s))
        self.saturation.show()
        self.tradeoff.setData(np.asarray(c.tokens_per_s_per_user, dtype=float),
                              np.asarray(c.tokens_per_s_per_gpu, dtype=float))

    def _draw_point(self, result: PlanResult | None) -> None:
        """Highlight the plan's operating point and say where it stands against saturation."""
        s = getattr(result, "load", None)
        if result is None or s is None:
            return
        rate = s.saturation_rate_per_s if s.saturated else s.request_rate_per_s
        self.point_latency.setData([rate], [float(result.ttft_ms)])
        self.point_throughput.setData([float(result.tokens_per_s_per_user)], [float(result.output_tokens_per_s_per_gpu)])
        self.status.setText(operating_text(result))


def operating_text(result) -> str:
    """One line: the load, the rate served against saturation, TTFT/TPOT at that point."""
    s = result.load
    share = s.request_rate_per_s / s.saturation_rate_per_s if s.saturation_rate_per_s > 0 else float("nan")
    head = {"rate": "request rate", "concurrency": "closed loop", "offline": "offline batch"}.get(s.mode, s.mode)
    if s.saturated:
        return (f"{head}: SATURATED — the rate asked is at or above the saturation rate of "
                f"{s.saturation_rate_per_s:.3g} req/s; the queue grows without bound (no steady state).")
    return (f"{head}: {s.request_rate_per_s:.3g} req/s = {share * 100:.0f} % of saturation "
            f"({s.saturation_rate_per_s:.3g} req/s); mean TTFT {result.ttft_ms:,.0f} ms, "
            f"TPOT {result.tpot_ms:,.1f} ms, {result.output_tokens_per_s_per_gpu:,.0f} tok/s per GPU")

