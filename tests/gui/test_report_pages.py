"""PDF report pages: no table row split across pages, no heading alone at a page's foot, no page
left half empty by a forced break (studio.gui.report.paginate)."""

from __future__ import annotations

import pytest

from studio.gui.report.paginate import with_breaks
from studio.io.project_file import load_project
from tests.report.example_report import EXAMPLES, example_data, example_pictures

#: The report's figures of a bundled example as it is on disk, gathered once per run (shared with
#: tests/report): three tests here read them, and gathering one sweeps its cluster (~0.3 s of CPU).
gathered = example_data


def test_with_breaks_starts_a_new_table_and_keeps_the_header():
    html = "<h2>A</h2><table border=1><tr><th>k</th></tr><tr><td>1</td></tr><tr><td>2</td></tr></table><h2>B</h2>"
    out = with_breaks(html, {(0, 2)}, {1})
    assert out.count("<table") == 2 and out.count("<thead><tr><th>k</th></tr></thead>") == 2
    # the break follows the first piece (one before the second let Qt's empty paragraph between
    # two tables spill onto a page of its own)
    assert '<table border=1 style="page-break-after: always">' in out
    assert '<h2 style="page-break-before: always">B' in out and "<h2>A" in out
    assert out.index("<td>1</td>") < out.index("</table><table border=1><thead>") < out.index("<td>2</td>")


@pytest.mark.parametrize("name", sorted(p.stem for p in EXAMPLES.glob("*.json")))
def test_report_pages_are_full_and_nothing_is_split(qtbot, name):
    """Page 1 was 84% full (the cluster drawing did not fit at its foot and left it blank) and
    pages further on half empty (pictures pushed over, an empty page behind a split table); the
    fill is measured from the laid-out lines, since a picture's block starts on the page before."""
    from PySide6.QtCore import QMarginsF
    from PySide6.QtGui import QPageLayout, QPageSize

    from studio.gui.report.paginate import orphan_headings, page_fill, split_rows
    from studio.gui.report.writer import pdf_document

    data = gathered(name)
    page = QPageLayout(QPageSize(QPageSize.PageSizeId.A4), QPageLayout.Orientation.Portrait,
                       QMarginsF(15, 15, 15, 15), QPageLayout.Unit.Millimeter)
    doc = pdf_document(data, example_pictures(name), page)
    assert split_rows(doc) == []
    assert orphan_headings(doc) == []
    fill = page_fill(doc)
    assert fill[0] >= 0.9, fill
    assert all(f >= 0.7 for f in fill[:-1]), fill  # only the last page may be short


def test_report_explains_the_prefill_in_ttft_and_prints_no_inf():
    """TTFT is explained by the iterations that prefill the new prompt, the load is named, the
    percentiles come from a simulation of the project's load; a plan serving nothing prints no inf."""
    from studio.gui.report.document import Images, build_html
    from studio.service.report.report_content import gather

    p = load_project(EXAMPLES / "dgx-h100-2node-llama-405b.json")
    html = build_html(gathered("dgx-h100-2node-llama-405b"), Images(src=lambda n: n, width=600))
    assert "prefill the new prompt" in html and "Serving under load" in html
    assert "p99" in html and "requests simulated" in html
    huge = p.replace(workload=p.workload.replace(batch=100_000))
    html = build_html(gather(huge), Images(src=lambda n: n, width=600))
    assert "$inf" not in html and "inf per million" not in html


def test_the_report_follows_the_current_model_and_nests_no_brackets(qtbot, catalog):
    """After the model is changed, the title and the cluster row name what the project holds now,
    not the project's old name; no text of the report has brackets inside brackets."""
    import re

    from studio.gui.report.document import Images, build_html
    from studio.service.report.report_content import gather
    from studio.service.report.report_summary import unnest_brackets

    assert unnest_brackets("x (hierarchical (ring in node + ring per rail)) y") == \
        "x (hierarchical — ring in node + ring per rail) y"
    p = load_project(EXAMPLES / "dgx-h100-2node-llama-405b.json")
    p = p.replace(model=catalog.model("llama-3.1-70b").architecture, model_ref="llama-3.1-70b")
    html = build_html(gather(p), Images(src=lambda n: n, width=600))
    title = re.search(r"<h1>(.*?)</h1>", html).group(1)
    assert "405B" not in title and "Llama-3.1-70B" in title and "H100" in title
    cluster = re.search(r"<b>Cluster</b></td><td>(.*?)</td>", html)
    assert cluster is not None and "405B" not in cluster.group(1), cluster
    for name in sorted(e.stem for e in EXAMPLES.glob("*.json")):
        html = html if name == "dgx-h100-2node-llama-405b" else build_html(
            gathered(name), Images(src=lambda n: n, width=600))
        # the appendix's launch commands are the export's own text, quoted as written
        body = re.sub(r"<pre>.*?</pre>", "", html, flags=re.S)
        text = re.sub(r"<[^>]+>", " ", re.sub(r"<(style|img)[^>]*>.*?</style>|<img[^>]*>", "", body, flags=re.S))
        nested = re.findall(r"\([^()]*\([^()]*\)[^()]*\)", text)
        assert nested == [], (name, nested[:3])
        assert re.findall(r"\)\s*\(", text) == [], name  # "(newest profile) (profile …)"
