"""The sweep as a Qt table: one row per candidate layout, numeric sorting, unfit rows greyed; with
a percentile SLO, the layouts meeting it first and its figures in the SLO columns. Disaggregated
candidates (when the Explorer sweeps them) are rows too, tinted, ranked with the layouts under the
same objective and targets (:func:`studio.service.explore.disagg_explore.merged_order`)."""

from __future__ import annotations

import math

import numpy as np
from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QPersistentModelIndex,
    QSortFilterProxyModel,
    Qt,
)
from PySide6.QtGui import QBrush, QColor, QFont

from studio.engine.search.sweep import SweepResult
from studio.service.explore.disagg_explore import disagg_cell, label_words, merged_order
from studio.service.explore.explorer_analysis import COLUMNS, format_value
from studio.service.slo import LayoutSlo, SloReport

SORT_ROLE = Qt.ItemDataRole.UserRole + 1
ROW_ROLE = Qt.ItemDataRole.UserRole + 2
#: Index into the disaggregated candidates of a row (None on a layout's row, whose ROW_ROLE is set).
DISAGG_ROLE = Qt.ItemDataRole.UserRole + 3
DISAGG_COLOR = QColor("#f3e8fb")
UNFIT_COLOR = QColor("#adb5bd")
PARETO_COLOR = QColor("#fff4e6")
RECOMMENDED_COLOR = QColor("#d3f9d8")
Index = QModelIndex | QPersistentModelIndex


def slo_text(entry: LayoutSlo | None) -> str:
    """The SLO cell: ``pass``, ``fail: <why>`` or ``—`` (not checked)."""
    if entry is None:
        return "—"
    return "pass" if entry.meets else f"fail: {entry.verdict}"


# Qt's roles and the numbers' alignment as plain ints, looked up once: data() compares the role
# with them for every cell Qt asks about, and an enum member's lookup (or the flags' ``|``) costs
# several Python calls each time.
_DISPLAY = int(Qt.ItemDataRole.DisplayRole)
_SORT = int(SORT_ROLE)
_FOREGROUND = int(Qt.ItemDataRole.ForegroundRole)
_BACKGROUND = int(Qt.ItemDataRole.BackgroundRole)
_FONT = int(Qt.ItemDataRole.FontRole)
_TOOLTIP = int(Qt.ItemDataRole.ToolTipRole)
_ALIGNMENT = int(Qt.ItemDataRole.TextAlignmentRole)
_RIGHT_ALIGNED = int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
#: The roles :meth:`SweepTableModel.data` answers for some cell; it returns None for any other
#: role (decoration, check state, size hint, …) before looking at the row.
_ANSWERED = frozenset({_DISPLAY, _SORT, int(ROW_ROLE), int(DISAGG_ROLE), _FOREGROUND, _BACKGROUND,
                       _FONT, _TOOLTIP, _ALIGNMENT})
_N_COLUMNS = len(COLUMNS)


class SweepTableModel(QAbstractTableModel):
    """Rows in :attr:`SweepResult.order` (best first; with an SLO, the rows meeting it first, in
    that order); cells formatted on demand."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.result: SweepResult | None = None
        # plain lists of ints: data() reads them for every cell and role Qt asks for (hundreds of
        # thousands of times while a big table is sorted, filtered and painted)
        self._rows: list[int] = []  # sweep row per table row (-1: disaggregated)
        # each sweep row's label and each table row's filter words, made when first asked for
        # (a label builds the row's Layout: the filter and a sort by layout ask for every row's)
        self._labels: dict[int, str] = {}
        self._words: dict[int, list[str]] = {}
        # each column's sort keys by table row, made when the column is first sorted on: the proxy
        # asks for two rows' keys per comparison (n log n times per sort, and it sorts again after
        # every change of the filter)
        self._sort_keys: dict[int, list[str | float]] = {}
        self._disagg: list[int] = []  # disaggregated candidate per table row (-1: layout)
        #: The disaggregated candidates listed (``DisaggRow``s; empty when not swept).
        self.disagg_rows: tuple = ()
        #: Pool spec → the candidate's percentile-SLO verdict (empty when not checked).
        self.disagg_verdicts: dict[str, str] = {}
        self._rank: dict[int, int] = {}
        self._disagg_rank: dict[int, int] = {}
        self._pareto: set[int] = set()
        self.slo: SloReport | None = None
        self._slo_of: dict[int, LayoutSlo] = {}
        #: The highlighted row: the best meeting the SLO when there is one, else the sweep's.
        self.recommended: int | None = None
        self._bold = QFont()
        self._bold.setBold(True)

    def set_result(self, result: SweepResult | None, slo: SloReport | None = None, disagg=(),
                   disagg_verdicts: dict[str, str] | None = None) -> None:
        """Show ``result`` (its SLO check ``slo``) and the disaggregated candidates ``disagg`` (their
        SLO verdicts by pool spec, :func:`studio.service.disagg_slo.slo_verdicts`)."""
        self.beginResetModel()
        self.result = result
        self._labels = {}
        self._words = {}
        self._sort_keys = {}
        self.disagg_verdicts = dict(disagg_verdicts or {}) if result is not None else {}
        self.slo = slo if result is not None else None
        self._slo_of = _slo_by_row(result, self.slo)
        self.disagg_rows = tuple(disagg) if result is not None else ()
        rows = np.asarray(result.order, dtype=np.int64) if result is not None else np.zeros(0, dtype=np.int64)
        lead = np.zeros(0, dtype=np.int64)
        if self.slo is not None:  # the layouts meeting the SLO lead, each group in the sweep's order
            meets = np.array([self.slo_meets(int(r)) for r in rows], dtype=bool)
            lead, rows = rows[meets], rows[~meets]
        entries = [(False, int(i)) for i in lead]
        if result is not None:
            entries += merged_order(result, rows.tolist(), self.disagg_rows, result.objective)
        self._rows = [-1 if d else int(i) for d, i in entries]
        self._disagg = [int(i) if d else -1 for d, i in entries]
        self.recommended = None
        if result is not None:
            best = self.slo.best_row if self.slo is not None else None
            self.recommended = best if best is not None else (
                int(result.recommended) if result.recommended is not None else None)
        self._rank = {r: k for k, r in enumerate(self._rows) if r >= 0}
        self._disagg_rank = {r: k for k, r in enumerate(self._disagg) if r >= 0}
        self._pareto = {int(i) for i in result.pareto} if result is not None else set()
        self.endResetModel()

    def sweep_row(self, model_row: int) -> int:
        """Row of the sweep result shown on table row ``model_row`` (-1: a disaggregated candidate)."""
        return int(self._rows[model_row])

    def disagg_index(self, model_row: int) -> int | None:
        """The disaggregated candidate shown on table row ``model_row`` (None: a layout)."""
        k = int(self._disagg[model_row])
        return k if k >= 0 else None

    def model_row(self, sweep_row: int) -> int | None:
        return self._rank.get(int(sweep_row))

    def disagg_model_row(self, k: int) -> int | None:
        """Table row of disaggregated candidate ``k``."""
        return self._disagg_rank.get(int(k))

    def words(self, model_row: int) -> list[str]:
        """The words the filter matches on table row ``model_row`` (not to be modified)."""
        words = self._words.get(model_row)
        if words is None:
            k = self.disagg_index(model_row)
            if k is not None:
                words = label_words(self.disagg_rows[k].label, disaggregated=True)
            else:
                words = label_words(self._label(self.sweep_row(model_row)))
            self._words[model_row] = words
        return words

    def _label(self, i: int) -> str:
        """``self.result.label(i)``, made once per sweep row."""
        label = self._labels.get(i)
        if label is None:
            assert self.result is not None
            label = self._labels[i] = self.result.label(i)
        return label

    def slo_entry(self, sweep_row: int) -> LayoutSlo | None:
        """The SLO check of the row's layout, or None (no SLO, not checked, or unfit)."""
        return self._slo_of.get(int(sweep_row))

    def slo_meets(self, sweep_row: int) -> bool:
        e = self._slo_of.get(int(sweep_row))
        return e is not None and e.meets

    # Qt API ------------------------------------------------------------------
    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: N802, B008
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: N802, B008
        return 0 if parent.isValid() else _N_COLUMNS

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole):  # noqa: N802
        if orientation == Qt.Orientation.Horizontal:
            if role == Qt.ItemDataRole.DisplayRole:
                return COLUMNS[section].header
            if role == Qt.ItemDataRole.ToolTipRole:
                return COLUMNS[section].help
        elif role == Qt.ItemDataRole.DisplayRole:
            return str(section + 1)
        return None

    def _raw(self, i: int, key: str):
        assert self.result is not None
        if key == "layout":
            return self._label(i)
        if key == "reason":
            return self.result.reasons_unfit[i] if i < len(self.result.reasons_unfit) else ""
        if key == "slo":
            return slo_text(self._slo_of.get(i))
        if key.startswith("slo_"):
            v = getattr(self._slo_of.get(i), key[4:], None)
            return float("nan") if v is None else v
        return self.result.columns[key][i]

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole):
        if role not in _ANSWERED or not index.isValid() or self.result is None:
            return None
        if role == _SORT:
            keys = self._sort_keys.get(index.column())
            if keys is None:
                keys = self._sort_keys[index.column()] = self._column_sort_keys(COLUMNS[index.column()])
            return keys[index.row()]
        k = self._disagg[index.row()]
        if k >= 0:
            return self._disagg_data(k, COLUMNS[index.column()], role)
        i = self._rows[index.row()]
        col = COLUMNS[index.column()]
        if role == _DISPLAY:
            return format_value(col, self._raw(i, col.key))
        if role == ROW_ROLE:
            return i
        fits = bool(self.result.columns["fits"][i])
        if role == _FOREGROUND and not fits:
            return QBrush(UNFIT_COLOR)
        if role == _BACKGROUND:
            if i == self.recommended:
                return QBrush(RECOMMENDED_COLOR)
            if i in self._pareto:
                return QBrush(PARETO_COLOR)
        if role == _FONT and i == self.recommended:
            return self._bold
        if role == _TOOLTIP:
            if not fits:
                return f"{self._label(i)} — {self._raw(i, 'reason')}"
            tags = []
            if i == self.recommended:
                tags.append("recommended")
            entry = self._slo_of.get(i)
            if entry is not None:
                tags.append("meets the SLO" if entry.meets else f"misses the SLO: {entry.verdict}")
            if i in self._pareto:
                tags.append("on the Pareto frontier")
            return self._label(i) + (f" ({', '.join(tags)})" if tags else "")
        if role == _ALIGNMENT and col.fmt != "s":
            return _RIGHT_ALIGNED
        return None

    def _column_sort_keys(self, col) -> list[str | float]:
        """The sort key of every table row in column ``col``: the text of a text column, else the
        number (infinities as ±1e300, which Qt compares as numbers)."""
        keys: list[str | float] = []
        for i, k in zip(self._rows, self._disagg, strict=True):
            v = disagg_cell(self.disagg_rows[k], col.key, self.disagg_verdicts) if k >= 0 else self._raw(i, col.key)
            if col.fmt == "s":
                keys.append(str(v))
                continue
            f = float(v)  # type: ignore[arg-type]
            keys.append(f if math.isfinite(f) else (1e300 if f > 0 else -1e300))
        return keys

    def _disagg_data(self, k: int, col, role: int):
        """A disaggregated candidate's cell: its figures where the column applies, tinted."""
        r = self.disagg_rows[k]
        if role == _DISPLAY:
            return format_value(col, disagg_cell(r, col.key, self.disagg_verdicts))
        if role == DISAGG_ROLE:
            return k
        if role == _BACKGROUND:
            return QBrush(DISAGG_COLOR)
        if role == _TOOLTIP:
            verdict = "meets the targets" if r.meets_targets else "misses the targets"
            return (f"{r.label}, batch {r.batch} per decode worker (disaggregated, {verdict}; the percentile "
                    f"SLO checks its p99 TTFT): {r.why()}")
        if role == _ALIGNMENT and col.fmt != "s":
            return _RIGHT_ALIGNED
        return None


class SweepFilterProxy(QSortFilterProxyModel):
    """Sorts by the raw numbers; hides unfit rows on request; filters by layout text
    (``tp8``, ``pp2``, ``tp8 pp2``: every word must match the row's label)."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setSortRole(SORT_ROLE)
        self.hide_unfit = False
        self.slo_only = False
        self.words: tuple[str, ...] = ()

    def set_hide_unfit(self, on: bool) -> None:
        self._refilter(lambda: setattr(self, "hide_unfit", bool(on)))

    def set_slo_only(self, on: bool) -> None:
        """Show only the rows whose layout meets the percentile SLO."""
        self._refilter(lambda: setattr(self, "slo_only", bool(on)))

    def set_text(self, text: str) -> None:
        words = tuple(label_words(text.replace("×", " ")))
        self._refilter(lambda: setattr(self, "words", words))

    def _refilter(self, change) -> None:
        if hasattr(self, "beginFilterChange"):  # Qt ≥ 6.9; invalidateFilter is deprecated there
            self.beginFilterChange()
            change()
            self.endFilterChange(QSortFilterProxyModel.Direction.Rows)
        else:
            change()
            self.invalidateFilter()

    def filterAcceptsRow(self, source_row: int, source_parent: Index) -> bool:  # noqa: N802
        src = self.sourceModel()
        assert isinstance(src, SweepTableModel)
        res = src.result
        if res is None:
            return False
        if not (self.hide_unfit or self.slo_only or self.words):  # no filter: every row shows
            return True
        i = src.sweep_row(source_row)
        disagg = i < 0  # a disaggregated candidate: it fits; it has no percentile SLO check
        if self.hide_unfit and not disagg and not bool(res.columns["fits"][i]):
            return False
        if self.slo_only and not src.slo_meets(i):
            return False
        if self.words:
            label = src.words(source_row)
            return all(any(tok == w or tok.startswith(w) for tok in label) for w in self.words)
        return True


def _slo_by_row(result: SweepResult | None, slo: SloReport | None) -> dict[int, LayoutSlo]:
    """Sweep row -> the SLO check of its layout (TP, PP, EP, DP, M), for every fitting row."""
    if result is None or slo is None:
        return {}
    by_key = dict(zip(slo.keys, slo.checked, strict=True))
    cols = result.columns
    ep = cols["ep"] if "ep" in cols else np.ones_like(cols["tp"])
    out = {}
    for i in np.flatnonzero(np.asarray(cols["fits"], dtype=bool)):
        key = (int(cols["tp"][i]), int(cols["pp"][i]), int(ep[i]), int(cols["dp"][i]), int(cols["micro_batches"][i]))
        entry = by_key.get(key)
        if entry is not None:
            out[int(i)] = entry
    return out
