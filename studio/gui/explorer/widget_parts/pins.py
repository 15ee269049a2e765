"""The Explorer's pins and applies: pinned layouts for the Compare tab, and applying a row, a pinned
layout or a placement to the project; each one undo step."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtWidgets import QTabWidget, QWidget

from studio.core.layout import Layout
from studio.core.project import pinned_problem
from studio.engine.plan.results import PlanResult
from studio.engine.search.placement import PlacementOption
from studio.engine.search.sweep import SweepResult
from studio.gui.explorer.compare_view import MAX_PINNED, CompareView
from studio.gui.explorer.placement_view import PlacementView
from studio.service.explore.pinned import pinned_plans
from studio.service.explore.recommend import with_row

if TYPE_CHECKING:
    from studio.gui.document import ProjectDocument

    _ExplorerBase = QWidget
else:
    _ExplorerBase = object


class Pins(_ExplorerBase):
    """Mixin of :class:`studio.gui.explorer.widget.ExplorerWidget`: pin, unpin and apply."""

    doc: ProjectDocument
    result: SweepResult | None
    tabs: QTabWidget
    compare: CompareView
    placement: PlacementView

    def pinned_plans(self) -> list[tuple[str, PlanResult]]:
        """(title, plan) of every pinned layout the engine plans, at the batch it was pinned with
        (:func:`studio.service.explore.pinned.pinned_plans`, as the report lists them)."""
        return [(pin.title, pin.plan) for pin in pinned_plans(self.doc.project) if pin.plan is not None]

    def refresh_compare(self) -> None:
        pairs = self.pinned_plans()
        self.compare.set_pinned([t for t, _ in pairs], [p for _, p in pairs])
        self.tabs.setTabText(self.tabs.indexOf(self.compare), f"Compare ({len(pairs)})")

    def pin_row(self, row: int | None) -> bool:
        """Pin sweep row ``row`` (one undo step). Returns whether it was pinned."""
        if row is None or self.result is None:
            return False
        lay = self.result.layout(row)
        p = self.doc.project
        if lay in p.pinned:
            self.doc.message.emit(f"{lay.label} is already pinned")
            return False
        if len(p.pinned) >= MAX_PINNED:
            self.doc.message.emit(f"at most {MAX_PINNED} layouts can be pinned; unpin one first")
            return False
        pinned = p.with_pin(lay, int(self.result.columns["batch"][row]))
        problem = pinned_problem(pinned, len(pinned.pinned) - 1)
        if problem is not None:  # the file could not be opened again with it
            self.doc.message.emit(f"{lay.label} cannot be pinned: {problem[1]}")
            return False
        self.doc.apply(pinned, f"Pin layout {lay.label}", "pinned")
        self.tabs.setCurrentWidget(self.compare)
        return True

    def unpin(self, k: int) -> None:
        p = self.doc.project
        if 0 <= k < len(p.pinned):
            lay = p.pinned[k]
            self.doc.apply(p.replace(pinned=p.pinned[:k] + p.pinned[k + 1:]), f"Unpin layout {lay.label}", "pinned")

    def apply_layout(self, layout: Layout, text: str) -> None:
        """Make ``layout`` the project's current layout (one undo step)."""
        self.doc.apply(self.doc.project.replace(layout=layout), text, "layout")

    def apply_row(self, row: int | None) -> None:
        """Apply sweep row ``row`` as shown: its layout, micro-batches and batch (one undo step)."""
        if row is None or self.result is None:
            return
        lay, batch = self.result.layout(row), int(self.result.columns["batch"][row])
        self.doc.apply(with_row(self.doc.project, lay, batch),
                       f"Apply layout {lay.label} M={lay.micro_batches} batch {batch}", "layout")

    def apply_pinned(self, k: int) -> None:
        """Apply pinned layout ``k``, with the batch it was pinned at when known (one undo step)."""
        p = self.doc.project
        if not 0 <= k < len(p.pinned):
            return
        lay = p.pinned[k]
        batch = p.pinned_batch(lay)
        if batch is None:
            self.apply_layout(lay, f"Apply layout {lay.label}")
        else:
            self.doc.apply(with_row(p, lay, batch), f"Apply layout {lay.label} M={lay.micro_batches} batch {batch}",
                           "layout")

    def apply_placement(self, option: PlacementOption) -> None:
        comp = self.placement.comparison
        if comp is None:
            return
        lay = comp.layout.replace(placement=option.placement)
        self.apply_layout(lay, f"Apply placement '{option.name}' to {lay.label}")
