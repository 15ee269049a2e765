"""What the report says: alternatives, winners of each row, the summary's figures, escaping."""

from __future__ import annotations

import dataclasses

from studio.core.layout import Layout
from studio.engine import evaluate
from studio.gui.report.document import Images, build_html
from studio.service import units
from studio.service.report.report_content import commands_only, gather, layout_key
from studio.service.report.report_summary import ROWS, executive_summary, winners

FAKE = Images(src=lambda name: f"data:image/png;base64,{name}", width=600)


def _row(label):
    return next(r for r in ROWS if r.label == label)


def test_alternatives_are_distinct_splits_other_than_the_chosen_one(data):
    keys = [layout_key(o.plan.layout) for o in data.options]
    assert len(keys) == len(set(keys))
    assert 1 <= len(data.alternatives) <= 3
    assert all(o.origin == "sweep" and o.plan.fits for o in data.alternatives)
    # in the sweep's order for the objective: tokens/s per GPU does not increase down the list
    per_gpu = [o.plan.output_tokens_per_s_per_gpu for o in data.alternatives]
    assert per_gpu[0] >= per_gpu[-1]


def test_pinned_layouts_are_the_alternatives(example):
    pinned = (Layout(tp=4, pp=4, micro_batches=4), Layout(tp=16, pp=1))
    d = gather(example.replace(pinned=pinned))
    assert [o.origin for o in d.alternatives] == ["pinned", "pinned"]
    assert [layout_key(o.plan.layout) for o in d.alternatives] == [(4, 4, 1, 1), (16, 1, 1, 1)]


def test_a_pinned_layout_is_reported_at_the_batch_it_was_pinned_at(example):
    """As the Compare tab and Apply show it: the pinned batch, else the workload's."""
    at_batch, plain = Layout(tp=4, pp=4, micro_batches=4), Layout(tp=16, pp=1)
    project = example.replace(workload=example.workload.replace(batch=8)).with_pin(at_batch, 24).with_pin(plain)
    d = gather(project)
    assert [o.plan.layout.label for o in d.alternatives] == [at_batch.label, plain.label]
    assert [o.plan.batch for o in d.alternatives] == [24, 8]


def test_winner_is_the_best_fitting_value(data):
    plans = [o.plan for o in data.options]
    row = _row("Output tokens/s per GPU")
    best = max(range(len(plans)), key=lambda i: plans[i].output_tokens_per_s_per_gpu)
    assert winners(row, plans) == {best}
    row = _row("Time to first token (ms)")
    assert winners(row, plans) == {min(range(len(plans)), key=lambda i: plans[i].ttft_ms)}


def test_a_layout_that_does_not_fit_never_wins(data):
    plans = [o.plan for o in data.options]
    cheat = dataclasses.replace(plans[-1], fits=False, output_tokens_per_s_per_gpu=1e9)
    assert winners(_row("Output tokens/s per GPU"), [*plans[:-1], cheat]) != {len(plans) - 1}
    assert winners(_row("GPUs used"), plans) == set()  # a fact, not a goal


def test_summary_states_the_headline_figures(data, example):
    plan = evaluate(example)
    text = executive_summary(data)
    for figure in (units.readable(plan.ttft_ms), units.readable(plan.tpot_ms), units.readable(plan.output_tokens_per_s),
                   f"${plan.usd_per_million_output_tokens:,.2f}", plan.layout.label, example.model.name):
        assert figure in text
    assert "It fits" in text


def test_summary_says_when_it_does_not_fit(example):
    big = example.replace(workload=example.workload.replace(batch=100_000))
    d = gather(big)
    assert not d.chosen.plan.fits
    assert "does NOT fit" in executive_summary(d)


def test_targets_are_judged(example):
    d = gather(example.replace(workload=example.workload.replace(ttft_ms=1.0, tpot_ms=10_000.0)))
    text = executive_summary(d)
    assert "misses the time-to-first-token target of 1 ms" in text
    assert "meets the time-per-output-token target" in text


def test_user_text_is_escaped(data):
    hostile = data.project.replace(name='<script>alert("x")</script>', description="<img src=http://evil>")
    html = build_html(dataclasses.replace(data, project=hostile), FAKE)
    assert "<script>" not in html and "<img src=http" not in html
    assert "&lt;script&gt;" in html


def test_commands_only_drops_the_figures_header_but_keeps_what_differs():
    text = "# Layout Studio export\n# TTFT 1 ms\n# What vLLM runs differently:\n#   - x\n\n# on node 0\nvllm serve m\n"
    assert commands_only(text) == "# What vLLM runs differently:\n#   - x\n\n# on node 0\nvllm serve m"
    plain = "# header\n# TTFT 1 ms\n\n# on node 0\nvllm serve m"
    assert commands_only(plain) == "# on node 0\nvllm serve m"
    assert commands_only("# header\nvllm serve m") == "vllm serve m"


def test_appendix_holds_every_engine(data):
    html = build_html(data, FAKE)
    for title in ("vLLM", "TensorRT-LLM", "SGLang"):
        assert f"<h3>{title}</h3>" in html
    assert "vllm serve" in html and "trtllm-serve" in html and "sglang.launch_server" in html
