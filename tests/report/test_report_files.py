"""The written files: a self-contained HTML with every section and figure, a real multi-page PDF,
charts from the GUI's drawing code on one time axis."""

from __future__ import annotations

import re

from studio.engine import evaluate
from studio.service import units

SECTIONS = ("Executive summary", "The cluster", "Model and workload", "Chosen layout and alternatives",
            "Memory per GPU", "Pipeline timelines", "Pareto plot", "Warnings", "Assumptions",
            "Appendix: launch commands")


def test_html_is_self_contained(html):
    refs = re.findall(r'(?:src|href)\s*=\s*"([^"]*)"', html, flags=re.I)
    assert refs, "the report has pictures"
    assert all(r.startswith("data:image/png;base64,") for r in refs), [r[:40] for r in refs if not r.startswith("data:")]
    assert not re.search(r"<(script|link|iframe)\b", html, flags=re.I)
    assert "url(" not in html
    n_img = len(re.findall(r"<img ", html))
    assert n_img == 4 + 4  # cluster, 2 timelines, Pareto + memory bars of the chosen layout and 3 alternatives


def test_html_has_the_sections_and_the_engine_numbers(html, example):
    for title in SECTIONS:
        assert title in html
    plan = evaluate(example)
    for figure in (units.readable(plan.ttft_ms), units.readable(plan.tpot_ms), units.readable(plan.output_tokens_per_s_per_gpu),
                   f"${plan.usd_per_million_output_tokens:,.2f}"):
        assert figure in html
    for w in plan.warnings:
        assert w.fix.replace("<", "&lt;").replace(">", "&gt;") in html
    for a in plan.assumptions[:2]:
        assert a.replace("<", "&lt;").replace(">", "&gt;") in html
    assert "★" in html


def test_pdf_has_real_pages(pdf_bytes):
    assert pdf_bytes.startswith(b"%PDF")
    pages = len(re.findall(rb"/Type\s*/Page\b(?!s)", pdf_bytes))
    assert pages >= 2
    assert pdf_bytes.rstrip().endswith(b"%%EOF")


def test_pictures_are_drawn_at_twice_the_size(pictures):
    for name, img in pictures.items():
        assert img.devicePixelRatio() == 2.0 or name == "cluster", name
        assert img.width() >= 1000, name
    # not blank: the chart has more than a couple of colours
    img = pictures["timeline-decode"]
    colours = {img.pixel(x, y) for x in range(0, img.width(), 37) for y in range(0, img.height(), 23)}
    assert len(colours) > 5


def test_timelines_share_one_time_axis(data):
    from studio.gui.report.charts import CHART_WIDTH, _timeline_plot

    x_max = max(o.plan.timelines["decode"].total_ms for o in data.options)
    ranges = []
    for o in data.options:
        plot, _size = _timeline_plot(o, "decode", x_max, CHART_WIDTH)
        ranges.append(tuple(round(v, 6) for v in plot.getPlotItem().getViewBox().viewRange()[0]))
        plot.deleteLater()
    assert len(set(ranges)) == 1 and ranges[0] == (0.0, round(x_max, 6))


def test_pareto_marks_the_chosen_layout(data):
    from studio.gui.report.pareto import Marked, ParetoPlot

    plot = ParetoPlot()
    plan = data.chosen.plan
    plot.set_sweep(data.sweep, [Marked("chosen", plan.tokens_per_s_per_user, plan.output_tokens_per_s_per_gpu, True)])
    xs, ys = plot.frontier.getData()
    assert len(xs) == len(data.sweep.pareto) and list(xs) == sorted(xs)
    spots = plot.marks.data
    assert len(spots) == 1 and spots[0]["x"] == plan.tokens_per_s_per_user
    plot.deleteLater()
