"""The link's properties: the kind of the selected link(s), editable in a combo box (one undo step
through :meth:`studio.gui.canvas.scene.ClusterScene.set_link_kind`, like the canvas's context menu)."""

from __future__ import annotations

from PySide6.QtWidgets import QComboBox, QFormLayout, QLabel, QWidget

from studio.gui.canvas.scene import ClusterScene


class LinkKindBox(QWidget):
    """"Link kind" of the links selected on the canvas: enabled when the selection holds links;
    offers the kinds that can join their ends (:meth:`ClusterScene.link_kind_choices`)."""

    def __init__(self, scene: ClusterScene, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.scene = scene
        self.kind = QComboBox()
        self.kind.setObjectName("linkKind")
        self.kind.setToolTip("Kind of the links selected on the canvas (right-click a link for the same menu)")
        self.what = QLabel("")
        self.what.setObjectName("hint")
        self.what.setWordWrap(True)
        form = QFormLayout(self)
        form.setContentsMargins(4, 2, 4, 2)
        form.addRow("Link kind", self.kind)
        form.addRow(self.what)
        self._ids: tuple[str, ...] = ()
        self._updating = False
        scene.doc.selectionChanged.connect(lambda _ids: self.refresh())
        scene.doc.projectChanged.connect(lambda _p, _k: self.refresh())
        self.kind.activated.connect(self._chosen)
        self.refresh()

    def refresh(self) -> None:
        """Follow the selection and the project: the selected links' kind and its alternatives."""
        cluster = self.scene.doc.project.cluster
        known = {lk.id: lk for lk in cluster.links}
        self._ids = tuple(i for i in self.scene.doc.selection if i in known)
        self._updating = True
        try:
            self.kind.clear()
            if not self._ids:
                self.kind.setEnabled(False)
                self.what.setText("select a link on the canvas")
                return
            current = {known[i].kind for i in self._ids}
            kinds = self.scene.link_kind_choices(self._ids)
            for k in kinds:
                self.kind.addItem(k.name, k.id)
            if len(current) == 1:
                kid = next(iter(current))
                if self.kind.findData(kid) < 0:
                    name = cluster.link_kinds[kid].name if kid in cluster.link_kinds else kid
                    self.kind.insertItem(0, name, kid)
                self.kind.setCurrentIndex(self.kind.findData(kid))
            else:
                self.kind.setCurrentIndex(-1)
            self.kind.setEnabled(bool(kinds))
            n = len(self._ids)
            self.what.setText(self._ids[0] if n == 1 else f"{n} links selected")
        finally:
            self._updating = False

    def _chosen(self, index: int) -> None:
        if self._updating or index < 0:
            return
        kid = self.kind.itemData(index)
        kinds = {k.id: k for k in self.scene.link_kind_choices(self._ids)}
        if kid in kinds:
            self.scene.set_link_kind(self._ids, kinds[kid])
