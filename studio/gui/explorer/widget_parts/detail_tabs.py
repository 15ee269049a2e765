"""The Explorer's detail tabs beside the table (small multiples, placements, engines): each is
refreshed only while it is the tab shown, and only when what it shows changed."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtWidgets import QTabWidget, QWidget

from studio.core.errors import StudioError
from studio.engine.search.placement import compare_placements
from studio.engine.search.sweep import SweepResult
from studio.gui.explorer.engines_view import EnginesView
from studio.gui.explorer.multiples import SmallMultiples
from studio.gui.explorer.placement_view import PlacementView
from studio.service.explore.explorer_analysis import factorizations

if TYPE_CHECKING:
    from studio.gui.document import ProjectDocument

    _ExplorerBase = QWidget
else:
    _ExplorerBase = object


class DetailTabs(_ExplorerBase):
    """Mixin of :class:`studio.gui.explorer.widget.ExplorerWidget`: its lazily refreshed tabs."""

    doc: ProjectDocument
    result: SweepResult | None
    tabs: QTabWidget
    multiples: SmallMultiples
    placement: PlacementView
    engines: EnginesView
    _dirty_tabs: set[str]

    if TYPE_CHECKING:
        def selected_row(self) -> int | None: ...

    def _refresh_visible_tab(self) -> None:
        w = self.tabs.currentWidget()
        if w is self.multiples and "multiples" in self._dirty_tabs:
            self.refresh_multiples()
        elif w is self.placement and "placement" in self._dirty_tabs:
            self.refresh_placement()
        elif w is self.engines and "engines" in self._dirty_tabs:
            self.refresh_engines()

    def refresh_multiples(self) -> None:
        """Timelines of every TP × PP factorization of the cluster (DP = 1)."""
        self._dirty_tabs.discard("multiples")
        res = self.result
        if res is None:
            self.multiples.set_plans([])
            return
        plans = []
        for i in factorizations(res):
            if res.columns["fits"][i]:
                plans.append((res.label(i), res.plan(i)))
        self.multiples.set_plans(plans)

    def refresh_placement(self) -> None:
        """Compare placements of the selected layout (else the project's)."""
        self._dirty_tabs.discard("placement")
        row = self.selected_row()
        layout = self.result.layout(row) if (self.result is not None and row is not None) else self.doc.project.layout
        project = self.doc.project
        if self.result is not None and row is not None:
            wl = project.workload.model_copy(update={"batch": int(self.result.columns["batch"][row])})
            project = project.model_copy(update={"workload": wl})
        try:
            self.placement.set_comparison(compare_placements(project, layout))
        except StudioError as exc:
            self.placement.set_comparison(None, f"Placements of {layout.label} cannot be compared: {exc.message}")

    def refresh_engines(self) -> None:
        """The selected layout (else the project's) on each serving engine
        (:func:`studio.gui.explorer.engines_tab.refresh_engines`)."""
        from studio.gui.explorer.engines_tab import refresh_engines

        self._dirty_tabs.discard("engines")
        row = self.selected_row()
        layout = self.result.layout(row) if (self.result is not None and row is not None) else self.doc.project.layout
        refresh_engines(self.engines, self.doc.project, layout)

    def serve_with(self, engine: str) -> bool:
        """Make ``engine`` the project's serving engine (one undo step)."""
        from studio.gui.explorer.engines_tab import serve_with

        return serve_with(self.doc, engine)
