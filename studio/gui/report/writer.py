"""Write the report: a self-contained HTML file (pictures as ``data:`` URIs) or a PDF with real
pages (:class:`QTextDocument` printed on a :class:`QPdfWriter`)."""

from __future__ import annotations

from pathlib import Path

from studio.core.errors import StudioError
from studio.service.report_content import ReportData
from studio.service.report_summary import report_title

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


def write_pdf(data: ReportData, path: Path, pictures: dict | None = None) -> None:
    """Lay the report out on A4 pages and write it as PDF."""
    from PySide6.QtCore import QMarginsF
    from PySide6.QtGui import QPageLayout, QPageSize, QPdfWriter

    pictures = pictures if pictures is not None else render_pictures(data)
    writer = QPdfWriter(str(path))
    writer.setTitle(f"{report_title(data)} — Layout Studio report")
    writer.setCreator("Layout Studio")
    writer.setPageLayout(QPageLayout(QPageSize(QPageSize.PageSizeId.A4), QPageLayout.Orientation.Portrait,
                                     QMarginsF(15, 15, 15, 15), QPageLayout.Unit.Millimeter))
    writer.setResolution(300)
    doc = pdf_document(data, pictures, writer.pageLayout())
    doc.print_(writer)
    if not path.is_file() or path.stat().st_size == 0:
        raise StudioError(f"cannot write the PDF '{path}'")


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
    pictures = render_pictures(data)
    if suffix == ".pdf":
        write_pdf(data, path, pictures)
    else:
        try:
            path.write_text(report_html(data, pictures), encoding="utf-8")
        except OSError as exc:
            raise StudioError(f"cannot write the report: {exc.strerror}", str(path)) from None
    return path
