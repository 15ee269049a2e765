"""Numbers a reader can trust: the batch caption says what limits it, the disabled Batch box shows
the batch in use, units scale, no "inf", and the advice matches the project's state."""

from __future__ import annotations

import pytest
from gui_helpers import engine_evaluate

from studio.core.layout import Layout


@pytest.fixture
def evaluate():
    return engine_evaluate()


def test_batch_caption_names_what_limits_it(project, evaluate):
    from studio.gui.panels.metrics_panel import figure_value

    auto = project.replace(workload=project.workload.replace(batch="auto", max_batch=4))
    r = evaluate(auto)
    assert r.batch == 4 < r.max_concurrent_sequences
    assert figure_value(r, "batch") == ("4", "auto (capped at 4)")
    roomy = project.replace(workload=project.workload.replace(batch="auto", max_batch=1_000_000))
    r = evaluate(roomy)  # vLLM caps the running sequences at its max_num_seqs (1,024 on an H100)
    assert r.batch == 1024 < r.max_concurrent_sequences
    assert figure_value(r, "batch")[1] == "auto (capped at 1,024)"
    kv_bound = roomy.replace(serving=roomy.serving.replace(runtime="sglang"))  # no sequence limit: the KV cache
    r = evaluate(kv_bound)
    assert r.batch == r.max_concurrent_sequences
    assert figure_value(r, "batch")[1] == "auto (fits KV)"


def test_a_plan_that_does_not_fit_prints_no_inf(project, evaluate):
    from studio.gui.panels.metrics_panel import FIGURES, figure_value

    huge = project.replace(workload=project.workload.replace(batch=100_000))
    r = evaluate(huge)
    assert not r.fits
    texts = [t for f in FIGURES for t in figure_value(r, f.key)]
    assert not any("inf" in t or "nan" in t for t in texts), texts
    assert figure_value(r, "cost")[0] == "—"


def test_the_disabled_batch_box_shows_the_batch_in_use(qtbot, project):
    from studio.gui.document import ProjectDocument
    from studio.gui.panels.model_panel import ModelPanel

    doc = ProjectDocument(project.replace(workload=project.workload.replace(batch="auto")),
                          evaluate=engine_evaluate(), threaded=False)
    panel = ModelPanel(doc)
    qtbot.addWidget(panel)
    doc.recompute_now()
    r = doc.result
    assert not panel.batch.isEnabled() and panel.batch.value() == r.batch > 1
    assert doc.undo_stack.count() == 0  # showing it is not an edit
    panel.batch_auto.click()  # a real click: auto off keeps the batch in use
    assert doc.project.workload.batch == r.batch


def test_advice_does_not_suggest_fp8_for_fp8_weights(project, evaluate, catalog):
    from studio.core.precision import DType

    big = catalog.model("llama-3.1-405b").architecture  # 405B does not fit one H100 even in FP8
    tight = project.replace(model=big, layout=Layout(tp=1, pp=1, dp=16))
    r = evaluate(tight)
    bf16 = next(w for w in r.warnings if w.code == "DOES_NOT_FIT")
    assert "quantise the weights (FP8)" in bf16.fix
    fp8 = tight.replace(serving=tight.serving.replace(weight_dtype=DType.FP8, gpu_memory_utilization=0.95))
    r = evaluate(fp8)
    w = next(w for w in r.warnings if w.code == "DOES_NOT_FIT")
    assert "(FP8)" not in w.fix and "gpu_memory_utilization" not in w.fix
    assert "FP4/INT4" in w.fix


def test_throughput_and_tpot_say_what_they_assume(qtbot, project, evaluate):
    from studio.gui.panels.metrics_panel import MetricsPanel

    r = evaluate(project)
    panel = MetricsPanel()
    qtbot.addWidget(panel)
    panel.set_result(r)
    assert "prefill time is included" in panel.cards["throughput"].toolTip()
    assert "prefill interference" in panel.cards["tpot"].toolTip()
    panel.show_why("throughput")
    assert panel.why.toPlainText().startswith("Sustained throughput")


def test_memory_card_shows_the_capacity_as_precisely_as_the_figure(project, evaluate):
    """The capacity has one decimal like the figure beside it ("of 79.6 GiB", not "of 80 GiB")."""
    from studio.core.units import GIB
    from studio.gui.panels.metrics_panel import figure_value

    r = evaluate(project)
    value, caption = figure_value(r, "memory")
    cap = r.peak_memory.capacity / GIB
    assert value.endswith(" GiB") and len(value.split()[0].split(".")[-1]) == 1
    assert caption.startswith(f"of {cap:,.1f} GiB ("), caption
