"""Page breaks of the PDF report, decided on the laid-out document rather than forced per section.

Forcing every big section onto a new page left pages half empty, and Qt splits a table row across
two pages when a cell's wrapped text straddles the boundary. :func:`paginate` lays the report out
at its page size and, until nothing changes (one break per pass, since each moves all that follows):

* a table row that straddles a page boundary starts a new table on the next page (a page break on
  the table frame, which Qt honours; a break on a row's cells is not reliable);
* a table's header row is a ``<thead>``, which Qt repeats on every page the table runs onto;
* a heading that would end a page, cut from what it introduces, moves to the next page.

The breaks are written into the report's own HTML (:func:`with_breaks`), so the document is
rebuilt each pass.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from PySide6.QtGui import QTextBlock, QTextDocument, QTextFrame, QTextTable

MAX_PASSES = 24
BREAK = ' style="page-break-before: always"'
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
        for r in range(1, t.rows()):
            top, bottom = row_span(doc, t, r)
            if _page(doc, top) != _page(doc, bottom - 0.5) and bottom - top < h:
                out.append((k, r))
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
            tag = open_tag if start == 0 else open_tag[:-1] + BREAK + ">"
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


def paginate(build: Callable[[str], QTextDocument], html: str) -> tuple[QTextDocument, str]:
    """Lay out ``html`` with ``build`` (HTML → document with its page size set), adding breaks
    until no table row straddles a page and no heading is cut from its text.

    Returns the final document and its HTML.
    """
    rows: set[tuple[int, int]] = set()
    heads: set[int] = set()
    current = html
    doc = build(current)
    for _ in range(MAX_PASSES):
        split, orphans = split_rows(doc), orphan_headings(doc)
        if split:
            piece, r = split[0]
            t, start, repeated = _pieces(html, rows)[piece]
            rows.add((t, start + r - (1 if repeated else 0)))
        elif orphans:
            heads.add(orphans[0])
        else:
            break
        current = with_breaks(html, rows, heads)
        doc = build(current)
    return doc, current


def page_fill(doc: QTextDocument) -> list[float]:
    """How much of each page's height holds content (0–1), from the blocks' positions."""
    lay = doc.documentLayout()
    h = doc.pageSize().height()
    bottoms: dict[int, float] = {}
    block = doc.begin()
    while block.isValid():
        r = lay.blockBoundingRect(block)
        if r.height() > 0:
            for p in range(_page(doc, r.top()), _page(doc, r.bottom() - 0.5) + 1):  # a block may run over pages
                bottoms[p] = max(bottoms.get(p, 0.0), min(r.bottom(), (p + 1) * h) - p * h)
        block = block.next()
    return [bottoms.get(p, 0.0) / h for p in range(doc.pageCount())]
