"""Pipeline timeline (pyqtgraph): a lane per stage, one ``BarGraphItem`` per segment kind.

Bars are updated in place with ``setOpts`` (no items created per edit), so a redraw costs the same
for 2 stages or 64.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF
from PySide6.QtWidgets import (
    QButtonGroup,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QRadioButton,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from studio.engine.plan.results import PlanResult
from studio.engine.plan.views import REQUEST_ONLY_KINDS, SEGMENT_KINDS, Timeline
from studio.gui.toolkit.colors import SEGMENT_COLORS, SEGMENT_LABELS
from studio.gui.toolkit.layout_fence import LayoutFence
from studio.gui.views.grid_axis import blend_grid_by_rows

BAR_HEIGHT = 0.64
LANE_MODES = {"stage": "One lane per stage", "tp": "Per GPU (first TP group)", "all": "Per GPU (all GPUs)"}


def lane_groups(result: PlanResult, mode: str) -> list[tuple[str, ...]]:
    """GPU ids of each stage's lanes: ``tp`` the stage's first TP group (``StageResult.gpus``),
    ``all`` every GPU of the stage in every replica (from the memory rows), in rank order."""
    if mode == "tp":
        return [tuple(s.gpus) for s in result.stages]
    by_stage: dict[int, list[tuple[int, str]]] = {}
    for m in result.memory:
        by_stage.setdefault(m.stage, []).append((m.rank, m.gpu_id))
    return [tuple(g for _r, g in sorted(by_stage.get(s.stage, []))) or tuple(s.gpus) for s in result.stages]


def per_gpu_timeline(tl: Timeline, groups: list[tuple[str, ...]]) -> Timeline:
    """``tl`` with each stage lane repeated once per GPU of ``groups[stage]`` (the GPUs of a stage
    run the same segments at the same times), lanes labelled with the GPU ids."""
    lanes: list[str] = []
    rows: list[np.ndarray] = []
    lane_of: list[np.ndarray] = []
    for stage, gpus in enumerate(groups):
        seg = np.nonzero(tl.lane == stage)[0]
        for gpu in gpus:
            rows.append(seg)
            lane_of.append(np.full(len(seg), len(lanes)))
            lanes.append(f"S{stage} {gpu}")
    idx = np.concatenate(rows) if rows else np.zeros(0, dtype=int)
    lane = np.concatenate(lane_of) if lane_of else np.zeros(0, dtype=int)
    return Timeline(
        phase=tl.phase, lanes=tuple(lanes), lane=lane, start=tl.start[idx], duration=tl.duration[idx],
        kind=tl.kind[idx], micro_batch=tl.micro_batch[idx], total_ms=tl.total_ms, bubble_fraction=tl.bubble_fraction,
    )


class SegmentBars(pg.BarGraphItem):
    """A ``BarGraphItem`` that works its bounding rect out once per data and view transform.

    pyqtgraph works it out on every call: the bars' data bounds padded by half the outline's width
    in pixels, which it measures through the item's device transform (~20 µs); Qt asks for it ~4
    times per bar item per result (the scene's index and dirty regions, the paint's exposure), ~0.5 ms
    of a 16-GPU edit. The rect is kept until the bars get new data (:meth:`setOpts`) or the view's
    transform changes (:meth:`viewTransformChanged`, pyqtgraph's hook for it, as its own
    ``InfiniteLine`` keeps its rect)."""

    def __init__(self, **opts) -> None:
        self._rect: QRectF | None = None
        super().__init__(**opts)

    def setOpts(self, **opts) -> None:  # noqa: N802 - pyqtgraph API
        self._rect = None
        super().setOpts(**opts)

    def viewTransformChanged(self) -> None:  # noqa: N802 - pyqtgraph API
        self._rect = None
        super().viewTransformChanged()

    def boundingRect(self) -> QRectF:  # noqa: N802 - Qt API
        rect = self._rect
        if rect is None:
            rect = self._rect = super().boundingRect()
        return QRectF(rect)  # a copy: the caller may change it


class TimelinePlot(pg.PlotWidget):
    """The chart: lanes on the y axis (stage 0 on top), time in ms on the x axis."""

    def __init__(self, parent: QWidget | None = None, legend: bool = True) -> None:
        super().__init__(parent, background="w", enableMenu=False)
        self.timeline: Timeline | None = None
        self.setMenuEnabled(False)
        self.setMouseEnabled(x=True, y=False)
        self.hideButtons()
        pi = self.getPlotItem()
        pi.showGrid(x=True, y=False, alpha=0.25)
        blend_grid_by_rows(pi.getAxis("bottom"))  # the grid costs a tenth of what pyqtgraph draws it in
        pi.setLabel("bottom", "time", units="ms")
        pi.getAxis("bottom").enableAutoSIPrefix(False)
        pi.getViewBox().invertY(True)
        self.legend = (
            pi.addLegend(offset=(4, 2), colCount=4, labelTextSize="8pt", brush=pg.mkBrush(255, 255, 255, 230))
            if legend
            else None
        )
        self._headroom = 0.9 if legend else 0.0
        self.bars: dict[str, SegmentBars] = {}
        self._empty: dict[str, bool] = {}  # bar kinds given no segments last time
        self._lane_ticks: list | None = None  # the left axis's ticks as last set
        self._time_values: bool | None = None  # whether the time axis shows its values
        for kind in SEGMENT_KINDS:
            color = SEGMENT_COLORS.get(kind, "#999999")
            bar = SegmentBars(
                x0=np.zeros(0), y=np.zeros(0), width=np.zeros(0), height=BAR_HEIGHT,
                brush=pg.mkBrush(color), pen=pg.mkPen("w", width=0.6),
            )  # no name=: with a legend that would add the entry a second time
            self.addItem(bar)
            if self.legend is not None:
                self.legend.addItem(bar, SEGMENT_LABELS.get(kind, kind))
            self.bars[kind] = bar
        self.note = pg.TextItem("", color="#212529", anchor=(1, 1))
        self.addItem(self.note, ignoreBounds=True)
        self.hover = pg.TextItem("", color="#212529", fill=pg.mkBrush(255, 255, 255, 235), border=pg.mkPen("#adb5bd"), anchor=(0, 1))
        self.hover.setZValue(50)
        self.hover.hide()
        self.addItem(self.hover, ignoreBounds=True)
        self.scene().sigMouseMoved.connect(self._on_mouse)
        pi.getViewBox().sigResized.connect(self._on_resized)

    def set_timeline(self, tl: Timeline | None, detail: str | None = None) -> None:
        """Show ``tl`` (``None`` empties the chart), with ``detail`` under its note (None: the
        detail shown now stays).

        The view box's new ranges are applied to its transform here, not in the paint (pyqtgraph
        defers them to it): applied there they dirty the axes and bars again, and the chart paints
        twice per result."""
        if detail is not None:
            self.detail = detail
        self.timeline = tl
        if tl is None:  # nothing of the last plan stays: no bars, lane names or time axis
            for kind, bar in self.bars.items():
                self._set_bars(kind, bar, np.zeros(0), np.zeros(0), np.zeros(0))
            self.note.setText("")
            self._set_lane_ticks([[]])
            self._show_time_values(False)  # no time scale of no plan
            self.setXRange(0, 1, padding=0)
            self.setYRange(0, 1, padding=0)
            return
        self._show_time_values(True)
        for kind, bar in self.bars.items():
            m = tl.segments_of(kind)
            self._set_bars(kind, bar, tl.start[m], tl.lane[m].astype(float), tl.duration[m])
        n = len(tl.lanes)
        step = max(1, int(np.ceil(n / 32)))  # at most ~32 labels; hover names every lane
        self._set_lane_ticks([[(i, name) for i, name in enumerate(tl.lanes) if i % step == 0]])
        total = max(tl.total_ms, 1e-9)
        self._write_note()
        self._fit_y((0.0, total * 1.02))  # both ranges in one go: the view box updates once
        self.getPlotItem().getViewBox().prepareForPaint()

    # pyqtgraph draws a bar item or an axis again whenever it is given data or a style, changed or
    # not; a result changes the time axis and the bars of the kinds it has, seldom the lanes
    def _set_bars(self, kind: str, bar: SegmentBars, x0: np.ndarray, y: np.ndarray, width: np.ndarray) -> None:
        """Give ``bar`` its segments, unless it had none and still has none."""
        if len(x0) == 0 and self._empty.get(kind, False):
            return
        self._empty[kind] = len(x0) == 0
        bar.setOpts(x0=x0, y=y, width=width, height=BAR_HEIGHT)

    def _set_lane_ticks(self, ticks: list) -> None:
        """The lane names on the left axis, set only when they change."""
        if ticks != self._lane_ticks:
            self._lane_ticks = ticks
            self.getPlotItem().getAxis("left").setTicks(ticks)

    def _show_time_values(self, shown: bool) -> None:
        """Show or hide the time axis's values, only when that changes."""
        if shown != self._time_values:
            self._time_values = shown
            self.getPlotItem().getAxis("bottom").setStyle(showValues=shown)

    def _on_resized(self, *_args: object) -> None:
        from shiboken6 import isValid

        if isValid(self):  # the view box also resizes while the chart is being destroyed
            self._fit_y()

    def _fit_y(self, x_range: tuple[float, float] | None = None) -> None:
        """Y range with room under the last lane for the note, in pixels: the note never sits on
        the bars, however many lanes and however short the chart; with ``x_range``, the x range
        set in the same call (one update of the view box and its axes instead of two)."""
        tl = self.timeline
        if tl is None:
            return
        n = len(tl.lanes)
        top = -0.6 - self._headroom
        span = n - 0.4 - top
        h_px = max(1.0, float(self.getPlotItem().getViewBox().height()))
        note_px = self.note.textItem.boundingRect().height() + 4 if self.note.textItem.toPlainText() else 0.0
        # r data units under the lanes take r / (span + r) of the height: enough for note_px
        room = note_px / max(h_px - note_px, 1.0) * span if h_px > note_px else span
        bottom = n - 0.4 + max(0.3, room)
        if x_range is None:
            self.setYRange(top, bottom, padding=0)
        else:
            self.getPlotItem().getViewBox().setRange(xRange=x_range, yRange=(top, bottom), padding=0)
        if tl.phase == "request":  # a long caption: from the left edge, not the right
            self.note.setAnchor((0, 1))
            self.note.setPos(0.0, bottom)
        else:
            self.note.setAnchor((1, 1))
            self.note.setPos(max(tl.total_ms, 1e-9) * 1.01, bottom)

    def set_detail(self, text: str) -> None:
        """A second line under the bubble note saying what the step holds (empty: none)."""
        changed = text != getattr(self, "detail", "")
        self.detail = text
        if self.timeline is not None:
            if changed:
                self.set_timeline(self.timeline)  # room for the second line
            else:
                self._write_note()

    def _write_note(self) -> None:
        tl = self.timeline
        assert tl is not None
        if tl.phase == "request":
            text = f"one request from its prefill batch · first output token at {self.ttft_at(tl):,.1f} ms"
        else:
            # named as the metric cards name it: the decode-only step is not the TPOT card's mean iteration
            step = "decode-only step" if tl.phase == "decode" else "prefill step"
            text = f"bubble {tl.bubble_fraction:.0%} · {step} {max(tl.total_ms, 1e-9):,.2f} ms"
        detail = getattr(self, "detail", "")
        self.note.setText(f"{text}\n{detail}" if detail else text)

    @staticmethod
    def ttft_at(tl: Timeline) -> float:
        """End of the first decode-lane segment of a request timeline: the first token's time."""
        last = len(tl.lanes) - 1
        first = np.nonzero(tl.lane == last)[0]
        if len(first):
            return float(tl.start[first[0]])
        return float(tl.total_ms)

    def segment_at(self, x: float, y: float) -> int | None:
        """Index of the segment under data point (x ms, y lane), or None."""
        tl = self.timeline
        if tl is None or len(tl.start) == 0:
            return None
        lane = int(round(y))
        hit = np.nonzero((tl.lane == lane) & (tl.start <= x) & (x <= tl.start + tl.duration) & (abs(y - lane) <= BAR_HEIGHT / 2))[0]
        return int(hit[-1]) if len(hit) else None

    def describe(self, i: int) -> str:
        tl = self.timeline
        assert tl is not None
        kind = SEGMENT_KINDS[int(tl.kind[i])]
        s, d = float(tl.start[i]), float(tl.duration[i])
        mb = int(tl.micro_batch[i])
        if tl.phase == "request":
            who = f"output token {mb + 1}" if mb >= 0 else ("wait for a prefill batch" if kind == "idle" else "")
        else:
            who = f"micro-batch {mb}" if mb >= 0 else ""
        return (
            f"{tl.lanes[int(tl.lane[i])]} · {SEGMENT_LABELS.get(kind, kind)} {who}\n"
            f"{s:,.3f} → {s + d:,.3f} ms  ({d:,.3f} ms)"
        )

    def _on_mouse(self, pos: QPointF) -> None:
        vb = self.getPlotItem().getViewBox()
        if not vb.sceneBoundingRect().contains(pos):
            self.hover.hide()
            return
        p = vb.mapSceneToView(pos)
        i = self.segment_at(p.x(), p.y())
        if i is None:
            self.hover.hide()
            return
        self.hover.setText(self.describe(i))
        self.hover.setPos(p.x(), p.y())
        self.hover.show()


class TimelinePanel(QWidget):
    """Timeline with a prefill / decode switch and a caption."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        # a result repaints this panel: it paints its own background (the window's), so the repaint
        # starts here, not at the window and the dock (whose title bar reloads its icons per paint)
        self.setAutoFillBackground(True)
        self.plot = TimelinePlot(self, legend=False)
        self.timelines: dict[str, Timeline] = {}
        self.stage_timelines: dict[str, Timeline] = {}
        self.result: PlanResult | None = None
        #: The request timeline of a disaggregated plan (None when aggregated) and its caption.
        self.request: Timeline | None = None
        self.request_caption = ""
        self.phase = "decode"
        self.lane_mode = "stage"
        self.lanes = QComboBox()
        self.lanes.setObjectName("timelineLanes")
        for mode, text in LANE_MODES.items():
            self.lanes.addItem(text, mode)
        self.lanes.setToolTip("Lanes: one per pipeline stage, or one per GPU labelled with its id")
        self.lanes.currentIndexChanged.connect(lambda _i: self.set_lane_mode(self.lanes.currentData()))
        self.caption = QLabel("")
        self.caption.setObjectName("hint")
        # a long caption must never widen the dock (it would squeeze the metrics dock): let it be
        # cut at the right and keep the full text in the tooltip
        self.caption.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.caption.setMinimumWidth(self.caption.fontMetrics().horizontalAdvance("M = 16 · bubble 48%"))
        top = QHBoxLayout()
        top.setContentsMargins(6, 2, 6, 0)
        self._group = QButtonGroup(self)
        self.phase_buttons: dict[str, QRadioButton] = {}
        for phase, text in (
            ("prefill", "Prefill"), ("decode", "Decode step"), ("request", "Request (P → KV → D)")
        ):
            b = QRadioButton(text)
            b.setObjectName(f"phase-{phase}")
            b.setChecked(phase == self.phase)
            b.toggled.connect(lambda on, ph=phase: self.set_phase(ph) if on else None)
            self._group.addButton(b)
            top.addWidget(b)
            self.phase_buttons[phase] = b
        req = self.phase_buttons["request"]
        req.setToolTip(
            "Disaggregated serving: one request on the prefill worker, the KV transfer and the decode worker"
        )
        req.setVisible(False)
        top.addSpacing(12)
        # every result changes the caption ("M = 4 · bubble 36%"), which lays out nothing around it
        # (its width is the room left, its height one line): the panel and the window are not laid
        # out again for it
        top.addWidget(LayoutFence(self.caption))
        top.addStretch(1)
        top.addWidget(self.lanes)
        keyrow = QHBoxLayout()
        keyrow.setContentsMargins(6, 0, 6, 0)
        key = QLabel("")
        self.key = key
        self._set_key(False)
        key.setObjectName("timelineKey")
        key.setWordWrap(True)
        keyrow.addWidget(key, 1)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(0)
        lay.addLayout(top)
        lay.addLayout(keyrow)
        lay.addWidget(self.plot, 1)

    def _set_key(self, request: bool) -> None:
        """The colour key: the step kinds, or with a request timeline shown the request's own."""
        kinds = ["compute", "idle", "kv_transfer"] if request else [
            k for k in SEGMENT_KINDS if k not in REQUEST_ONLY_KINDS
        ]
        self.key.setText(
            "  ".join(f'<span style="color:{SEGMENT_COLORS[k]}">■</span> {SEGMENT_LABELS[k]}' for k in kinds)
        )

    def set_request(self, timeline: Timeline | None, caption: str = "", show: bool = False) -> None:
        """The disaggregated request timeline (None: the project is aggregated, the view goes);
        ``show`` switches to it."""
        self.request = timeline
        self.request_caption = caption
        btn = self.phase_buttons["request"]
        btn.setVisible(timeline is not None)
        if timeline is None:
            self.timelines.pop("request", None)
            if self.phase == "request":
                self.phase_buttons["decode"].setChecked(True)  # set_phase("decode") via toggled
            return
        self.timelines["request"] = timeline
        if show and self.phase != "request":
            btn.setChecked(True)
        elif self.phase == "request":
            self.set_phase("request")

    def set_result(self, result: PlanResult) -> None:
        """Show the timelines of ``result`` (lanes as the lane mode says); a layout that does not
        fit has no timeline to show (its steps never run), so the view is cleared with the reason."""
        if result.status.code == "DOES_NOT_FIT":
            self.clear("no timeline: the layout does not fit")
            return
        self.result = result
        self.stage_timelines = dict(result.timelines)
        self._apply(result.micro_batches)

    def set_lane_mode(self, mode: str) -> None:
        """``stage``, ``tp`` (one lane per GPU of each stage's first TP group) or ``all``."""
        if mode not in LANE_MODES:
            raise ValueError(f"lane mode {mode!r} is not one of {', '.join(LANE_MODES)}")
        self.lane_mode = mode
        i = self.lanes.findData(mode)
        if self.lanes.currentIndex() != i:
            self.lanes.setCurrentIndex(i)
        if self.result is not None:
            self._apply(self.result.micro_batches)

    def _apply(self, micro_batches: int | None) -> None:
        r = self.result
        if r is None or self.lane_mode == "stage":
            self.set_timelines(self.stage_timelines, micro_batches)
            return
        groups = lane_groups(r, self.lane_mode)
        self.set_timelines({ph: per_gpu_timeline(tl, groups) for ph, tl in self.stage_timelines.items()}, micro_batches)

    def set_timelines(self, timelines: dict[str, Timeline], micro_batches: int | None = None) -> None:
        self.timelines = dict(timelines)
        if self.request is not None:
            self.timelines["request"] = self.request
        self._micro_batches = micro_batches
        self._show_phase()

    def _show_phase(self) -> None:
        """Draw the current phase's timeline once, its caption and detail set first."""
        tl = self.timelines.get(self.phase)
        self.plot.set_timeline(tl, self._update_caption())

    def _update_caption(self) -> str | None:
        """Say what the drawn step is: whose prompts or tokens, in how many micro-batches; returns
        the chart's detail line (None: no timeline, the chart keeps its own)."""
        tl = self.timelines.get(self.phase)
        if tl is None:
            self.caption.setText("no timeline")
            return None
        self._set_key(self.phase == "request")
        if self.phase == "request":
            self.caption.setText("one request")
            self.caption.setToolTip(self.request_caption)
            return self.request_caption
        m = getattr(self, "_micro_batches", None)
        mb = f"M = {m} · " if m else ""
        what = ""
        r = self.result
        if r is not None and m:
            per = -(-r.batch // m)
            if self.phase == "prefill":
                what = f"prompts of the whole batch ({r.batch}), {per} per micro-batch; TTFT is one prompt"
            else:
                what = f"one token for each of {r.batch} sequences, {per} per micro-batch"
                tpot = getattr(r, "tpot_ms", None)
                if tpot is not None and tpot > tl.total_ms * 1.005:
                    what += f"\nTPOT {tpot:,.2f} ms: the mean iteration, with new prompts' chunks"
        self.caption.setText(f"{mb}bubble {tl.bubble_fraction:.0%}")
        self.caption.setToolTip(what)
        return what

    def set_phase(self, phase: str) -> None:
        self.phase = phase
        self._show_phase()

    def clear(self, reason: str = "") -> None:
        self.timelines = {} if self.request is None else {"request": self.request}
        self.stage_timelines = {}
        self.result = None
        if self.phase == "request" and self.request is not None:
            return  # the request view does not depend on the aggregated plan
        self.plot.set_timeline(None)
        self.caption.setText(reason)


