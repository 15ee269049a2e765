"""Serving-mode panel: aggregated, or disaggregated prefill/decode pools (``--disagg`` syntax), each
edit one undo step; shows both pools, the KV transfer between them and the balance, costed off the
GUI thread with :func:`studio.engine.disagg.evaluate.evaluate_disaggregated`."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QComboBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QTextBrowser,
    QWidget,
)

from studio.core.errors import StudioError
from studio.core.project import Project
from studio.core.serving_mode import SPEC_HELP, ServingMode, parse_pools
from studio.engine.disagg.summary import summary_lines
from studio.gui.document import ProjectDocument
from studio.gui.worker import ScheduledWork, evaluate_work
from studio.service.disagg_start import best_pools

BACKENDS = ("nixl", "mooncake", "ucx")


def _evaluate(project: Project) -> object:
    from studio.engine.disagg.evaluate import evaluate_disaggregated

    return evaluate_disaggregated(project)


def summary_text(res) -> str:
    """Plain-text lines for the panel: both pools, then the figures as ``plan --disagg`` and the
    export's header write them (:func:`studio.engine.disagg.summary.summary_lines`), the balance."""
    p, d = res.prefill, res.decode
    lines = [
        f"{res.label} — {res.gpus} GPUs"
        + (f" ({res.unused_gpus} unused)" if res.unused_gpus else ""),
        f"Prefill pool {p.label} on {', '.join(p.gpu_types)}: {p.capacity_rps:.3g} req/s at saturation, "
        f"{p.utilisation:.0%} busy",
        f"Decode pool {d.label} on {', '.join(d.gpu_types)}: {d.capacity_rps:.3g} req/s, {d.utilisation:.0%} busy, "
        f"{d.batch:.3g} sequences per worker",
        *summary_lines(res),
        res.balance.describe(p.pool.workers, d.pool.workers),
    ]
    if res.load_note:
        lines.append(res.load_note)
    return "\n".join(lines)


class ServingModePanel(QWidget):
    """Edits ``project.serving_mode`` and shows the disaggregated plan."""

    #: Emitted when a disaggregated plan (or its error) is shown: (text, is_error).
    shown = Signal(str, bool)
    #: The costed disaggregated plan (a ``DisaggResult``), or None: aggregated, or the engine
    #: refused the pools (the canvas arrow and the timeline's request view follow it).
    planned = Signal(object)

    def __init__(
        self, doc: ProjectDocument, parent: QWidget | None = None, threaded: bool = True
    ) -> None:
        super().__init__(parent)
        self.doc = doc
        self._project = doc.project
        self.jobs = ScheduledWork(evaluate_work(_evaluate), lambda: self._project, threaded=threaded,
                                  name="the disaggregated plan", parent=self)
        self.jobs.responded.connect(lambda r: None if r.cancelled else self._show(r.result, r.revision, r.error))
        #: The sweep for the pools to start from (switching to disaggregated, Balance): it answers
        #: with one undo step that sets them, or says why none can serve.
        self.starts = ScheduledWork(lambda project, _job: best_pools(project), lambda: self._start_project,
                                    threaded=threaded, name="the best pool split", parent=self)
        self.starts.responded.connect(self._start_found)
        self._start_project = doc.project
        self._start_text = ""
        self._updating = False
        form = QFormLayout(self)
        self.mode = QComboBox()
        self.mode.addItem("Aggregated (one pool)", "aggregated")
        self.mode.addItem("Disaggregated prefill / decode", "disaggregated")
        self.mode.setToolTip(
            "Aggregated: every replica prefills and decodes. Disaggregated: a prefill pool "
            "and a decode pool, the KV cache moving between them"
        )
        self.mode.activated.connect(self._mode_chosen)
        form.addRow("Serving", self.mode)
        self.spec = QLineEdit()
        self.spec.setPlaceholderText("2P:tp4,1D:tp8")
        self.spec.setToolTip(SPEC_HELP)
        self.spec.editingFinished.connect(self._spec_edited)
        form.addRow("Pools", self.spec)
        self.backend = QComboBox()
        for b in BACKENDS:
            self.backend.addItem(b, b)
        self.backend.setToolTip("KV-transfer library the exports configure")
        self.backend.activated.connect(self._backend_chosen)
        form.addRow("KV transfer", self.backend)
        self.balance = QPushButton("Balance the pools")
        self.balance.setToolTip(
            "Apply the prefill:decode worker split with the most tokens/s per GPU (one undo step)"
        )
        self.balance.clicked.connect(self.apply_balance)
        form.addRow(self.balance)
        self.view = QTextBrowser()
        self.view.setMinimumHeight(140)
        form.addRow(self.view)
        self.hint = QLabel("")
        self.hint.setObjectName("hint")
        self.hint.setWordWrap(True)
        form.addRow(self.hint)
        self._result = None
        self.refresh(doc.project)
        doc.projectChanged.connect(lambda p, _k: self.refresh(p))

    # ------------------------------------------------------------------ state
    def refresh(self, p: Project) -> None:
        """Show ``p``'s serving mode and cost it when disaggregated."""
        self._updating = True
        try:
            m = p.serving_mode
            self.mode.setCurrentIndex(self.mode.findData(m.mode))
            self.spec.setEnabled(m.disaggregated)
            self.backend.setEnabled(m.disaggregated)
            self.balance.setEnabled(m.disaggregated)
            self.spec.setText(m.spec() if m.disaggregated else "")
            self.backend.setCurrentIndex(self.backend.findData(m.transfer_backend))
        finally:
            self._updating = False
        self._project = p
        if not m.disaggregated:
            self.jobs.stop()
            self._result = None
            one_pool = "One pool: every replica prefills and decodes (see Live metrics)."
            if self.view.toPlainText() != one_pool:  # laid out again on every set, even the same text
                self.view.setPlainText(one_pool)
            self.planned.emit(None)
            return
        self.jobs.start()

    def _show(self, result, revision: int, error: str) -> None:
        if revision != self.jobs.revision:
            return  # an older project (the scheduler drops those already)
        self._result = result
        text = error if result is None else summary_text(result)
        self.view.setPlainText(text)
        self.shown.emit(text, result is None)
        self.planned.emit(result)

    @property
    def result(self):
        return self._result

    # ------------------------------------------------------------------ edits
    def _set(self, text: str, fn) -> bool:
        return self.doc.edit(text, "serving", lambda p: p.replace(serving_mode=fn(p.serving_mode)))

    def _mode_chosen(self) -> None:
        if self._updating:
            return
        want = self.mode.currentData()
        cur = self.doc.project.serving_mode
        if want == cur.mode:
            return
        if want == "aggregated":
            self._set(
                "Serving: aggregated", lambda m: ServingMode(transfer_backend=m.transfer_backend)
            )
            return
        spec = self.spec.text().strip()
        if spec:
            self.set_spec(spec)
            return
        self.find_best("Serving")

    def find_best(self, text: str) -> None:
        """Sweep the disaggregated splits of the project in the background and apply the best
        (one undo step named ``text``); the view says it is looking."""
        self._start_project, self._start_text = self.doc.project, text
        self.view.setPlainText(f"Finding the best prefill / decode split on these {self.doc.project.cluster.num_gpus} GPUs…")
        self.starts.start()

    def _start_found(self, response) -> None:
        if response.cancelled or self.doc.project is not self._start_project:
            return  # the project changed meanwhile: the answer is for another one
        start = response.result
        if start is None or start.mode is None:
            why = response.error or (start.why if start is not None else "")
            self.doc.message.emit(f"{self._start_text}: {why}")
            self.refresh(self.doc.project)
            return
        cur = self.doc.project.serving_mode
        if cur.disaggregated and cur.spec() == start.mode.spec():
            self.doc.message.emit(f"{self._start_text}: {cur.label} is already the best split: {start.why}")
            self.hint.setText(start.why)
            return
        self.hint.setText(start.why)
        self._set(f"{self._start_text}: {start.mode.label}", lambda _m: start.mode)

    def _spec_edited(self) -> None:
        if self._updating or not self.spec.isEnabled():
            return
        text = self.spec.text().strip()
        if text and text != self.doc.project.serving_mode.spec():
            self.set_spec(text)

    def set_spec(self, text: str) -> bool:
        """Apply a ``--disagg`` spec as one undo step (a bad spec is reported, nothing changes)."""
        try:
            new = parse_pools(text, "Pools")
        except StudioError as exc:
            self.doc.message.emit(exc.message)
            self.refresh(self.doc.project)
            return False
        backend = self.doc.project.serving_mode.transfer_backend
        new = new.replace(transfer_backend=backend)
        return self._set(f"Serving: {new.label}", lambda _m: new)

    def _backend_chosen(self) -> None:
        if self._updating:
            return
        b = self.backend.currentData()
        if b != self.doc.project.serving_mode.transfer_backend:
            self._set(f"KV transfer: {b}", lambda m: m.replace(transfer_backend=b))

    def apply_balance(self) -> bool:
        """Set the worker counts to the best split the last plan found (one undo step); when the
        worker counts are already the best for these worker shapes, ask the sweep for the best
        pools of any shape (:meth:`find_best`), which changes the split or says why it cannot."""
        res = self._result
        m = self.doc.project.serving_mode
        if res is None or not m.disaggregated or m.prefill is None or m.decode is None:
            self.doc.message.emit("Balance needs a costed disaggregated plan")
            return False
        x, y = res.balance.best_prefill_workers, res.balance.best_decode_workers
        if (x, y) == (m.prefill.workers, m.decode.workers) or not x or not y:
            self.find_best("Balance pools")
            return True
        new = m.replace(
            prefill=m.prefill.replace(workers=x, placement=None),
            decode=m.decode.replace(workers=y, placement=None),
        )
        return self._set(f"Balance pools: {new.label}", lambda _m: new)
