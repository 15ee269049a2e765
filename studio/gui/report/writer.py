"""Write the report: a self-contained HTML file (pictures as ``data:`` URIs) or a PDF with real
pages (:class:`QTextDocument` printed on a :class:`QPdfWriter` into memory). Both are written with
the project's one atomic writer (:mod:`studio.io.atomic`): a temporary file beside the target,
flushed, fsynced and renamed, so a full disk or a kill leaves the old file, never half a report."""

from __future__ import annotations

from pathlib import Path

from studio.core.errors import StudioError
from studio.service.report.report_content import ReportData
from studio.service.report.report_summary import report_title

FORMATS = (".html", ".htm", ".pdf")
PDF_IMAGE_WIDTH = 680  # document pixels across an A4 page inside the margins
HTML_IMAGE_WIDTH = 900


def render_pictures(data: ReportData) -> dict:
    """Every picture of the report as a QImage, by the names :mod:`document` uses."""
    from studio.gui.report import charts

    charts.ensure_app()
    pics = {
        "cluster": charts.cluster_image(data),
        "timeline-prefill": charts.timelines_image(data.options, "prefill"),
        "timeline-decode": charts.timelines_image(data.options, "decode"),
        "pareto": charts.pareto_image(data),
    }
    for i, o in enumerate(data.options):
        pics[f"mem-{i}"] = charts.memory_image(o.plan, height=280 if i == 0 else 230)
    return pics


def report_html(data: ReportData, pictures: dict | None = None) -> str:
    """The report as one self-contained HTML string."""
    from studio.gui.report.charts import png_bytes
    from studio.gui.report.document import Images, build_html, data_uri

    pictures = pictures if pictures is not None else render_pictures(data)
    uris = {name: data_uri(png_bytes(img)) for name, img in pictures.items()}
    return build_html(data, Images(src=uris.__getitem__, width=HTML_IMAGE_WIDTH))


def pdf_bytes(data: ReportData, pictures: dict | None = None) -> bytes:
    """The report laid out on A4 pages, as the bytes of a PDF file."""
    from PySide6.QtCore import QBuffer, QIODevice, QMarginsF
    from PySide6.QtGui import QPageLayout, QPageSize, QPdfWriter

    pictures = pictures if pictures is not None else render_pictures(data)
    buf = QBuffer()
    buf.open(QIODevice.OpenModeFlag.WriteOnly)
    writer = QPdfWriter(buf)
    writer.setTitle(f"{report_title(data)} — Layout Studio report")
    writer.setCreator("Layout Studio")
    writer.setPageLayout(QPageLayout(QPageSize(QPageSize.PageSizeId.A4), QPageLayout.Orientation.Portrait,
                                     QMarginsF(15, 15, 15, 15), QPageLayout.Unit.Millimeter))
    writer.setResolution(300)
    doc = pdf_document(data, pictures, writer.pageLayout())
    doc.print_(writer)
    del writer  # the PDF's trailer is written when the painting ends; the buffer holds it all
    out = bytes(buf.data().data())
    buf.close()
    if not out.startswith(b"%PDF"):
        raise StudioError("cannot lay the report out as a PDF (Qt wrote no PDF)")
    return out


def write_pdf(data: ReportData, path: Path, pictures: dict | None = None) -> Path:
    """Lay the report out on A4 pages and write it as PDF, atomically (:mod:`studio.io.atomic`):
    a failed write leaves the previous file as it was."""
    from studio.io.atomic import write_bytes_atomic

    return write_bytes_atomic(pdf_bytes(data, pictures), path, what="report")


def pdf_document(data: ReportData, pictures: dict, page_layout):
    """The report laid out on the pages of ``page_layout``, with page breaks where the layout needs
    them (:func:`studio.gui.report.paginate.paginate`): no table row split, no heading left alone
    at a page's foot, no page left half empty by a forced break."""
    from PySide6.QtCore import QSizeF, QUrl
    from PySide6.QtGui import QTextDocument

    from studio.gui.report.document import Images, build_html
    from studio.gui.report.paginate import paginate

    # lay out in points-like document pixels so that fonts and PDF_IMAGE_WIDTH match the page
    rect = page_layout.paintRectPixels(96)

    def build(html: str) -> QTextDocument:
        doc = QTextDocument()
        for name, img in pictures.items():
            doc.addResource(QTextDocument.ResourceType.ImageResource, QUrl(f"report:{name}"), img)
        doc.setHtml(html)
        doc.setPageSize(QSizeF(rect.width(), rect.height()))
        return doc

    doc, _html = paginate(build, build_html(data, Images(src=lambda n: f"report:{n}", width=PDF_IMAGE_WIDTH)))
    return doc


def a4_layout():
    """The PDF's page: A4 portrait, 15 mm margins."""
    from PySide6.QtCore import QMarginsF
    from PySide6.QtGui import QPageLayout, QPageSize

    return QPageLayout(QPageSize(QPageSize.PageSizeId.A4), QPageLayout.Orientation.Portrait,
                       QMarginsF(15, 15, 15, 15), QPageLayout.Unit.Millimeter)


def page_images(data: ReportData, scale: float = 1.5, pictures: dict | None = None) -> list:
    """The PDF report's pages as white images (``scale`` × the page's 96-dpi size), laid
    out exactly as :func:`write_pdf` lays them out: for docs and for looking at the pages."""
    from PySide6.QtCore import QRectF
    from PySide6.QtGui import QColor, QImage, QPainter

    pictures = pictures if pictures is not None else render_pictures(data)
    doc = pdf_document(data, pictures, a4_layout())
    w, h = doc.pageSize().width(), doc.pageSize().height()
    out = []
    for i in range(doc.pageCount()):
        img = QImage(int(w * scale), int(h * scale), QImage.Format.Format_RGB32)
        img.fill(QColor("white"))
        p = QPainter(img)
        p.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        p.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform, True)
        p.scale(scale, scale)
        p.translate(0, -i * h)
        doc.drawContents(p, QRectF(0, i * h, w, h))
        p.end()
        out.append(img)
    return out


def write_report(data: ReportData, path: str | Path) -> Path:
    """Write the report to ``path``; the suffix picks the format (``.html``/``.htm`` or ``.pdf``).

    Raises
    ------
    StudioError
        Unknown suffix, missing folder, or the file cannot be written.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in FORMATS:
        raise StudioError(f"report file '{path}' must end in .html or .pdf (got '{path.suffix or 'no suffix'}')")
    if not path.parent.is_dir():
        raise StudioError(f"report file '{path}': folder '{path.parent}' does not exist")
    from studio.io.atomic import check_target, write_text_atomic

    check_target(path, what="report")  # a folder, device or FIFO is refused before any drawing
    pictures = render_pictures(data)
    if suffix == ".pdf":
        write_pdf(data, path, pictures)
    else:
        write_text_atomic(report_html(data, pictures), path, what="report")
    return path
