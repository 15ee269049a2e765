"""A sweep's plans share the layout costs of rows that differ only by batch (``evaluate``'s
``costs`` memo): every plan is the one evaluated afresh, figure for figure."""

from __future__ import annotations

import pytest

from studio.engine.plan.evaluate import evaluate
from studio.engine.search.sweep import sweep
from studio.io.presets import example_paths, load_example

#: Two bundled examples: 2 × 8 H100 (405B), and one 8 × H100 box with a host KV tier and a shared
#: system prompt (the prefix cache reloads its load into the layout's costs).
EXAMPLES = ("dgx-h100-2node-llama-405b", "dgx-h100-llama-70b-multiturn-chat")


@pytest.mark.parametrize("example", EXAMPLES)
def test_plans_of_one_layout_at_several_batches_equal_fresh_plans(example):
    p = load_example(example_paths()[example], example)
    res = sweep(p)
    cols = res.columns
    by_layout: dict[tuple, list[int]] = {}
    for i in res.order.tolist():
        if cols["fits"][i]:
            key = tuple(int(cols[k][i]) for k in ("tp", "pp", "dp", "ep", "micro_batches", "cp", "idle_gpus"))
            by_layout.setdefault(key, []).append(i)
    rows = next(v for v in by_layout.values() if len(v) >= 3)[:3]  # one layout, three batches
    assert len({int(cols["batch"][i]) for i in rows}) == 3
    for details in (False, True):
        for i in rows:
            shared = res.plan(i, details=details)
            wl = p.workload.model_copy(update={"batch": int(cols["batch"][i])})
            fresh = evaluate(p.model_copy(update={"workload": wl}), res.layout(i), details=details)
            assert shared.to_json() == fresh.to_json()
            assert shared.load == fresh.load
    assert len(res._costs) == 1  # the three rows' plans costed their layout once
