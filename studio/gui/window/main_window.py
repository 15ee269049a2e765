"""The main window: canvas in the middle, palette and model/layout panels left, metrics right,
timeline and warnings below; menus, shortcuts, status bar, files, settings."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QByteArray, Qt, QTimer
from PySide6.QtGui import QAction, QCloseEvent, QKeySequence
from PySide6.QtWidgets import (
    QDockWidget,
    QFileDialog,
    QFrame,
    QLabel,
    QMainWindow,
    QMessageBox,
    QScrollArea,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

import studio
from studio.core.errors import StudioError
from studio.core.hardware import Cluster
from studio.core.project import PinnedLayoutError, Project
from studio.engine.plan.results import PlanResult
from studio.gui.canvas import CanvasView, ClusterScene
from studio.gui.canvas.palette import Palette
from studio.gui.document import ProjectDocument
from studio.gui.panels.layout_panel import LayoutPanel
from studio.gui.panels.metrics_panel import MetricsPanel
from studio.gui.panels.model_panel import ModelPanel
from studio.gui.panels.warnings_panel import WarningsPanel
from studio.gui.toolkit.layout_fence import LayoutFence
from studio.gui.toolkit.resources import icon
from studio.gui.views.timeline import TimelinePanel
from studio.gui.window.containers import adopt_scrolled, scrolled_tab, tool_button
from studio.gui.window.recovery import Autosaver, Chooser, ask_recovery_dialog, offer_recovery
from studio.gui.window.settings import make_settings, push_recent, recent_files
from studio.io.autosave import AutosaveStore, RecoverableSession
from studio.service.messages import one_line

if TYPE_CHECKING:
    from studio.gui.explorer import ExplorerWidget
    from studio.gui.views.fleet_view import FleetView
    from studio.gui.views.load_view import LoadView

FILE_FILTER = "Layout Studio project (*.json)"


class MainWindow(QMainWindow):
    """The studio window around one :class:`ProjectDocument`.

    Hooks for tests and embedders: :attr:`ask_save` (returns "save", "discard" or "cancel"),
    :attr:`show_error` (title, text), :attr:`choose_recovery` (a crashed session's snapshot ->
    "restore", "discard" or "later"), :attr:`ask_drop_pinned` (a file whose pinned layouts cannot
    run -> open it without them?), and :meth:`add_dock` for extra panels (the Explorer).

    With an ``autosave`` store, unsaved work is snapshotted a few seconds after each edit
    (:class:`studio.gui.window.recovery.Autosaver`) and the snapshot deleted on a clean save or close.
    """

    #: The hardware palette (its name shadows QWidget.palette(), which the window never calls).
    palette: Palette  # type: ignore[assignment]

    def __init__(
        self,
        doc: ProjectDocument,
        catalog=None,
        settings=None,
        parent: QWidget | None = None,
        autosave: AutosaveStore | None = None,
    ) -> None:
        super().__init__(parent)
        self.doc = doc
        if doc.parent() is None:
            doc.setParent(self)  # the document lives as long as its window
        self.catalog = catalog
        self.settings = settings if settings is not None else make_settings()
        self.ask_save: Callable[[], str] = self._ask_save_dialog
        self.show_error: Callable[[str, str], None] = self._warning_dialog
        self.choose_recovery: Chooser = lambda session: ask_recovery_dialog(self, session)
        self.ask_drop_pinned: Callable[[PinnedLayoutError], bool] = self._ask_drop_pinned_dialog
        self.autosaver = Autosaver(doc, autosave, parent=self) if autosave is not None else None
        self.setWindowIcon(icon("app"))
        self.setDockOptions(QMainWindow.DockOption.AnimatedDocks | QMainWindow.DockOption.AllowTabbedDocks)

        self.scene = ClusterScene(doc, catalog, self)
        self.canvas = CanvasView(self.scene)
        self.setCentralWidget(self.canvas.pane())
        self.docks: dict[str, QDockWidget] = {}
        # Each dock is made before what it holds, and each panel is built inside its container (dock,
        # tab, scroll area): under the application's style sheet every reparenting restyles the
        # whole subtree it moves (a style change for each widget), so a panel built on its own and
        # then handed to a scroll area, a tab and a dock was restyled three times (~40 ms of the
        # window's construction). Docks and panels are made in the order the docks are added, as
        # before: the focus chain (Tab order) is the one the window had.
        from studio.gui.canvas.link_kind_box import LinkKindBox

        palette_dock = self._new_dock("Palette")
        hardware = QWidget(palette_dock)
        self.palette = Palette(catalog, hardware)
        #: The selected links' kind, editable (issue 34): under the palette, by the canvas.
        self.link_kind = LinkKindBox(self.scene, hardware)
        hl = QVBoxLayout(hardware)
        hl.setContentsMargins(0, 0, 0, 0)
        hl.setSpacing(0)
        hl.addWidget(self.palette, 1)
        hl.addWidget(self.link_kind)
        self._place_dock(palette_dock, hardware, Qt.DockWidgetArea.LeftDockWidgetArea)
        plan_dock = self._new_dock("Plan")
        setup = QTabWidget(plan_dock)
        # each tab scrolls rather than forcing its height on the window (fits a 1366×768 screen)
        self.model_panel = ModelPanel(doc, catalog, scrolled_tab(setup, "Model && workload"))
        adopt_scrolled(self.model_panel)
        self.layout_panel = LayoutPanel(doc, scrolled_tab(setup, "Layout"))
        adopt_scrolled(self.layout_panel)
        from studio.gui.panels.serving_mode_panel import ServingModePanel

        self.serving_mode_panel = ServingModePanel(doc, parent=scrolled_tab(setup, "Serving mode"))
        adopt_scrolled(self.serving_mode_panel)
        self.serving_mode_panel.planned.connect(self._on_disagg)
        self.setup_tabs = setup
        self._place_dock(plan_dock, setup, Qt.DockWidgetArea.LeftDockWidgetArea)
        metrics_dock = self._new_dock("Live metrics")
        self.metrics = MetricsPanel(metrics_dock)
        self.metrics.bestRequested.connect(self.layout_panel.apply_best)
        self._place_dock(metrics_dock, self.metrics, Qt.DockWidgetArea.RightDockWidgetArea)
        timeline_dock = self._new_dock("Pipeline timeline")
        self.timeline = TimelinePanel(timeline_dock)
        self._place_dock(timeline_dock, self.timeline, Qt.DockWidgetArea.BottomDockWidgetArea)
        warnings_dock = self._new_dock("Warnings")
        self.warnings = WarningsPanel(warnings_dock)
        self._place_dock(warnings_dock, self.warnings, Qt.DockWidgetArea.RightDockWidgetArea)
        # The Explorer (issue 4) and the Load view (issue 10) share the timeline's tab area and are
        # built the first time their tab is shown (or the attribute is first used): a tab never
        # opened costs no widgets (~0.14 s of the window's ~0.3 s) and runs no sweep or curve.
        self._explorer: ExplorerWidget | None = None
        self._load_view: LoadView | None = None
        self._fleet_view: FleetView | None = None
        # scrolls instead of forcing its minimum width on the whole window (fits 1280×800)
        self._explorer_holder = holder = QScrollArea()
        holder.setWidgetResizable(True)
        holder.setFrameShape(QFrame.Shape.NoFrame)
        explorer_dock = self.add_dock(holder, Qt.DockWidgetArea.BottomDockWidgetArea, "Explorer")
        self.tabifyDockWidget(self.docks["Pipeline timeline"], explorer_dock)
        explorer_dock.topLevelChanged.connect(self._explorer_floating)
        explorer_dock.visibilityChanged.connect(self._explorer_tab_shown)
        load_dock = self.add_dock(QWidget(), Qt.DockWidgetArea.BottomDockWidgetArea, "Load")
        load_dock.visibilityChanged.connect(self._load_tab_shown)
        self.tabifyDockWidget(explorer_dock, load_dock)
        # the Fleet view (issue 35): built, like the Load view, the first time its tab is shown
        fleet_dock = self.add_dock(QWidget(), Qt.DockWidgetArea.BottomDockWidgetArea, "Fleet")
        fleet_dock.visibilityChanged.connect(self._fleet_tab_shown)
        self.tabifyDockWidget(load_dock, fleet_dock)
        from studio.gui.window.dock_growth import GrowWhenRaised

        # their table and plots get room when their tab is raised; the timeline's height comes back
        self.explorer_growth = GrowWhenRaised(self, [explorer_dock, load_dock, fleet_dock])
        self.docks["Pipeline timeline"].raise_()
        self.setCorner(Qt.Corner.BottomRightCorner, Qt.DockWidgetArea.RightDockWidgetArea)
        self.setCorner(Qt.Corner.BottomLeftCorner, Qt.DockWidgetArea.LeftDockWidgetArea)

        self.engine_label = QLabel("")
        # the plan's line changes on every result, its width seldom (digits are of one width): the
        # status bar, and the window around it, are laid out again only when it does
        self.statusBar().addPermanentWidget(LayoutFence(self.engine_label))
        self._build_actions()
        from studio.gui.calibration import install as install_calibration

        install_calibration(self)  # File ▸ Import topology…, Tools ▸ Calibration…, calibration label

        doc.resultReady.connect(self._on_result)
        doc.errorChanged.connect(self._on_error)
        doc.message.connect(self._show_message)
        doc.fileChanged.connect(self._update_title)
        doc.problem.connect(self._on_problem)
        doc.projectChanged.connect(self._on_project)
        self.warnings.selectItems.connect(self.highlight)
        self._update_title()
        self.resize(1280, 800)
        self.resizeDocks([self.docks["Palette"], self.docks["Live metrics"]], [290, 330], Qt.Orientation.Horizontal)
        self.resizeDocks([self.docks["Pipeline timeline"]], [230], Qt.Orientation.Vertical)
        self.resizeDocks([self.docks["Live metrics"], self.docks["Warnings"]], [560, 150], Qt.Orientation.Vertical)
        self.resizeDocks([self.docks["Palette"], self.docks["Plan"]], [230, 520], Qt.Orientation.Vertical)
        self._default_state = self.saveState()
        self.restore_settings()
        QTimer.singleShot(0, self.canvas.fit)

    # -------------------------------------------------------------- public
    def add_dock(self, widget: QWidget, area: Qt.DockWidgetArea, title: str) -> QDockWidget:
        """Dock ``widget`` in ``area`` under ``title`` (also listed in View ▸ Panels)."""
        dock = self._new_dock(title)
        self._place_dock(dock, widget, area)
        return dock

    def _new_dock(self, title: str) -> QDockWidget:
        """A dock titled ``title``, not added yet: what it will hold can be built in it."""
        dock = QDockWidget(title, self)
        dock.setObjectName(f"dock-{title.lower().replace(' ', '-')}")
        dock.setFeatures(
            QDockWidget.DockWidgetFeature.DockWidgetMovable
            | QDockWidget.DockWidgetFeature.DockWidgetFloatable
            | QDockWidget.DockWidgetFeature.DockWidgetClosable
        )
        return dock

    def _place_dock(self, dock: QDockWidget, widget: QWidget, area: Qt.DockWidgetArea) -> None:
        """Give ``dock`` its ``widget`` and add it in ``area`` (and to View ▸ Panels)."""
        dock.setWidget(widget)
        self.addDockWidget(area, dock)
        self.docks[dock.windowTitle()] = dock
        if hasattr(self, "panels_menu"):
            self.panels_menu.addAction(dock.toggleViewAction())

    def highlight(self, ids: tuple[str, ...]) -> None:
        """Select the canvas items of ``ids`` (warning click) and bring them into view."""
        self.doc.set_selection(ids)
        self.scene.select_ids(ids)
        items = [self.scene.item_by_id(i) for i in ids]
        shown = [i for i in items if i is not None]
        if shown:
            self.canvas.ensureVisible(shown[0])

    # ------------------------------------------------------------- actions
    def _action(self, text: str, slot, shortcut=None, tip: str = "", ic: str | None = None) -> QAction:
        act = QAction(text, self)
        if shortcut is not None:
            act.setShortcut(QKeySequence(shortcut))
        if tip:
            act.setStatusTip(tip)
            act.setToolTip(tip)
        if ic:
            act.setIcon(icon(ic))
        title = text.replace("&", "").rstrip("…").strip()
        act.triggered.connect(lambda _checked=False: self.guard(title, slot))
        return act

    def guard(self, title: str, slot: Callable[[], object]) -> object:
        """Run a GUI action; a :class:`StudioError` becomes an error dialog (the project is left as
        it was). Other exceptions go on to the GUI's ``sys.excepthook`` (dialog + log)."""
        try:
            return slot()
        except StudioError as exc:
            self.show_error(f"{title}: cannot do that", str(exc))
            return None

    def _on_problem(self, title: str, text: str) -> None:
        self.show_error(title, text)

    def _build_actions(self) -> None:
        mb = self.menuBar()
        S = QKeySequence.StandardKey
        f = mb.addMenu("&File")
        f.addAction(self._action("&New", self.new_project, S.New, "Start an empty plan"))
        f.addAction(self._action("&Open…", self.open_dialog, S.Open, "Open a project file"))
        self.recent_menu = f.addMenu("Open &Recent")
        self._fill_recent()
        f.addSeparator()
        f.addAction(self._action("&Save", self.save, S.Save, "Save the project"))
        f.addAction(self._action("Save &As…", self.save_as, S.SaveAs, "Save under a new name"))
        f.addSeparator()
        f.addAction(self._action("Export canvas image…", lambda: self.export_image("canvas"), None, "PNG of the whole cluster"))
        f.addAction(self._action("Export timeline image…", lambda: self.export_image("timeline"), None, "PNG of the pipeline timeline"))
        from studio.gui.report.action import export_report  # stakeholder report (studio/gui/report)
        f.addAction(self._action("Export &report…", lambda: export_report(self), None, "HTML or PDF report of the plan"))
        from studio.gui.editors.export_dialog import (
            open_export_dialog,  # engine launch configs (issue 5)
        )
        f.addAction(self._action("Export &launch config…", lambda: open_export_dialog(self), "Ctrl+E", "vLLM / TensorRT-LLM / SGLang commands, YAML, script or Kubernetes"))
        f.addSeparator()
        f.addAction(self._action("&Quit", self.close, S.Quit))

        e = mb.addMenu("&Edit")
        undo = self.doc.undo_stack.createUndoAction(self, "&Undo")
        undo.setShortcut(S.Undo)
        redo = self.doc.undo_stack.createRedoAction(self, "&Redo")
        redo.setShortcuts([QKeySequence("Ctrl+Shift+Z"), QKeySequence(S.Redo)])
        e.addAction(undo)
        e.addAction(redo)
        e.addSeparator()
        self.delete_action = self._action("&Delete", self.scene.delete_selected, S.Delete, "Delete the selection")
        self.delete_action.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        self.canvas.addAction(self.delete_action)
        e.addAction(self.delete_action)
        e.addAction(self._action("D&uplicate node", self.scene.duplicate_selected, "Ctrl+D", "Copy the selected node(s)"))
        e.addAction(self._action("Re&name node…", self._rename_selected, "F2"))
        e.addAction(self._action("Select &all", self._select_all, S.SelectAll))

        v = mb.addMenu("&View")
        fit = self._action("&Fit to view", self.canvas.fit, "Ctrl+0", "Show the whole cluster", "fit")
        zin = self._action("Zoom &in", lambda: self.canvas.zoom_by(1.25), S.ZoomIn, "", "zoom-in")
        zout = self._action("Zoom &out", lambda: self.canvas.zoom_by(0.8), S.ZoomOut, "", "zoom-out")
        for a in (fit, zin, zout):
            v.addAction(a)
        v.addSeparator()
        self.panels_menu = v.addMenu("&Panels")
        for dock in self.docks.values():
            self.panels_menu.addAction(dock.toggleViewAction())
        v.addAction(self._action("&Reset window layout", self.reset_layout))

        p = mb.addMenu("&Plan")
        best = self._action("&Best layout for my targets", self.layout_panel.apply_best, "Ctrl+B", "Sweep layouts and apply the recommended one", "best")
        p.addAction(best)
        p.addAction(self._action("&Recompute now", self.doc.recompute_now, "F5"))

        h = mb.addMenu("&Help")
        h.addAction(self._action("&About Layout Studio", self.about))

        tb = self.addToolBar("Main")
        tb.setObjectName("toolbar-main")
        tb.setMovable(False)
        for a in (fit, zin, zout):
            tb.addAction(a)
        tb.addSeparator()
        # The toolbar's Undo and Redo read "Undo" and "Redo" at a fixed width, the edit they undo in
        # their tooltip and in the Edit menu: named ("Undo M", "Undo kind", "Undo Add HGX H200 … ·
        # layout re-split to …") the button changed width on every edit and moved the buttons after
        # it. They are buttons of the window's own, not the toolbar's: a toolbar lays itself and the
        # whole main window out again whenever one of its actions changes, and these two change on
        # every edit (their text, tooltip, enabled state).
        undo.setIconText("Undo")
        redo.setIconText("Redo")
        for action in (undo, redo):
            tb.addWidget(tool_button(tb, action))
        tb.addSeparator()
        tb.addAction(best)

    def _show_message(self, text: str) -> None:
        self.statusBar().showMessage(text, 8000)

    def _rename_selected(self) -> None:
        nodes = [i for i in self.scene.selected_ids() if i in self.scene.nodes]
        if nodes:
            self.canvas.rename_dialog(nodes[0])
        else:
            self.statusBar().showMessage("Select a node to rename it", 5000)

    def _select_all(self) -> None:
        for item in self.scene.items():
            if hasattr(item, "item_id"):
                item.setSelected(True)

    def about(self) -> None:
        QMessageBox.about(
            self,
            "About Layout Studio",
            f"<h3>Layout Studio {studio.__version__}</h3>"
            "<p>Plan multi-GPU LLM inference: draw the cluster, pick a model, and see memory, "
            "latency, throughput and cost of every TP × PP × EP layout.</p>"
            "<p>Apache-2.0 licence.</p>",
        )

    # --------------------------------------------------------------- files
    def _update_title(self) -> None:
        self.setWindowTitle(f"{self.doc.display_name}[*] — Layout Studio")
        self.setWindowModified(self.doc.is_dirty)

    def _fill_recent(self) -> None:
        self.recent_menu.clear()
        files = recent_files(self.settings)
        for path in files:
            self.recent_menu.addAction(self._action(Path(path).name, lambda p=path: self.open_path(p), None, path))
        self.recent_menu.setEnabled(bool(files))

    def maybe_save(self) -> bool:
        """Before discarding changes: ask; True when it is fine to go on."""
        if not self.doc.is_dirty:
            return True
        answer = self.ask_save()
        if answer == "save":
            return self.save()
        return answer == "discard"

    def _ask_drop_pinned_dialog(self, exc: PinnedLayoutError) -> bool:
        n = len(exc.bad)
        box = QMessageBox(self)
        box.setIcon(QMessageBox.Icon.Warning)
        box.setWindowTitle("Pinned layouts cannot run")
        box.setText(f"{n} pinned layout{'s' if n != 1 else ''} in this file cannot run on its cluster and model.")
        box.setInformativeText(
            f"{exc}\n\nOpen the project without {'them' if n != 1 else 'it'}? The file is left as it is "
            "until you save."
        )
        drop = box.addButton("Open without them" if n != 1 else "Open without it", QMessageBox.ButtonRole.AcceptRole)
        box.addButton(QMessageBox.StandardButton.Cancel)
        box.exec()
        return box.clickedButton() is drop

    def _warning_dialog(self, title: str, text: str) -> None:
        """The default :attr:`show_error`: a modal warning box."""
        QMessageBox.warning(self, title, text)

    def _ask_save_dialog(self) -> str:
        box = QMessageBox(self)
        box.setIcon(QMessageBox.Icon.Warning)
        box.setWindowTitle("Unsaved changes")
        box.setText(f"Save the changes to {self.doc.display_name}?")
        box.setStandardButtons(
            QMessageBox.StandardButton.Save | QMessageBox.StandardButton.Discard | QMessageBox.StandardButton.Cancel
        )
        answer = box.exec()
        return {QMessageBox.StandardButton.Save: "save", QMessageBox.StandardButton.Discard: "discard"}.get(
            QMessageBox.StandardButton(answer), "cancel"
        )

    def new_project(self) -> None:
        if not self.maybe_save():
            return
        p = self.doc.project
        blank = Project(
            name="Untitled plan",
            cluster=Cluster(name="cluster", gpu_specs={}, link_kinds={}),
            model=p.model,
            model_ref=p.model_ref,
        )
        self.doc.replace_document(blank, None)
        self.doc.message.emit("New plan: drag a node template from the palette onto the canvas")

    def open_dialog(self) -> None:
        if not self.maybe_save():
            return
        path, _ = QFileDialog.getOpenFileName(self, "Open project", self._start_dir(), FILE_FILTER)
        if path:
            self.open_path(path, ask=False)

    def open_path(self, path: str | Path, ask: bool = True) -> bool:
        """Open a project file; a file that cannot be read or is not a valid project (malformed,
        hostile, from a newer version) gives a dialog naming the file and the place, and the
        current document stays as it was (unsaved changes included)."""
        if ask and not self.maybe_save():
            return False
        try:
            self.doc.open(path)
        except PinnedLayoutError as exc:  # the rest of the file is fine: offer it without those pins
            if not self.ask_drop_pinned(exc):
                return False
            self.doc.replace_document(exc.without, path)
            self.doc.undo_stack.resetClean()  # differs from the file: saving writes it without them
        except StudioError as exc:
            self.show_error("Cannot open project", str(exc))
            return False
        except (OSError, ValueError, RecursionError, MemoryError) as exc:  # a loader gap: still no crash
            self.show_error("Cannot open project", f"{path}: {type(exc).__name__}: {exc}")
            return False
        push_recent(self.settings, path)
        self._fill_recent()
        self.canvas.fit()
        self.doc.message.emit(f"Opened {path}")
        return True

    def save(self) -> bool:
        if self.doc.path is None:
            return self.save_as()
        return self._save_to(self.doc.path)

    def save_as(self) -> bool:
        path, _ = QFileDialog.getSaveFileName(self, "Save project as", self._start_dir(), FILE_FILTER)
        if not path:
            return False
        if not path.endswith(".json"):
            path += ".json"
        return self._save_to(Path(path))

    def _save_to(self, path: Path) -> bool:
        try:
            written = self.doc.save(path)
        except (StudioError, ValueError) as exc:  # ValueError: a serialisation error (invalid text)
            self.show_error("Cannot save project", str(exc))
            return False
        push_recent(self.settings, written)
        self._fill_recent()
        return True

    def _start_dir(self) -> str:
        return str(self.doc.path.parent) if self.doc.path else str(Path.home())

    def export_image(self, what: str, path: str | Path | None = None) -> Path | None:
        """Save the canvas or the timeline as a PNG (asks for a file when ``path`` is None)."""
        if path is None:
            path, _ = QFileDialog.getSaveFileName(self, f"Export {what} image", self._start_dir(), "PNG image (*.png)")
            if not path:
                return None
        from studio.gui.toolkit.png_file import save_png

        path = Path(path)
        picture = self.canvas.render_image() if what == "canvas" else self.timeline.grab()
        try:
            save_png(picture, path, what=f"{what} image")
        except StudioError as exc:
            self.show_error("Cannot export image", str(exc))
            return None
        self.doc.message.emit(f"Exported {what} to {path}")
        return path

    # ------------------------------------------------------------ recovery
    def offer_recovery(self) -> RecoverableSession | None:
        """Offer to restore work left by a session that did not close (after a crash); returns
        the restored session. No-op without autosave."""
        if self.autosaver is None:
            return None
        restored = offer_recovery(
            self.doc, self.autosaver.store, self.choose_recovery, self.show_error, self.autosaver.session_id
        )
        if restored is not None:
            self.autosaver.save_now()  # the restored work is protected again at once
            self.canvas.fit()
        return restored

    # ------------------------------------------------------------ explorer
    def explorer_own_window(self, on: bool) -> None:
        """Show the Explorer as a large window of its own (``on``) or dock it back under the canvas."""
        dock = self.docks["Explorer"]
        if on == dock.isFloating():
            return
        dock.setFloating(on)
        if on:
            screen = self.screen().availableGeometry() if self.screen() else self.geometry()
            dock.setGeometry(screen.adjusted(24, 24, -24, -24))
            dock.show()
            dock.raise_()
            dock.activateWindow()
        else:
            dock.raise_()

    @property
    def explorer(self) -> ExplorerWidget:
        """The Explorer, built on first use (its tab shown, a snapshot, a test)."""
        if self._explorer is None:
            from studio.gui.explorer import ExplorerWidget

            self._explorer = ExplorerWidget(self.doc)
            self._explorer.ownWindowToggled.connect(self.explorer_own_window)
            from studio.gui.explorer.fleet_rank import add_cost_rank_button

            self.cost_rank_button = add_cost_rank_button(self._explorer, self.rank_fleet)
            self._explorer_holder.setWidget(self._explorer)  # shown with its tab: it sweeps
            self._explorer_floating(self.docks["Explorer"].isFloating())
        return self._explorer

    @property
    def load_view(self) -> LoadView:
        """The Load view, built on first use (its tab shown, a test)."""
        if self._load_view is None:
            from studio.gui.views.load_view import LoadView

            self._load_view = LoadView(self.doc)
            dock = self.docks["Load"]
            placeholder = dock.widget()
            dock.setWidget(self._load_view)
            placeholder.deleteLater()
            self._load_view.follow_dock(dock)
        return self._load_view

    @property
    def fleet_view(self) -> FleetView:
        """The Fleet view, built on first use (its tab shown, a test)."""
        if self._fleet_view is None:
            from studio.gui.views.fleet_view import FleetView

            self._fleet_view = FleetView(self.doc)
            dock = self.docks["Fleet"]
            placeholder = dock.widget()
            dock.setWidget(self._fleet_view)
            placeholder.deleteLater()
            self._fleet_view.follow_dock(dock)
        return self._fleet_view

    def rank_fleet(self) -> None:
        """Raise the Fleet tab and rank the sweep's layouts there by cost per day at the SLO."""
        view = self.fleet_view
        self.docks["Fleet"].show()
        self.docks["Fleet"].raise_()
        view.rank()

    def fleet_result(self) -> object | None:
        """The Fleet view's plan of the current project (None when the view has none for it); the
        report's Fleet section."""
        view = self._fleet_view
        if view is None or view.result is None or view.plan_revision != self.doc.revision:
            return None
        return view.result

    def _fleet_tab_shown(self, shown: bool) -> None:
        if shown and self._fleet_view is None:
            view = self.fleet_view
            QTimer.singleShot(0, view.refresh_if_seen)  # raised now: its dock said so before it existed

    @property
    def built_views(self) -> tuple[ExplorerWidget | None, LoadView | None]:
        """The Explorer and the Load view if built yet (None for a tab never shown)."""
        return self._explorer, self._load_view

    def _explorer_tab_shown(self, shown: bool) -> None:
        if shown and self._explorer is None:
            self.explorer  # noqa: B018 - built now, it sweeps once shown

    def _load_tab_shown(self, shown: bool) -> None:
        if shown and self._load_view is None:
            view = self.load_view
            QTimer.singleShot(0, view.refresh_if_seen)  # raised now: its dock said so before it existed

    def _explorer_floating(self, floating: bool) -> None:
        if self._explorer is None:
            return  # built later, with the button set then
        button = self._explorer.own_window
        if button.isChecked() != floating:
            button.blockSignals(True)
            button.setChecked(floating)
            button.blockSignals(False)

    # ------------------------------------------------------------ results
    def _on_project(self, project: Project, kind: str) -> None:
        self.engine_label.setText("computing…")

    def _on_result(self, r: PlanResult, revision: int) -> None:
        self.metrics.set_result(r, self.doc.project)
        self.warnings.set_warnings(r.warnings)
        self.timeline.set_result(r)
        self._show_plan_status()

    def _show_plan_status(self) -> None:
        """The status bar's plan line, on the plan Live metrics show (a disaggregated project's
        costed pools, else the layout); left as it is while no plan is computed."""
        text = self.metrics.status_line()
        if text is not None:
            self.engine_label.setText(text)

    def _on_disagg(self, res) -> None:
        """A costed disaggregated plan (None: aggregated or refused): the canvas's KV-transfer
        arrow, the legend's pools and the timeline's request view follow it."""
        self.scene.set_disagg(res)
        self.canvas.refresh_legend()
        m = self.doc.project.serving_mode
        self.metrics.set_disagg(m.disaggregated, m.label if m.disaggregated else "", res)
        self._show_plan_status()
        if res is None:
            self.timeline.set_request(None)
            return
        from studio.engine.disagg.timeline import request_note, request_timeline

        osl = self.doc.project.workload.osl
        first = self.timeline.request is None
        self.timeline.set_request(request_timeline(res, osl), request_note(res, osl), show=first)

    def _on_error(self, message: str) -> None:
        if not message:
            return
        short = one_line(message)
        self.metrics.set_error(message)
        self.warnings.set_error(message)
        self.timeline.clear(short)
        self.engine_label.setText("plan not computed")
        self.statusBar().showMessage(short, 10000)

    # ------------------------------------------------------------ settings
    def restore_settings(self) -> None:
        geo = self.settings.value("window/geometry")
        state = self.settings.value("window/state")
        if isinstance(geo, QByteArray | bytes):
            self.restoreGeometry(QByteArray(geo))
        if isinstance(state, QByteArray | bytes):
            self.restoreState(QByteArray(state))

    def save_settings(self) -> None:
        self.settings.setValue("window/geometry", self.saveGeometry())
        self.settings.setValue("window/state", self.saveState())
        self.settings.sync()

    def reset_layout(self) -> None:
        self.restoreState(self._default_state)
        for dock in self.docks.values():
            dock.show()

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 - Qt API
        if not self.maybe_save():
            event.ignore()
            return
        self.save_settings()
        # the Explorer's sweep (seconds of CPU on a big cluster) is cancelled before the waits: it
        # would be cancelled when the window hides, but the close waits for it first (up to 5 s)
        explorer, load_view = self.built_views
        if explorer is not None:
            explorer.close_down()
        self.doc.wait_idle(5000)
        if load_view is not None:
            load_view.wait_idle(5000)
        if self._fleet_view is not None:
            self._fleet_view.wait_idle(5000)
        if explorer is not None:
            explorer.wait_idle(5000)
        if self.autosaver is not None:
            self.autosaver.discard()  # a clean close: nothing to recover
        event.accept()

