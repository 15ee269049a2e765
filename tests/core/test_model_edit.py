"""Swapping the model (core.edits.with_model): what of the layout and the pinned layouts stays."""

from __future__ import annotations

from studio.core.edits import with_model
from studio.core.layout import Layout
from tests.engine.fixtures import DGX_H100, LLAMA_8B, LLAMA_70B, cluster, project


def _split_70b():
    p = project(cluster(DGX_H100, 1), LLAMA_70B)
    return p.replace(
        layout=Layout(tp=4, pp=2, dp=1, layers_per_stage=(30, 50)),
        pinned=(Layout(tp=8, pp=1, dp=1), Layout(tp=2, pp=4, dp=1, layers_per_stage=(20, 20, 20, 20))),
    )


def test_a_split_that_no_longer_adds_up_goes_back_to_even_and_unrunnable_pins_go():
    p = _split_70b()
    q = with_model(p, LLAMA_8B, "llama-3.1-8b")
    assert q.model is LLAMA_8B and q.model_ref == "llama-3.1-8b"
    assert q.layout == p.layout.replace(layers_per_stage=None)  # 30 + 50 is not 32 layers
    assert q.pinned == (Layout(tp=8, pp=1, dp=1),)  # 4 × 20 layers cannot run a 32-layer model
    assert p.layout.layers_per_stage == (30, 50) and len(p.pinned) == 2  # the input is untouched


def test_a_split_that_still_adds_up_and_runnable_pins_stay():
    p = _split_70b()
    same_depth = LLAMA_70B.replace(name="another-80-layer-model")
    q = with_model(p, same_depth, None)
    assert q.layout == p.layout and q.pinned == p.pinned and q.model_ref is None
