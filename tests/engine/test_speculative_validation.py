"""Published speculative-decoding results (benchmarks/validation/speculative-points.json) and the
published sizes of EAGLE heads against the engine's drafter model."""

from __future__ import annotations

import pytest

from benchmarks.validation.speculative import load_points, predict, project_for, speedups
from studio.core.layout import Layout
from studio.core.workload import ServingConfig, SpeculativeConfig
from studio.engine import evaluate
from studio.io.presets import load_catalog

from .fixtures import DGX_H100, cluster, project

POINTS = load_points()


def test_points_name_source_and_setting():
    assert len(POINTS) >= 5
    for p in POINTS:
        r = p.record
        assert (
            r["source"] and r["measured"] > 0 and r["metric"] in ("output_tokens_per_s", "tpot_ms")
        ), p.id
        if r.get("speculative"):
            SpeculativeConfig(**r["speculative"])


def test_every_point_fits_and_is_costed():
    for p in POINTS:
        res = evaluate(project_for(p))
        assert res.fits, f"{p.id}: {res.fit_reason}"
        assert predict(p) > 0


def test_speedup_over_the_same_source_baseline_is_close():
    rows = speedups()
    assert rows, "no point names a baseline"
    for pid, pred, meas, err in rows:
        assert abs(err) <= 0.10, (pid, pred, meas)


def test_dense_points_within_the_base_engines_error():
    for p in POINTS:
        if p.record["model"] != "llama-3.1-8b":
            continue
        assert abs(predict(p) / p.measured - 1) <= 0.25, p.id


@pytest.mark.parametrize("model,published", [("llama-3.1-8b", 0.25e9), ("llama-3.1-70b", 0.99e9)])
def test_eagle_head_size_matches_the_published_heads(model, published):
    """vLLM docs/features/spec_decode.md lists EAGLE-LLaMA3-Instruct-8B at 0.25 B parameters and
    -70B at 0.99 B (one decoder layer + the 2h × h projection; embedding and LM head shared)."""
    arch = load_catalog().model(model).architecture
    tp = 8
    proj = project(
        cluster(DGX_H100),
        arch,
        Layout(tp=tp),
        serving=ServingConfig(speculative=SpeculativeConfig(method="eagle")),
    )
    draft_bytes = evaluate(proj).memory[0].weights_by_module["draft"]
    params = draft_bytes * tp / 2.0  # BF16
    assert params == pytest.approx(published, rel=0.03)


def test_mtp_layers_come_from_num_nextn_predict_layers():
    from studio.core.errors import StudioError
    from studio.io.importers.hf_config import architecture_from_config

    cat = load_catalog()
    assert cat.model("deepseek-v3").architecture.mtp_layers == 1
    assert cat.model("llama-3.1-8b").architecture.mtp_layers == 0
    import json
    from pathlib import Path

    preset = Path(__file__).resolve().parents[2] / "presets" / "models" / "llama-3.1-8b.json"
    cfg = dict(json.loads(preset.read_text(encoding="utf-8"))["config"], num_nextn_predict_layers=2)
    assert architecture_from_config(cfg, model_id="x", name="x", source="test").mtp_layers == 2
    with pytest.raises(StudioError, match="'num_nextn_predict_layers' must be ≥ 0"):
        architecture_from_config(dict(cfg, num_nextn_predict_layers=-1), model_id="x", name="x", source="test")
