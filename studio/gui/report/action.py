"""File ▸ Export report… in the studio window: ask for a file, write the report of the open
document's project, say where it went (or why it could not be written)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol, cast

from PySide6.QtWidgets import QApplication, QFileDialog, QWidget

from studio.core.errors import StudioError

if TYPE_CHECKING:
    from studio.gui.document import ProjectDocument


class ReportWindow(Protocol):
    """What the report action needs of the window: its document and its error dialog."""

    doc: ProjectDocument

    def show_error(self, title: str, text: str) -> None: ...

FILTERS = "PDF document (*.pdf);;Web page (*.html)"


def export_report(window: QWidget, path: str | Path | None = None) -> Path | None:
    """Write the report of ``window.doc.project`` to ``path`` (asks for a file when None).

    ``window`` is the main window: it has ``doc`` (the document) and ``show_error(title, text)``.
    Returns the written file, or None when cancelled or refused.
    """
    from studio.gui.report import gather, write_report

    main = cast(ReportWindow, window)
    if path is None:
        start = str(main.doc.path.with_suffix(".pdf")) if main.doc.path else str(Path.home() / "report.pdf")
        chosen, selected = QFileDialog.getSaveFileName(window, "Export report", start, FILTERS)
        if not chosen:
            return None
        if Path(chosen).suffix.lower() not in (".pdf", ".html", ".htm"):
            chosen += ".html" if "html" in selected else ".pdf"
        path = chosen
    QApplication.setOverrideCursor(window.cursor())
    try:
        data = gather(main.doc.project)
        fleet = getattr(window, "fleet_result", None)
        if callable(fleet) and fleet() is not None:  # the Fleet view's plan of this very project
            import dataclasses

            data = dataclasses.replace(data, fleet=fleet())
        written = write_report(data, path)
    except StudioError as exc:
        main.show_error("Cannot export the report", str(exc))
        return None
    finally:
        QApplication.restoreOverrideCursor()
    main.doc.message.emit(f"Exported report to {written}")
    return written
