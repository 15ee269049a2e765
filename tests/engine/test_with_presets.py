"""The engine on the bundled presets: every preset model evaluates on its usual cluster."""

from __future__ import annotations

import pytest

from studio.core.building.builders import build_cluster
from studio.core.layout import Layout
from studio.core.project import Project
from studio.engine import evaluate
from studio.io.presets import load_catalog


@pytest.mark.parametrize("model_id", sorted(load_catalog().models))
def test_every_preset_model_evaluates_on_two_dgx_h100(model_id):
    cat = load_catalog()
    cl = build_cluster(cat.node("dgx-h100"), 2, cat.gpu("h100-sxm"), cat.links)
    r = evaluate(Project(cluster=cl, model=cat.model(model_id).architecture), Layout(tp=8, pp=2))
    assert r.ttft_ms > 0 and r.tpot_ms > 0
    assert all(m.weights > 0 for m in r.memory)
    assert r.fits == (r.output_tokens_per_s > 0)
