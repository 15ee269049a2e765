"""Pareto plot of a sweep (pyqtgraph): every fitting layout as a point, the frontier as a line with
larger markers, the service targets as limit lines; hover names a layout, click selects it.

Disaggregated candidates (:class:`studio.engine.disagg.sweep.DisaggRow`, when the Explorer sweeps
them) share the axes and the limit lines: diamonds, filled when they meet the targets, with their
own frontier dashed."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, Signal
from PySide6.QtWidgets import QWidget

from studio.engine.search.sweep import SweepResult
from studio.gui.toolkit.plain_plot import style_plain
from studio.service.explore.explorer_analysis import AXIS_LABELS, PLOT_MODES, frontier

POINT_COLOR = "#4c6ef5"
FRONT_COLOR = "#e8590c"
RECOMMENDED_COLOR = "#2b8a3e"
TARGET_COLOR = "#c92a2a"
DISAGG_COLOR = "#9c36b5"
HOVER_PIXELS = 12.0


class ParetoPlot(pg.PlotWidget):
    """Scatter of the sweep in one of :data:`PLOT_MODES`.

    Signals
    -------
    rowClicked(int)
        Sweep row of the clicked point.
    """

    rowClicked = Signal(int)
    #: Index (into :attr:`disagg`) of the clicked disaggregated candidate.
    disaggClicked = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent, background="w", enableMenu=False)  # style_plain: no menu
        self.result: SweepResult | None = None
        self.recommended_row: int | None = None
        self.mode = "gpu_vs_user"
        self.rows = np.zeros(0, dtype=np.int64)
        self.front = np.zeros(0, dtype=np.int64)
        self.selected: int | None = None
        self.disagg: tuple = ()  # DisaggRow of every disaggregated candidate shown
        self.disagg_selected: int | None = None  # the ringed disaggregated candidate
        pi = style_plain(self)
        # the key sits in a row of its own under the x axis, never over the points
        self.legend = pg.LegendItem(colCount=3, labelTextSize="8pt", verSpacing=-6, horSpacing=12)
        pi.layout.addItem(self.legend, 4, 1)
        pi.legend = self.legend  # PlotItem.addItem puts every named item in it
        self.points = pg.ScatterPlotItem(size=7, pen=pg.mkPen("w", width=0.5), brush=pg.mkBrush(POINT_COLOR + "99"),
                                         name="layouts that fit")
        self.front_line = pg.PlotDataItem(pen=pg.mkPen(FRONT_COLOR, width=2), name="Pareto frontier")
        self.front_points = pg.ScatterPlotItem(size=13, pen=pg.mkPen("w", width=1), brush=pg.mkBrush(FRONT_COLOR))
        self.recommended = pg.ScatterPlotItem(size=22, symbol="star", pen=pg.mkPen("#1b5e20", width=1),
                                              brush=pg.mkBrush(RECOMMENDED_COLOR), name="recommended")
        self.ring = pg.ScatterPlotItem(size=24, pen=pg.mkPen("#212529", width=2), brush=pg.mkBrush(0, 0, 0, 0))
        self.disagg_points = pg.ScatterPlotItem(size=9, symbol="d", pen=pg.mkPen(DISAGG_COLOR, width=1),
                                                brush=pg.mkBrush(DISAGG_COLOR + "88"), name="disaggregated pools")
        self.disagg_front = pg.PlotDataItem(pen=pg.mkPen(DISAGG_COLOR, width=2, style=pg.QtCore.Qt.PenStyle.DashLine),
                                            name="disaggregated frontier")
        for item in (self.points, self.front_line, self.front_points, self.recommended, self.ring):
            self.addItem(item)
        self.limits: list[pg.InfiniteLine] = []
        self.hover = pg.TextItem("", color="#212529", fill=pg.mkBrush(255, 255, 255, 235),
                                 border=pg.mkPen("#adb5bd"), anchor=(0, 1))
        self.hover.setZValue(50)
        self.hover.hide()
        self.addItem(self.hover, ignoreBounds=True)
        self.addItem(self.disagg_front)
        self.addItem(self.disagg_points)
        self.disagg_points.sigClicked.connect(self._disagg_clicked)
        self.points.sigClicked.connect(self._clicked)
        self.front_points.sigClicked.connect(self._clicked)
        self.recommended.sigClicked.connect(self._clicked)
        self.scene().sigMouseMoved.connect(self._on_mouse)

    # ------------------------------------------------------------------ data
    def set_result(self, result: SweepResult | None, recommended: int | None = None) -> None:
        """Plot ``result``; the star marks ``recommended`` (default the sweep's recommendation; the
        Explorer passes the best row meeting its percentile SLO when there is one)."""
        self.result = result
        self.recommended_row = recommended if recommended is not None else (
            int(result.recommended) if result is not None and result.recommended is not None else None)
        self.selected = None
        self._redraw()

    def set_disagg(self, rows) -> None:
        """Plot the disaggregated candidates ``rows`` (``DisaggRow``s; empty hides them)."""
        self.disagg = tuple(rows)
        self.disagg_selected = None
        self._redraw()

    def disagg_xy(self) -> tuple[np.ndarray, np.ndarray]:
        """x and y of every disaggregated candidate in the current mode."""
        _t, xk, yk, _xh, _yh = PLOT_MODES[self.mode]
        x = np.array([float(getattr(r, xk)) for r in self.disagg], dtype=float)
        y = np.array([float(getattr(r, yk)) for r in self.disagg], dtype=float)
        return x, y

    def _key_disagg(self, on: bool) -> None:
        """The key lists the disaggregated pools and their frontier only while they are plotted
        (one line of key instead of two otherwise)."""
        if on == getattr(self, "_disagg_keyed", True):
            return
        self._disagg_keyed = on
        for item, name in ((self.disagg_front, "disaggregated frontier"), (self.disagg_points, "disaggregated pools")):
            if on:
                self.legend.addItem(item, name)
            else:
                self.legend.removeItem(item)

    def _draw_disagg(self) -> None:
        empty = np.zeros(0)
        self._key_disagg(bool(self.disagg))
        if not self.disagg:
            self.disagg_points.setData(x=empty, y=empty)
            self.disagg_front.setData(x=empty, y=empty)
            return
        _t, _xk, _yk, xh, yh = PLOT_MODES[self.mode]
        x, y = self.disagg_xy()
        idx = np.flatnonzero(np.isfinite(x) & np.isfinite(y))
        meets = [r.meets_targets for r in self.disagg]
        filled = pg.mkBrush(DISAGG_COLOR + "cc")
        hollow = pg.mkBrush(255, 255, 255, 0)
        self.disagg_points.setData(x=x[idx], y=y[idx], data=idx,
                                   brush=[filled if meets[i] else hollow for i in idx])
        front = frontier(x, y, idx, xh, yh)
        self.disagg_front.setData(x=x[front], y=y[front])

    def set_mode(self, mode: str) -> None:
        if mode not in PLOT_MODES:
            raise ValueError(f"plot mode '{mode}' is not one of {', '.join(PLOT_MODES)}")
        self.mode = mode
        self._redraw()

    def xy(self) -> tuple[np.ndarray, np.ndarray]:
        """x and y of every sweep row in the current mode."""
        assert self.result is not None
        _t, xk, yk, _xh, _yh = PLOT_MODES[self.mode]
        return self.result.columns[xk].astype(float), self.result.columns[yk].astype(float)

    def _redraw(self) -> None:
        for line in self.limits:
            self.removeItem(line)
        self.limits = []
        self.hover.hide()
        title, xk, yk, xh, yh = PLOT_MODES[self.mode]
        pi = self.getPlotItem()
        pi.setLabel("bottom", AXIS_LABELS[xk])
        pi.setLabel("left", AXIS_LABELS[yk])
        pi.setTitle(None)  # the Axes box above names the plot: its rows go to the data (a 1366×768 dock)
        res = self.result
        empty = np.zeros(0)
        self._draw_disagg()
        if res is None or len(res.columns["tp"]) == 0:
            self.rows = np.zeros(0, dtype=np.int64)
            for item in (self.points, self.front_points, self.recommended, self.ring):
                item.setData(x=empty, y=empty)
            self.front_line.setData(x=empty, y=empty)
            return
        x, y = self.xy()
        fits = res.columns["fits"]
        self.rows = np.flatnonzero(fits & np.isfinite(x) & np.isfinite(y))
        self.points.setData(x=x[self.rows], y=y[self.rows], data=self.rows)
        if self.mode == "gpu_vs_user":
            self.front = np.asarray(res.pareto, dtype=np.int64)
            self.front = self.front[np.argsort(x[self.front], kind="stable")]
        else:
            self.front = frontier(x, y, self.rows, xh, yh)
        self.front_line.setData(x=x[self.front], y=y[self.front])
        self.front_points.setData(x=x[self.front], y=y[self.front], data=self.front)
        rec = self.recommended_row
        if rec is not None and fits[rec]:
            self.recommended.setData(x=[x[rec]], y=[y[rec]], data=[int(rec)])
        else:
            self.recommended.setData(x=empty, y=empty)
        self._draw_limits(xk)
        self._draw_ring()
        self.getPlotItem().enableAutoRange()

    def _draw_limits(self, xk: str) -> None:
        res = self.result
        assert res is not None
        lines: list[tuple[float, str]] = []
        if xk == "tokens_per_s_per_user" and res.tpot_ms:
            lines.append((1e3 / res.tpot_ms, f"TPOT ≤ {res.tpot_ms:g} ms"))
        if xk == "ttft_ms" and res.ttft_ms:
            lines.append((res.ttft_ms, f"TTFT ≤ {res.ttft_ms:g} ms"))
        if xk == "tpot_ms" and res.tpot_ms:
            lines.append((res.tpot_ms, f"TPOT ≤ {res.tpot_ms:g} ms"))
        for pos, text in lines:
            line = pg.InfiniteLine(pos=pos, angle=90, pen=pg.mkPen(TARGET_COLOR, width=1.5, style=pg.QtCore.Qt.PenStyle.DashLine),
                                   label=text, labelOpts={"position": 0.92, "color": TARGET_COLOR, "fill": (255, 255, 255, 200)})
            self.addItem(line)
            self.limits.append(line)

    def select_row(self, row: int | None) -> None:
        """Ring the point of sweep row ``row`` (None clears)."""
        self.selected = row
        self.disagg_selected = None
        self._draw_ring()

    def select_disagg(self, k: int | None) -> None:
        """Ring the diamond of disaggregated candidate ``k`` (None clears)."""
        self.selected = None
        self.disagg_selected = k if k is not None and 0 <= k < len(self.disagg) else None
        self._draw_ring()

    def _draw_ring(self) -> None:
        """Ring the selected point: only its own x and y are read (a selection follows every
        click and every filter change of the table, over thousands of candidates)."""
        _t, xk, yk, _xh, _yh = PLOT_MODES[self.mode]
        if self.disagg_selected is not None:
            r = self.disagg[self.disagg_selected]
            self.ring.setData(x=[float(getattr(r, xk))], y=[float(getattr(r, yk))])
            return
        res = self.result
        i = self.selected
        if res is None or i is None or not _plotted(self.rows, i):
            self.ring.setData(x=np.zeros(0), y=np.zeros(0))
            return
        self.ring.setData(x=[float(res.columns[xk][i])], y=[float(res.columns[yk][i])])

    # ----------------------------------------------------------------- mouse
    def row_near(self, scene_pos: QPointF) -> int | None:
        """Sweep row of the point within :data:`HOVER_PIXELS` of a scene position, or None."""
        if self.result is None or self.rows.size == 0:
            return None
        vb = self.getPlotItem().getViewBox()
        x, y = self.xy()  # distances in pixels: scale the view range, no per-point mapping
        (x0, x1), (y0, y1) = vb.viewRange()
        rect = vb.sceneBoundingRect()
        sx = rect.width() / max(x1 - x0, 1e-300)
        sy = rect.height() / max(y1 - y0, 1e-300)
        p = vb.mapSceneToView(scene_pos)
        d = np.hypot((x[self.rows] - p.x()) * sx, (y[self.rows] - p.y()) * sy)
        k = int(np.argmin(d))
        return int(self.rows[k]) if d[k] <= HOVER_PIXELS else None

    def describe(self, row: int) -> str:
        res = self.result
        assert res is not None
        c = res.columns
        tags = []
        if row == self.recommended_row:
            tags.append("recommended")
        if row in set(self.front.tolist()):
            tags.append("frontier")
        return (f"{res.label(row)}" + (f"  [{', '.join(tags)}]" if tags else "") + "\n"
                f"{c['tokens_per_s_per_gpu'][row]:,.1f} tok/s/GPU · {c['tokens_per_s_per_user'][row]:,.1f} tok/s/user\n"
                f"TTFT {c['ttft_ms'][row]:,.0f} ms · TPOT {c['tpot_ms'][row]:,.1f} ms · ${c['usd_per_million'][row]:,.2f}/M tok")

    def disagg_near(self, scene_pos: QPointF) -> int | None:
        """Index of the disaggregated candidate within :data:`HOVER_PIXELS` of a scene position."""
        if not self.disagg:
            return None
        vb = self.getPlotItem().getViewBox()
        x, y = self.disagg_xy()
        (x0, x1), (y0, y1) = vb.viewRange()
        rect = vb.sceneBoundingRect()
        sx = rect.width() / max(x1 - x0, 1e-300)
        sy = rect.height() / max(y1 - y0, 1e-300)
        p = vb.mapSceneToView(scene_pos)
        d = np.hypot((x - p.x()) * sx, (y - p.y()) * sy)
        d[~np.isfinite(d)] = np.inf
        k = int(np.argmin(d))
        return k if d[k] <= HOVER_PIXELS else None

    def describe_disagg(self, i: int) -> str:
        r = self.disagg[i]
        verdict = "meets the targets" if r.meets_targets else "misses the targets"
        return (f"{r.label}, batch {r.batch} per decode worker  [disaggregated, {verdict}]\n"
                f"{r.tokens_per_s_per_gpu:,.1f} tok/s/GPU · {r.tokens_per_s_per_user:,.1f} tok/s/user\n"
                f"TTFT {r.ttft_ms:,.0f} ms · TPOT {r.tpot_ms:,.1f} ms · KV transfer {r.transfer_ms:.3g} ms · "
                f"${r.usd_per_million:,.2f}/M tok")

    def _on_mouse(self, pos: QPointF) -> None:
        vb = self.getPlotItem().getViewBox()
        if not vb.sceneBoundingRect().contains(pos):
            self.hover.hide()
            return
        row = self.row_near(pos)
        if row is None:
            k = self.disagg_near(pos)
            if k is None:
                self.hover.hide()
                return
            x, y = self.disagg_xy()
            self.hover.setText(self.describe_disagg(k))
            self.hover.setPos(x[k], y[k])
            self.hover.show()
            return
        x, y = self.xy()
        self.hover.setText(self.describe(row))
        self.hover.setPos(x[row], y[row])
        self.hover.show()

    def _clicked(self, _item, points, *_args) -> None:
        if len(points):
            self.rowClicked.emit(int(points[0].data()))

    def _disagg_clicked(self, _item, points, *_args) -> None:
        if len(points):
            self.disaggClicked.emit(int(points[0].data()))


def _plotted(rows: np.ndarray, row: int) -> bool:
    """Whether sweep row ``row`` is among the plotted ``rows`` (ascending, as ``np.flatnonzero`` gives them)."""
    k = int(np.searchsorted(rows, row))
    return k < rows.size and int(rows[k]) == row
