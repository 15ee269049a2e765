"""Page breaks of the PDF report, decided on the laid-out document rather than forced per section.

Forcing every big section onto a new page left pages half empty, and Qt splits a table row across
two pages when a cell's wrapped text straddles the boundary. :func:`paginate` lays the report out
at its page size and, until nothing changes (one break per pass, since each moves all that follows):

* a table row that straddles a page boundary starts a new table on the next page (a page break on
  the table frame, which Qt honours; a break on a row's cells is not reliable);
* a table's header row is a ``<thead>``, which Qt repeats on every page the table runs onto;
* a heading that would end a page, cut from what it introduces, moves to the next page;
* a picture that does not fit in what is left of a page is drawn smaller (down to
  :data:`MIN_PICTURE_SCALE` of its width) so that it does, instead of leaving that space blank.

The breaks are written into the report's own HTML (:func:`with_breaks`), so the document is
rebuilt each pass.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from PySide6.QtGui import QTextBlock, QTextDocument, QTextFrame, QTextTable

MAX_PASSES = 24
#: The smallest share of its width a picture is shrunk to so that it ends a page instead of
#: leaving the page's foot blank (below this its labels get too small to read).
MIN_PICTURE_SCALE = 0.6
#: A page's foot left blank below this share of the page is not worth shrinking a picture for.
MIN_GAP = 0.04
#: Room kept below a shrunk picture (its paragraph's margin), in document pixels.
PICTURE_MARGIN = 16.0
_IMG_WIDTH = re.compile(r'(<img\b[^>]*\bwidth=")(\d+)(")')
BREAK = ' style="page-break-before: always"'
#: Room a table's last row leaves above the page's foot (Qt rounds the frame's edge onto the next
#: page when it ends within a few pixels of it).
EDGE = 6.0
BREAK_AFTER = ' style="page-break-after: always"'
_TABLE = re.compile(r"(<table\b[^>]*>)(.*?)(</table>)", re.S)
_ROW = re.compile(r"<tr\b.*?</tr>", re.S)
_HEADING = re.compile(r"<h[1-6]\b")


def tables(frame: QTextFrame) -> Iterator[QTextTable]:
    """Every table in ``frame``, nested ones included, in document order."""
    for f in frame.childFrames():
        if isinstance(f, QTextTable):
            yield f
        yield from tables(f)


def _page(doc: QTextDocument, y: float) -> int:
    return int(y // doc.pageSize().height())


def row_span(doc: QTextDocument, table: QTextTable, row: int) -> tuple[float, float]:
    """Top and bottom (document pixels) of a table row's content."""
    lay = doc.documentLayout()
    cells = [table.cellAt(row, c) for c in range(table.columns())]
    top = min(lay.blockBoundingRect(c.firstCursorPosition().block()).top() for c in cells)
    bottom = max(lay.blockBoundingRect(c.lastCursorPosition().block()).bottom() for c in cells)
    return top, bottom


def split_rows(doc: QTextDocument) -> list[tuple[int, int]]:
    """(table index, row) of the table rows that straddle a page boundary and fit on one page."""
    h = doc.pageSize().height()
    out = []
    for k, t in enumerate(tables(doc.rootFrame())):
        fmt = t.format()
        below = fmt.cellPadding() + fmt.border()  # a row's edge lies this far below its text
        for r in range(1, t.rows()):
            top, bottom = row_span(doc, t, r)
            # the last row also carries the table's bottom edge: a table whose edge spilled onto
            # the next page left that page blank but for the edge once the next piece broke there
            bottom += below + (fmt.bottomMargin() + fmt.border() if r == t.rows() - 1 else 0.0)
            if _page(doc, top) != _page(doc, bottom - 0.5) and bottom - top < h:
                out.append((k, r))
    return out


def spilled_edges(doc: QTextDocument, html: str, rows: set[tuple[int, int]]) -> list[tuple[int, int, float]]:
    """(original table, cut row, top) of the table pieces that end a page with a break but whose
    last row ends within :data:`EDGE` of the page's foot: Qt rounds the table's bottom edge onto
    the next page, and the break after the piece then leaves that page blank. Splitting a table
    changes its columns' widths, so this is checked on the pieces as laid out."""
    h = doc.pageSize().height()
    pieces = _pieces(html, rows)
    out = []
    for j, table in enumerate(tables(doc.rootFrame())):
        if j + 1 >= len(pieces) or pieces[j + 1][0] != pieces[j][0]:
            continue  # the last piece of its table: no break after it
        fmt = table.format()
        top, bottom = row_span(doc, table, table.rows() - 1)
        edge = bottom + fmt.cellPadding() + 2 * fmt.border() + fmt.bottomMargin() + EDGE
        if _page(doc, top) != _page(doc, edge) and table.rows() > 2 and edge - top < h:
            out.append((pieces[j][0], pieces[j + 1][1], top))
    return out


def _headings(doc: QTextDocument) -> Iterator[QTextBlock]:
    block = doc.begin()
    while block.isValid():
        if block.blockFormat().headingLevel() > 0:
            yield block
        block = block.next()


def orphan_headings(doc: QTextDocument) -> list[int]:
    """Indices (among the headings, in order) of headings on another page than the start of what
    follows them."""
    lay = doc.documentLayout()
    out = []
    for k, block in enumerate(_headings(doc)):
        nxt = block.next()
        if not nxt.isValid():
            continue
        here, there = lay.blockBoundingRect(block), lay.blockBoundingRect(nxt)
        if _page(doc, here.top()) != _page(doc, there.top() + min(there.height(), 20.0)):
            out.append(k)
    return out


def with_breaks(html: str, rows: set[tuple[int, int]], headings: set[int]) -> str:
    """``html`` with a page break before the given headings and a new table (header row repeated)
    at the given (table index, row) places."""
    count = iter(range(10**9))
    html = _HEADING.sub(lambda m: m.group(0) + (BREAK if next(count) in headings else ""), html)
    k = iter(range(10**9))

    def table(m: re.Match[str]) -> str:
        idx = next(k)
        cut = sorted(r for t, r in rows if t == idx)
        open_tag, body, close = m.groups()
        trs = _ROW.findall(body)
        head = trs[0] if trs and "<th" in trs[0] else ""
        parts, start = [], 0
        for r in cut + [len(trs)]:
            chunk = "".join(trs[start + (1 if start == 0 and head else 0):r])
            # the break goes after a piece, not before the next: Qt puts an empty paragraph
            # between two tables, which a break before the second pushed onto a page of its own
            tag = open_tag if r == len(trs) else open_tag[:-1] + BREAK_AFTER + ">"
            # a <thead> row is repeated by Qt at the top of every page the table runs onto
            parts.append(tag + (f"<thead>{head}</thead>" if head else "") + chunk + close)
            start = r
        return "".join(parts)

    return _TABLE.sub(table, html)


def _pieces(html: str, rows: set[tuple[int, int]]) -> list[tuple[int, int, bool]]:
    """For each table of the document built with ``rows`` cut: (original table, first original
    row, header repeated on top)."""
    out = []
    for t, m in enumerate(_TABLE.finditer(html)):
        trs = _ROW.findall(m.group(2))
        head = bool(trs) and "<th" in trs[0]
        for start in [0] + sorted(r for tt, r in rows if tt == t):
            out.append((t, start, head and start > 0))
    return out


def pictures_to_shrink(doc: QTextDocument) -> list[tuple[int, float, float]]:
    """(picture index, scale, top) of the pictures pushed to the top of a page although the page
    before ends with at least :data:`MIN_GAP` blank, that fit in that blank once drawn at
    ``scale`` (at least :data:`MIN_PICTURE_SCALE`) of their width. Pictures are counted in
    document order, which is the order of the ``<img>`` tags."""
    lay = doc.documentLayout()
    h = doc.pageSize().height()
    bottom = 0.0  # the lowest content so far
    out = []
    k = -1
    block = doc.begin()
    while block.isValid():
        top = lay.blockBoundingRect(block).top()
        layout = block.layout()
        pictures = block.text().count("\ufffc")  # the object replacement character stands for an image
        for i in range(layout.lineCount()):
            line = layout.lineAt(i)
            y0, y1 = top + line.y(), top + line.y() + line.height()
            if pictures and line.height() > 0:
                k += 1
                page = _page(doc, y0)
                gap = page * h - bottom
                if page > _page(doc, bottom) and gap >= MIN_GAP * h and _page(doc, bottom) == page - 1:
                    scale = (gap - PICTURE_MARGIN) / line.height()
                    if MIN_PICTURE_SCALE <= scale < 1.0:
                        out.append((k, scale, y0))
            if line.height() > 0:
                bottom = max(bottom, y1)
        block = block.next()
    return out


def with_scales(html: str, scales: dict[int, float]) -> str:
    """``html`` with the ``k``-th picture's width multiplied by ``scales[k]``."""
    count = iter(range(10**9))

    def one(m: re.Match[str]) -> str:
        k = next(count)
        if k not in scales:
            return m.group(0)
        return f"{m.group(1)}{max(1, int(int(m.group(2)) * scales[k]))}{m.group(3)}"

    return _IMG_WIDTH.sub(one, html)


def paginate(build: Callable[[str], QTextDocument], html: str) -> tuple[QTextDocument, str]:
    """Lay out ``html`` with ``build`` (HTML → document with its page size set), adding breaks
    until no table row straddles a page and no heading is cut from its text, then shrinking the
    pictures that would leave a page's foot blank.

    Returns the final document and its HTML.
    """
    rows: set[tuple[int, int]] = set()
    heads: set[int] = set()
    scales: dict[int, float] = {}
    current = html
    doc = build(current)
    for _ in range(MAX_PASSES):
        # fix the problem highest up first: a fix moves only what follows it, so the fixes above
        # stay right (fixing a lower one first could leave a break where the page now ends anyway)
        lay = doc.documentLayout()
        found: list[tuple[float, Callable[[], None]]] = []
        all_tables = list(tables(doc.rootFrame()))
        for piece, r in split_rows(doc)[:1]:
            def split(piece: int = piece, r: int = r) -> None:
                t, start, repeated = _pieces(html, rows)[piece]
                rows.add((t, start + r - (1 if repeated else 0)))
            found.append((row_span(doc, all_tables[piece], r)[0], split))
        for t, cut, y in spilled_edges(doc, html, rows)[:1]:
            def earlier(t: int = t, cut: int = cut) -> None:
                rows.discard((t, cut))
                rows.add((t, cut - 1))  # the piece's last row goes to the next page too
            found.append((y, earlier))
        for k, scale, y in pictures_to_shrink(doc):
            if k not in scales:
                def shrink(k: int = k, scale: float = scale) -> None:
                    scales[k] = scale
                found.append((y, shrink))
                break
        orphans = orphan_headings(doc)
        if orphans and not found:  # last: a picture shrunk to fit keeps its heading on the page
            block = list(_headings(doc))[orphans[0]]
            def keep_heading(k: int = orphans[0]) -> None:
                heads.add(k)
            found.append((lay.blockBoundingRect(block).top(), keep_heading))
        if not found:
            break
        min(found, key=lambda f: f[0])[1]()
        current = with_scales(with_breaks(html, rows, heads), scales)
        doc = build(current)
    return doc, current


def page_fill(doc: QTextDocument) -> list[float]:
    """How much of each page's height holds content (0–1), from the positions of the laid-out
    lines: a picture that does not fit at a page's foot moves, with its line, to the next page,
    while its block still starts on the first, so blocks alone counted that foot as full."""
    lay = doc.documentLayout()
    h = doc.pageSize().height()
    bottoms: dict[int, float] = {}
    block = doc.begin()
    while block.isValid():
        top = lay.blockBoundingRect(block).top()
        text = block.layout()
        for i in range(text.lineCount()):
            line = text.lineAt(i)
            y0, y1 = top + line.y(), top + line.y() + line.height()
            if line.height() <= 0:
                continue
            for p in range(_page(doc, y0), _page(doc, y1 - 0.5) + 1):  # a line taller than a page runs over
                bottoms[p] = max(bottoms.get(p, 0.0), min(y1, (p + 1) * h) - p * h)
        block = block.next()
    return [bottoms.get(p, 0.0) / h for p in range(doc.pageCount())]
