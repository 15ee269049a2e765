"""Live metrics: headline figures (each with its "why"), per-GPU memory bars, engine errors.

For a disaggregated project the headline cards (TTFT, TPOT, throughput, cost, KV capacity, batch,
peak memory) and the memory bars are the pools' plan (:class:`studio.engine.disagg.results.DisaggResult`,
its explanations as their "why"); the collective cards (AllReduce, P2P, Bubble, …) stay the
project's aggregated layout and say so."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtGui import QTextCursor
from PySide6.QtWidgets import (
    QFrame,
    QGridLayout,
    QLabel,
    QPushButton,
    QSplitter,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from studio.core.project import Project
from studio.core.units import MIB
from studio.engine.disagg.results import DisaggResult
from studio.engine.plan.results import PlanResult, PlanStatus
from studio.engine.plan.views import Explanation
from studio.gui.panels.fit_label import FitLabel
from studio.gui.panels.value_label import ValueLabel
from studio.gui.toolkit.layout_fence import LayoutFence
from studio.gui.views.kv_tier_bar import TIER_ROOM, KvTierBar
from studio.gui.views.memory_bars import Bar, MemoryBarsWidget
from studio.service import plan_summary, units
from studio.service.kv_tiers import tier_use
from studio.service.messages import one_line


@dataclass(frozen=True)
class Figure:
    """A headline figure: result attribute (or function), unit, explanation keys to look for."""

    key: str
    title: str
    keys: tuple[str, ...]


FIGURES: tuple[Figure, ...] = (
    Figure("ttft", "TTFT", ("ttft_ms", "ttft")),
    Figure("tpot", "TPOT", ("tpot_ms", "tpot")),
    Figure("throughput", "Throughput", ("output_tokens_per_s", "throughput")),
    Figure("cost", "$ / M tokens", ("usd_per_million_output_tokens", "usd_per_million", "cost")),
    Figure("kv", "KV capacity", ("kv_capacity_tokens", "kv_capacity", "kv")),
    Figure("batch", "Batch", ("batch", "max_concurrent_sequences", "concurrency")),
    Figure("allreduce", "AllReduce / layer", ("allreduce_us_per_layer_decode", "allreduce")),
    Figure("p2p", "P2P / boundary", ("p2p_us_per_boundary_decode", "p2p")),
    Figure("bubble", "Bubble", ("bubble_fraction", "bubble")),
    Figure("memory", "Peak memory", ("peak_memory", "memory", "weights")),
    Figure("alltoall", "All-to-all (EP) / layer", ("alltoall_us_per_layer_decode", "alltoall")),
    Figure("cp", "Context parallel / layer", ("cp_us_per_layer_decode", "comm.cp")),
)
#: Cards shown only when the plan has the collective (the others are always shown).
OPTIONAL_CARDS = ("alltoall", "cp")
#: Figures shown outside the cards: the prefix cache's, on the first line of the KV tier bars (a
#: card row more would make the window taller than a 1366×768 screen).
PREFIX = Figure("prefix", "Prefix cache", ("prefix_cache",))
#: Cards a disaggregated plan fills, with the explanation of :class:`DisaggResult` each shows;
#: the other cards describe the aggregated layout and say so in their title.
DISAGG_WHY = {
    "ttft": "latency.ttft",
    "tpot": "latency.tpot",
    "throughput": "throughput.output_tokens_per_s",
    "cost": "cost.usd_per_million_output_tokens",
    "kv": "kv_capacity.pools",
    "batch": "batch.decode",
    "memory": "memory.decode",
}
#: Caption prefix of the cards that stay the aggregated layout's under a disaggregated plan.
AGGREGATED_MARK = "agg. · "
#: The figure of a plan's status (:class:`studio.engine.plan.results.PlanStatus`) each card shows: a
#: status that voids it puts its headline on the card instead of a value, in warning colour.
STATUS_FIGURE = {"ttft": "ttft", "tpot": "tpot", "throughput": "throughput", "cost": "cost"}


def status_value(status: PlanStatus, key: str) -> tuple[str, str] | None:
    """Text and caption of card ``key`` when the plan's status voids its figure (None: it has a value).

    The headline is one word-run (no-break spaces) before its unit, so the card paints it whole:
    ``saturated at 2.56 req/s``, ``does not fit``."""
    figure = STATUS_FIGURE.get(key)
    if figure is None or status.shows(figure):
        return None
    head, _sep, unit = status.headline.rpartition(" ") if status.code == "SATURATED" else ("", "", status.headline)
    text = f"{head.replace(' ', NBSP)} {unit}" if head else unit.replace(" ", NBSP)
    caption = {"SATURATED": "queue grows: no TTFT" if key == "ttft" else "",
               "DOES_NOT_FIT": "no latency, no tokens", "NOT_COMPUTED": ""}.get(status.code, "")
    return text, caption


NBSP = "\u00a0"


def find_explanation(explanations: dict[str, Explanation], keys: tuple[str, ...]) -> Explanation | None:
    """The explanation filed under the first of ``keys`` present, else the first key that
    contains one of them."""
    for k in keys:
        if k in explanations:
            return explanations[k]
    for k in keys:
        for name, e in explanations.items():
            if k in name:
                return e
    return None


def figure_value(r: PlanResult, key: str) -> tuple[str, str]:
    """Text of a figure and its small caption (per-phase detail)."""
    if key == "ttft":
        return units.duration_ms(r.ttft_ms), f"end-to-end {units.duration_ms(r.request_latency_ms)}"
    if key == "tpot":
        return units.duration_ms(r.tpot_ms, 2), f"{r.tokens_per_s_per_user:,.1f} tok/s/user"
    if key == "throughput":
        if r.output_tokens_per_s <= 0:
            return "—", "does not fit: no tokens"
        return units.si(r.output_tokens_per_s, "tok/s"), f"{units.si(r.output_tokens_per_s_per_gpu, 'tok/s')}/GPU"
    if key == "cost":
        return units.usd(r.usd_per_million_output_tokens), f"{units.usd(r.usd_per_hour)}/hour"
    if key == "kv":
        return units.si(float(r.kv_capacity_tokens), "tok"), f"{r.max_concurrent_sequences:,} sequences"
    if key == "batch":
        return f"{r.batch:,}", batch_caption(r)
    if key == "allreduce":
        if r.layout.tp == 1:
            return "none", "TP 1: no all-reduce"
        return units.duration_us(r.allreduce_us_per_layer_decode), f"prefill {units.duration_us(r.allreduce_us_per_layer_prefill)}"
    if key == "p2p":
        if r.layout.pp == 1:
            return "—", "no pipeline"
        return units.duration_us(r.p2p_us_per_boundary_decode), f"prefill {units.duration_us(r.p2p_us_per_boundary_prefill)}"
    if key == "bubble":
        return f"{r.bubble_fraction:.0%}", f"M = {r.micro_batches}"
    if key == "alltoall":
        if not has_alltoall(r):
            return "—", "no expert all-to-all"
        return units.duration_us(r.alltoall_us_per_layer_decode), f"prefill {units.duration_us(r.alltoall_us_per_layer_prefill)}"
    if key == "cp":
        if r.layout.cp <= 1:
            return "—", "no context parallelism"
        return units.duration_us(r.cp_us_per_layer_decode), f"prefill {units.duration_us(r.cp_us_per_layer_prefill)}"
    if key == "memory":
        m = r.peak_memory
        return units.size_bytes(m.total), f"of {units.size_bytes(m.capacity)} ({m.gpu_id})"
    raise KeyError(key)


def disagg_value(d: DisaggResult, key: str) -> tuple[str, str]:
    """Text and caption of headline card ``key`` for a disaggregated plan."""
    p, dc = d.prefill, d.decode
    if key == "ttft":
        return (units.duration_ms(d.ttft_ms),
                f"q {d.queue_ms:,.0f} + P {d.prefill_ms:,.0f} + KV {d.transfer.time_ms:.2g}")
    if key == "tpot":
        return units.duration_ms(d.tpot_ms, 2), "decode only"
    if key == "throughput":
        if d.output_tokens_per_s <= 0:
            return "—", "no tokens"
        return (units.si(d.output_tokens_per_s, "tok/s"),
                f"{d.output_tokens_per_s_per_gpu:,.3g}/GPU, {d.limited_by}-bound")
    if key == "cost":
        return units.usd(d.usd_per_million_output_tokens), f"{units.usd(d.usd_per_hour)}/hour"
    if key == "kv":
        return f"{dc.kv_sequences:,} seq", f"per D worker; P {p.kv_sequences:,}"
    if key == "batch":
        return f"{dc.batch:,.3g}", f"D worker, cap {dc.max_running:,}"
    if key == "memory":
        pm, dm = p.peak_memory, dc.peak_memory
        if dm is None or pm is None:
            return "—", "no memory figures"
        return units.size_bytes(dm.total), f"D; P {units.size_bytes(pm.total)}"
    raise KeyError(key)


def disagg_why(d: DisaggResult, key: str) -> str:
    """The "why" of headline card ``key`` for a disaggregated plan: the engine's explanations."""
    if key == "memory":
        parts = [d.explanations[k].as_text() for k in ("memory.decode", "memory.prefill") if k in d.explanations]
        return "\n\n".join(parts) or "Peak memory: the engine gave no breakdown for the pools."
    e = d.explanations.get(DISAGG_WHY[key])
    text = e.as_text() if e else f"{key}: the engine gave no breakdown for this figure."
    if key == "throughput":
        text = (f"Throughput of the disaggregated plan, limited by the slower pool at the load: prefill "
                f"{d.prefill.capacity_rps:.3g} req/s, decode {d.decode.capacity_rps:.3g} req/s at saturation "
                f"(the {d.limited_by} limits at {d.saturation_rate_per_s:.3g} req/s).\n\n{text}")
    elif key == "ttft":
        text = f"TTFT = queue + prefill on the prefill pool + KV transfer to the decode pool.\n\n{text}"
    elif key == "tpot":
        text = f"TPOT: decode iterations only, no prefill interference.\n\n{text}"
    return text


def pool_bars(d: DisaggResult) -> list[Bar]:
    """The memory bars of a disaggregated plan: every GPU of the first prefill worker (P…), then of
    the first decode worker (D…)."""
    out = []
    for tag, pool in (("P", d.prefill), ("D", d.decode)):
        multi = pool.pool.pp > 1
        for m in pool.memory:
            out.append(Bar(f"{tag}{m.stage}.{m.tp_rank}" if multi else f"{tag}{m.tp_rank}", m))
    return out


def status_line(r: PlanResult, d: DisaggResult | None = None) -> str:
    """One line for the window's status bar on the plan the headline cards show: the pools' plan
    ``d`` of a disaggregated project when it is costed, else the layout's ``r`` (its line is
    :func:`studio.service.plan_summary.status_line`, as every other reader of a layout's plan)."""
    if d is None:
        return plan_summary.status_line(r)
    status = d.status
    head = f"disaggregated {d.label} · {d.gpus} GPUs"
    if status.code == "DOES_NOT_FIT":
        return f"{head} · does not fit"
    parts = [head, "fits"]
    if status.code == "SATURATED":
        parts[1] = status.headline.upper()[:1] + status.headline[1:]
    parts.append(f"TTFT {units.duration_ms(d.ttft_ms, 0)}" if status.shows("ttft") else "no TTFT")
    parts.append(f"TPOT {units.duration_ms(d.tpot_ms)}")
    return " · ".join(parts)


def assumption(r: PlanResult, key: str) -> str:
    """What a figure assumes, first in its tooltip and breakdown, so that throughput and
    batch × tok/s per user are not read as the same quantity."""
    ld = r.load
    if key == "throughput":
        at = f" at {ld.request_rate_per_s:,.3g} requests/s" if ld is not None else ""
        return (f"Sustained throughput{at}: {r.layout.replicas} replica(s) × {r.batch:,} running sequences, each prompt "
                "prefilled and then decoded, so prefill time is included; it is below batch × tok/s per user.")
    if key == "tpot":
        return (f"The mean scheduler iteration under the load: the next token of each of the {r.batch:,} running "
                "sequences plus the prompt chunks of new requests (prefill interference), so it is longer than "
                f"the decode-only step the timeline draws; {r.tokens_per_s_per_user:,.1f} tok/s per user is 1000 / TPOT.")
    return ""


def batch_caption(r: PlanResult) -> str:
    """What sets the batch: the KV cache ("auto (fits KV)") only when it is what limits it, else
    the workload's cap ("auto (capped at 256)"), or the user ("fixed")."""
    if not r.batch_auto:
        return "fixed"
    if r.batch >= r.max_concurrent_sequences:
        return "auto (fits KV)"
    return f"auto (capped at {r.batch:,})"


def has_alltoall(r: PlanResult) -> bool:
    """Whether the layout runs MoE expert-parallel all-to-alls (EP larger than TP)."""
    return any(c.kind == "alltoall" for c in r.comm)


def alltoall_text(r: PlanResult) -> str:
    """How the all-to-all figure comes about, from the engine's costed collectives."""
    lines = []
    for c in r.comm:
        if c.kind != "alltoall":
            continue
        lines.append(
            f"{c.phase}: {units.duration_us(c.time_us)} per all-to-all over {len(c.group)} GPUs = {c.latency_us:,.1f} µs latency "
            f"+ {c.message_bytes / MIB:,.2f} MiB per GPU at {c.bandwidth_gbps:,.1f} GB/s"
            + (f" (bottleneck: {c.bottleneck_kind})" if c.bottleneck_kind else "")
        )
    head = ("All-to-all (EP) per MoE layer: each GPU sends its tokens' hidden states to the GPUs holding "
            "their experts (dispatch) and gets the results back (combine); the timeline draws both.")
    return "\n".join([head, *lines]) if lines else "No expert all-to-all: EP is not larger than TP, or the model is dense."


class FigureCard(QFrame):
    """Title, big value (never elided: it shrinks to fit), caption; click shows the explanation
    in the side panel."""

    clicked = Signal(str)

    def __init__(self, fig: Figure, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.fig = fig
        self.setObjectName("figureCard")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.title = FitLabel(fig.title)
        self.title.setObjectName("figureTitle")
        self.value = ValueLabel("—")
        self.value.setObjectName("figureValue")
        self.caption = FitLabel("")
        self.caption.setObjectName("figureCaption")
        lay = QVBoxLayout(self)
        lay.setContentsMargins(8, 4, 8, 4)
        lay.setSpacing(0)
        for w in (self.title, self.value, self.caption):
            lay.addWidget(w)

    def mousePressEvent(self, event) -> None:  # noqa: N802 - Qt API
        self.clicked.emit(self.fig.key)


#: How far the cards' pane may stay wider than its values need before its width hints follow them
#: down (px; they follow them up at once): about two digits of a value at its smallest scale.
WIDTH_SLACK = 24


def steady_width(kept: int, needed: int, slack: int = WIDTH_SLACK) -> int:
    """The width to report for a need of ``needed`` px after reporting ``kept``: ``needed`` when it
    is more than ``kept`` or more than ``slack`` below it, else ``kept``."""
    return needed if needed > kept or needed < kept - slack else kept


class CardsPane(QWidget):
    """The plan line and the metric cards, with steady width hints.

    A card's value sets its card's minimum and preferred widths (a value is never elided: it shrinks
    to :data:`studio.gui.panels.value_label.MIN_SCALE` at most), so nearly every result moved the
    panel's minimum width by a few pixels (159 ↔ 166 px on the 16-GPU example) and, through the dock,
    the main window's: the window and its docks were laid out again on every edit. This pane's width
    hints follow its values up at once (a narrowed dock still widens to keep every value legible) and
    down only when they need :data:`WIDTH_SLACK` px less than the pane last asked for (a dock the user
    narrows may stay that much wider than its values need, no more). Heights follow at once."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._min_width = 0
        self._hint_width = 0

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt API
        hint = super().minimumSizeHint()
        self._min_width = steady_width(self._min_width, hint.width())
        return QSize(self._min_width, hint.height())

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt API
        hint = super().sizeHint()
        self._hint_width = steady_width(self._hint_width, hint.width())
        return QSize(self._hint_width, hint.height())


class MetricsPanel(QWidget):
    """Headline figures in a grid, memory bars below, the "why" of the chosen figure beside.

    Signals
    -------
    bestRequested()
        The user pressed "Use best layout" under a plan the engine could not compute.
    """

    bestRequested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        # a result repaints this panel: it paints its own background (the window's), so the repaint
        # starts here, not at the window and the dock (whose title bar reloads its icons per paint)
        self.setAutoFillBackground(True)
        self.result: PlanResult | None = None
        #: The disaggregated plan the headline cards show (None: aggregated serving, or the pools
        #: are not costed) and the project's pools as the serving mode names them.
        self.disagg: DisaggResult | None = None
        self._disagg_label = ""
        self.status = QLabel("Computing…")
        self.status.setObjectName("planStatus")
        self.status.setWordWrap(True)
        #: Disaggregated serving: the pools' figures, and that the cards are the aggregated layout.
        self.serving_note = QLabel("")
        self.serving_note.setObjectName("servingNote")
        self.serving_note.setWordWrap(True)
        self.serving_note.setStyleSheet("background: #fff4e6; border: 1px solid #f08c00; padding: 1px 3px;")
        self.serving_note.setVisible(False)
        self.best = QPushButton("Use best layout")
        self.best.setToolTip("Sweep every layout this model and cluster allow and apply the best one (one undo step)")
        self.best.setVisible(False)
        self.best.clicked.connect(self.bestRequested)
        # Built from the outside in: the splitter in this panel, each pane in the splitter, and only
        # then what a pane holds. Under the application's style sheet every reparenting restyles
        # the whole subtree it moves; the cards, built into a grid that was then handed to their
        # pane, the pane to the splitter and the splitter to this panel, were restyled four times.
        # (Each pane is filled before the next is added: the focus chain is the one it was.)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        split = QSplitter(Qt.Orientation.Vertical)
        lay.addWidget(split)
        # the cards' pane, in a fence: a new value lays out the cards' grid, and the panel, its dock
        # and the main window only when the pane's steady hints change (seldom: see CardsPane)
        fence = LayoutFence()
        split.addWidget(fence)
        top = CardsPane()
        fence.set_child(top)
        tl = QVBoxLayout(top)
        tl.setContentsMargins(0, 0, 0, 0)
        tl.addWidget(self.serving_note)
        tl.addWidget(LayoutFence(self.status))  # asked its height for a width, it repaints itself
        tl.addWidget(self.best, 0, Qt.AlignmentFlag.AlignLeft)
        self.cards: dict[str, FigureCard] = {}
        grid = QGridLayout()
        grid.setSpacing(4)
        tl.addLayout(grid)
        for i, fig in enumerate(FIGURES):
            card = FigureCard(fig)
            card.setVisible(fig.key not in OPTIONAL_CARDS)  # shown once a plan has the collective
            card.clicked.connect(self.show_why)
            self.cards[fig.key] = card
            grid.addWidget(card, i // 2, i % 2)
        for column in (0, 1):  # two equal columns whatever one card's text asks for
            grid.setColumnStretch(column, 1)
        memory_box = QWidget()
        split.addWidget(memory_box)
        ml = QVBoxLayout(memory_box)
        ml.setContentsMargins(0, 0, 0, 0)
        ml.setSpacing(0)
        #: What the bars are when they are not the aggregated layout's GPUs: the pools' first workers.
        self.memory_title = QLabel("")
        self.memory_title.setObjectName("memoryTitle")
        self.memory_title.setWordWrap(True)
        self.memory_title.setStyleSheet("font-size: 8pt; color: #495057;")
        self.memory_title.setVisible(False)
        ml.addWidget(self.memory_title)
        self.memory = MemoryBarsWidget()
        ml.addWidget(self.memory, 1)
        #: HBM / host DRAM / NVMe KV of one replica, shown when the plan has a prefix cache.
        self.tiers = KvTierBar()
        self.tiers.setVisible(False)
        self.tiers.clicked.connect(lambda: self.show_why(PREFIX.key))
        ml.addWidget(self.tiers)
        self.project: Project | None = None
        self.why = QTextBrowser()
        self.why.setObjectName("why")
        self.why.setPlaceholderText("Click a figure to see how it was computed.")
        self.why.setMinimumHeight(44)  # two lines; the window must fit a 1366×768 screen
        split.addWidget(self.why)
        self._why_key = "ttft"
        self._why_text = ""  # what the "why" panel's document holds
        split.setStretchFactor(0, 0)
        # the "why" gets the larger share of what the cards leave: at 1366×768 it read three lines
        # beside a chart that needs no more than its minimum to be read
        split.setStretchFactor(1, 2)
        split.setStretchFactor(2, 3)
        split.setChildrenCollapsible(False)
        split.setSizes([300, 120, 200])
        self._split = split

    def set_result(self, r: PlanResult, project: Project | None = None) -> None:
        """The project's aggregated plan (under a costed disaggregated plan: the cards marked
        aggregated and the note's comparison); ``project``, the plan's, for the KV tiers' use."""
        self.result = r
        self.project = project
        self._render()

    def set_disagg(self, disaggregated: bool, label: str = "", res: DisaggResult | None = None) -> None:
        """The project's serving mode: ``disaggregated`` with pools ``label`` (``2P(TP4)+1D(TP8)``)
        and their costed plan ``res`` (None: not costed, the cards stay the aggregated layout's)."""
        disagg, disagg_label = (res, label) if disaggregated else (None, "")
        if disagg is self.disagg and disagg_label == self._disagg_label:
            return  # the serving mode's plan did not change: the cards already show it (set_result drew them)
        self.disagg, self._disagg_label = disagg, disagg_label
        self._render()

    def _render(self) -> None:
        r = self.result
        if r is None:
            self.set_serving_note(self.note())
            return
        self.best.setVisible(False)
        d = self.disagg
        status_tip = ""
        if d is not None:  # the fit reason is long; the note above already names the pools
            status, style = f"<b>{d.label}</b> on {d.gpus} GPUs — fits", ""
            status_tip = d.fit_reason
            if not d.status.ok:
                status, style = f"<b>{d.label}</b> on {d.gpus} GPUs — {_html(d.status.headline)}", "color: #c92a2a;"
                status_tip = d.status.reason
        elif r.status.code == "SATURATED":  # the whole reason in the tooltip and the why panel
            status, style = (f"<b>{r.layout.label}</b> on {_on(r)} — {_html(r.status.headline)}: "
                             "TTFT has no steady state", "color: #c92a2a;")
            status_tip = r.status.reason
        elif r.fits:
            status, style = f"<b>{r.layout.label}</b> on {_on(r)} — {r.fit_reason}", ""
        else:
            status, style = f"<b>{r.layout.label}</b> does not fit: {r.fit_reason}", "color: #c92a2a;"
        # in place: a style sheet set again re-polishes the label even when it is the same
        for setter, getter, value in (
            (self.status.setToolTip, self.status.toolTip, status_tip),
            (self.status.setText, self.status.text, status),
            (self.status.setStyleSheet, self.status.styleSheet, style),
        ):
            if getter() != value:
                setter(value)
        for fig in FIGURES:
            card = self.cards[fig.key]
            if d is not None and fig.key in DISAGG_WHY:
                value, caption = disagg_value(d, fig.key)
                tip = f"<p>Disaggregated {_html(d.label)}</p><pre>{_html(disagg_why(d, fig.key))}</pre>"
            else:
                value, caption = figure_value(r, fig.key)
                e = find_explanation(r.explanations, fig.keys)
                if fig.key == "alltoall":
                    card.setVisible(has_alltoall(r))
                    tip = f"<pre>{_html(alltoall_text(r))}</pre>"
                else:
                    if fig.key == "cp":
                        card.setVisible(r.layout.cp > 1)
                    tip = f"<pre>{_html(e.as_text())}</pre>" if e else f"{fig.title}: no breakdown from the engine"
                    if note := assumption(r, fig.key):
                        tip = f"<p>{_html(note)}</p>{tip}"
                if d is not None:  # a figure of the aggregated layout beside the pools' cards
                    caption = AGGREGATED_MARK + caption
                    tip = f"<p>The project's aggregated layout {_html(r.layout.label)}, for comparison</p>{tip}"
            shown_status = d.status if d is not None and fig.key in DISAGG_WHY else r.status
            voided = status_value(shown_status, fig.key)
            if voided is not None:
                value, caption = voided
                tip = f"<p><b>{_html(shown_status.headline)}</b>: {_html(shown_status.reason)}</p>"
            _mark(card.value, "warn" if voided is not None else "")
            for setter, getter, text in (
                (card.value.setText, card.value.text, value),
                (card.caption.setText, card.caption.text, caption),
                (card.setToolTip, card.toolTip, tip),
            ):
                if getter() != text:
                    setter(text)
        if d is not None:
            self.memory.set_bars(pool_bars(d))
            title = (f"Memory per GPU: P prefill {d.prefill.pool.worker_label()}, "
                     f"D decode {d.decode.pool.worker_label()} worker")
        else:
            self.memory.set_memory(r.memory)
            title = ""
        tiers = tier_use(self.project, r) if self.project is not None and d is None else []
        self.tiers.set_tiers(tiers, r.prefix_cache)
        self.tiers.setVisible(bool(tiers))
        # the tier bars take their height from the memory bars' minimum: the window still fits 1366×768
        low = MemoryBarsWidget.MIN_HEIGHT - (self.tiers.height() - TIER_ROOM if tiers else 0)
        if self.memory.minimumHeight() != low:
            self.memory.setMinimumHeight(low)
        if self.memory_title.text() != title:
            self.memory_title.setText(title)
        self.memory_title.setVisible(bool(title))
        self.set_serving_note(self.note())
        self.show_why(self._why_key)

    def status_line(self) -> str | None:
        """The status bar's line on the plan the cards show (None: no plan computed)."""
        return None if self.result is None else status_line(self.result, self.disagg)

    def note(self) -> str:
        """The line above the cards of a disaggregated project: what the cards show ("" when aggregated)."""
        if not self._disagg_label:
            return ""
        r, d = self.result, self.disagg
        agg = _html(r.layout.label) if r is not None else "layout"
        if d is None:
            return (f"<b>Disaggregated {_html(self._disagg_label)}</b> not costed (Serving mode tab). "
                    f"Cards: aggregated {agg}.")
        return f"<b>Cards: disaggregated {_html(d.label)}</b>; agg.: aggregated {agg}."

    def set_serving_note(self, text: str) -> None:
        """The disaggregated plan's headline above the cards ("" hides it: aggregated serving)."""
        shown = self.serving_note.isVisibleTo(self)
        if text != self.serving_note.text():
            self.serving_note.setText(text)
            self.serving_note.setToolTip(
                "Disaggregated serving: TTFT, TPOT, throughput, cost, KV capacity, batch, peak memory and "
                "the memory bars are the prefill and decode pools' plan (Serving mode tab); the cards "
                "marked agg. are the project's aggregated layout on the same GPUs" if text else ""
            )
        self.serving_note.setVisible(bool(text))
        if bool(text) != shown:  # room for the note above the cards, taken from the memory bars
            delta = self.serving_note.sizeHint().height() + 4
            sizes = self._split.sizes()
            delta = min(delta, max(sizes[1] - 80, 0)) if text else -delta
            self._split.setSizes([sizes[0] + delta, sizes[1] - delta, *sizes[2:]])

    def set_error(self, message: str) -> None:
        """The engine refused the project: say why, grey out the figures."""
        if not message:
            return
        self.result = None
        self.status.setText(f"Cannot compute this plan: {one_line(message)}")
        self.status.setToolTip(message)
        self.status.setStyleSheet("color: #c92a2a;")
        self.best.setVisible(True)
        for card in self.cards.values():
            card.value.setText("—")
            card.caption.setText("not computed" if card.fig.key in STATUS_FIGURE else "")
            card.setToolTip("")
            _mark(card.value, "")
        self.memory.set_memory(())
        self.memory_title.setVisible(False)
        self._set_why(message)

    def show_why(self, key: str) -> None:
        """Show the explanation of figure ``key`` in the side panel."""
        self._why_key = key
        r = self.result
        if r is None:
            return
        if self.disagg is not None and key in DISAGG_WHY:
            st = self.disagg.status
            voided_d = STATUS_FIGURE.get(key)
            text = (f"{key}: {st.headline}.\n\n{st.reason}" if voided_d is not None and not st.shows(voided_d)
                    else disagg_why(self.disagg, key))
            self._set_why(text)
            return
        if key == PREFIX.key and r.prefix_cache is None:  # the plan no longer caches prefixes
            key = self._why_key = "ttft"
        fig = next(f for f in (*FIGURES, PREFIX) if f.key == key)
        voided = STATUS_FIGURE.get(key)
        if voided is not None and not r.status.shows(voided):  # no number the plan cannot meet
            text = f"{fig.title}: {r.status.headline}.\n\n{r.status.reason}"
            self._set_why(text)
            return
        e = None if key == "alltoall" else find_explanation(r.explanations, fig.keys)
        if key == "alltoall":
            text = alltoall_text(r)
        else:
            text = e.as_text() if e else f"{fig.title}: the engine gave no breakdown for this figure."
        if note := assumption(r, key):
            text = f"{note}\n\n{text}"
        if r.assumptions and key == "ttft":
            text += "\n\nAssumptions:\n" + "\n".join(f"  • {a}" for a in r.assumptions)
        self._set_why(text)

    def _set_why(self, text: str) -> None:
        """Show ``text`` in the "why" panel, from its top (nothing happens when it is shown already).

        Only what differs from the text shown is replaced, through a cursor: the document lays out
        again, and the panel repaints, only the lines an edit changed (a result usually changes a
        few figures of the explanation; replacing all of it laid out and painted every line, ~1 ms
        of a 16-GPU edit, and ``setPlainText`` lays the panel out from scratch, three times as long)."""
        old = self._why_text
        if text == old:
            return
        doc = self.why.document()
        cursor = QTextCursor(doc)
        if doc.characterCount() - 1 != _utf16_len(old):  # changed behind this panel's back: all of it
            cursor.select(QTextCursor.SelectionType.Document)
            cursor.insertText(text)
        else:
            head = _common_prefix(old, text)
            tail = _common_suffix(old, text, min(len(old), len(text)) - head)
            cursor.setPosition(_utf16_len(old[:head]))
            cursor.setPosition(_utf16_len(old[: len(old) - tail]), QTextCursor.MoveMode.KeepAnchor)
            cursor.insertText(text[head : len(text) - tail])
        self._why_text = text
        self.why.verticalScrollBar().setValue(0)


def _utf16_len(s: str) -> int:
    """Length of ``s`` in UTF-16 code units (a document's positions)."""
    return len(s) if s.isascii() else len(s.encode("utf-16-le")) // 2


def _common_prefix(a: str, b: str) -> int:
    """Length of the longest common prefix of ``a`` and ``b`` (slices compared in halves)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _common_suffix(a: str, b: str, most: int) -> int:
    """Length of the longest common suffix of ``a`` and ``b``, at most ``most``."""
    lo, hi = 0, max(0, most)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[len(a) - mid :] == b[len(b) - mid :]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _on(r: PlanResult) -> str:
    """``16 GPUs``, or ``14 GPUs (1 idle)`` when the layout leaves drawn GPUs unused."""
    return f"{r.gpus} GPUs" + (f" ({len(r.idle_gpus)} idle)" if r.idle_gpus else "")


def _mark(label: QLabel, status: str) -> None:
    """Set the ``status`` property the style sheets colour (``warn``: a voided figure), re-polishing
    only when it changes."""
    if label.property("status") == status:
        return
    label.setProperty("status", status)
    label.style().unpolish(label)
    label.style().polish(label)
    label.update()


def _html(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
