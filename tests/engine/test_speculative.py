"""Speculative decoding in the serving model: tokens per step, draft costs, the shrinking gain with
batch, memory, validation of the setting, and agreement of the closed loop with the simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from pydantic import ValidationError

from studio.core.errors import StudioError
from studio.core.layout import Layout
from studio.core.workload import Load, ServingConfig, SpeculativeConfig, Workload
from studio.engine.plan.evaluate import evaluate
from studio.engine.search.sweep import sweep
from studio.engine.serving.under_load import simulate_plan
from studio.engine.step.speculative import (
    acceptance,
    alpha_from_length,
    position_rates,
    speculative_presets,
    tokens_from_alpha,
)

from .fixtures import DGX_H100, LLAMA_8B, LLAMA_70B, MIXTRAL, cluster, llama, project

DRAFT_1B = llama(2048, 16, 32, 8, 8192, "llama-3.2-1b")  # Llama-3.2-1B config.json shape, same vocab


def _proj(model=LLAMA_8B, tp=1, batch=1, spec: SpeculativeConfig | None = None, isl=128, osl=512):
    return project(cluster(DGX_H100), model, Layout(tp=tp, dp=8 // tp),
                   Workload(isl=isl, osl=osl, batch=batch, max_batch=256), ServingConfig(speculative=spec))


# ------------------------------------------------------------------ tokens per step
def test_tokens_per_step_formula_and_its_inverse():
    assert tokens_from_alpha(0.5, 3) == pytest.approx(1 + 0.5 + 0.25 + 0.125)
    assert tokens_from_alpha(1.0, 4) == 5.0
    assert tokens_from_alpha(1e-9, 4) == pytest.approx(1.0)
    for a, k in ((0.3, 1), (0.74, 7), (0.9, 5)):
        assert alpha_from_length(tokens_from_alpha(a, k), k) == pytest.approx(a, abs=1e-9)


def test_per_position_rates_add_up_and_extend_with_the_last_ratio():
    spec = SpeculativeConfig(method="ngram", num_tokens=5, acceptance_by_position=(0.8, 0.6))
    rates = position_rates(spec.acceptance_by_position, 5)
    assert rates[:2] == [0.8, 0.6] and rates[2] == pytest.approx(0.45) and rates[4] == pytest.approx(0.6 * 0.75**3)
    assert acceptance(spec).tokens_per_step == pytest.approx(1 + sum(rates))


def test_published_defaults_have_sources_and_reproduce_their_measurement():
    methods = speculative_presets()["methods"]
    for name, entry in methods.items():
        assert "github.com" in entry["source"] or "arXiv" in entry["source"], name
        if "accepted_length" in entry:
            spec = SpeculativeConfig(method=name, num_tokens=entry["num_tokens"])
            assert acceptance(spec).tokens_per_step == pytest.approx(entry["accepted_length"], rel=1e-6)
    # DeepSeek-V3: 85 % acceptance of the second token -> 1.85 tokens per step with one MTP token
    assert acceptance(SpeculativeConfig(method="mtp", num_tokens=1)).tokens_per_step == pytest.approx(1.85)


def test_draft_model_without_acceptance_is_refused_naming_the_field():
    spec = SpeculativeConfig(method="draft", draft_model="llama-3.2-1b", draft=DRAFT_1B)
    with pytest.raises(StudioError, match="serving.speculative.acceptance"):
        evaluate(_proj(spec=spec))


# ------------------------------------------------------------------ validation
@pytest.mark.parametrize("bad", [
    dict(method="eagle3", acceptance=0.0), dict(method="eagle3", acceptance=1.2),
    dict(method="eagle3", num_tokens=0), dict(method="eagle3", acceptance_by_position=(0.8, 1.5)),
    dict(method="eagle3", acceptance_by_position=(0.6, 0.8)),
    dict(method="eagle3", accepted_length=5.0, num_tokens=3), dict(method="draft"),
    dict(method="eagle3", acceptance=0.7, accepted_length=2.0),
    dict(method="ngram", draft_model="x", draft=DRAFT_1B),
])
def test_bad_settings_are_refused(bad):
    with pytest.raises(ValidationError):
        SpeculativeConfig(**bad)


def test_draft_with_another_vocabulary_and_mtp_without_layers_are_refused():
    other = DRAFT_1B.replace(vocab_size=32000, id="mistral-small")
    with pytest.raises(StudioError, match="draft_model: 'mistral-small' has a 32,000-token vocabulary"):
        evaluate(_proj(spec=SpeculativeConfig(method="draft", draft_model="mistral-small", draft=other, acceptance=0.6)))
    with pytest.raises(StudioError, match="serving.speculative.method: 'mtp' needs .* 'llama-3.1-8b' has none"):
        evaluate(_proj(spec=SpeculativeConfig(method="mtp")))
    with pytest.raises(StudioError, match="'mtp' needs"):
        sweep(_proj(spec=SpeculativeConfig(method="mtp")))


def test_a_project_without_speculation_is_unchanged():
    base = evaluate(_proj())
    assert "speculative" not in base.explanations
    assert _proj().serving.model_dump()["speculative"] is None


# ------------------------------------------------------------------ costs
def test_small_batch_gains_about_E_large_batch_gains_little():  # noqa: N802 - E: tokens per step, as in the docs
    spec = SpeculativeConfig(method="eagle3", num_tokens=3, acceptance=0.75)
    e = tokens_from_alpha(0.75, 3)
    gains = []
    for b in (1, 16, 64, 256):
        base = evaluate(_proj(batch=b))
        fast = evaluate(_proj(batch=b, spec=spec))
        gains.append(base.tpot_ms / fast.tpot_ms)
    assert 1.5 < gains[0] < e  # the drafter and the wider verification cost something
    assert all(a > b for a, b in zip(gains, gains[1:], strict=False))  # the gain shrinks with batch
    assert gains[-1] < 1.2


def test_verification_is_nearly_free_at_batch_1_and_k_plus_1_times_at_large_batch():
    # n-gram has no drafter: the step cost is the verification alone
    spec = SpeculativeConfig(method="ngram", num_tokens=4, acceptance=0.5)
    small = evaluate(_proj(batch=1)).timelines["decode"]
    s_small = evaluate(_proj(batch=1, spec=spec)).timelines["decode"]
    assert s_small.total_ms / small.total_ms < 1.15
    big = evaluate(_proj(batch=256, isl=128, osl=128)).timelines["decode"]
    s_big = evaluate(_proj(batch=256, isl=128, osl=128, spec=spec)).timelines["decode"]
    assert s_big.total_ms / big.total_ms > 2.0


def test_drafter_weights_and_kv_reduce_the_kv_capacity():
    base = evaluate(_proj(model=LLAMA_70B, tp=8))
    eagle = evaluate(_proj(model=LLAMA_70B, tp=8, spec=SpeculativeConfig(method="eagle3")))
    draft = evaluate(_proj(model=LLAMA_70B, tp=8, spec=SpeculativeConfig(
        method="draft", draft_model="llama-3.2-1b", draft=DRAFT_1B, acceptance=0.7)))
    ngram = evaluate(_proj(model=LLAMA_70B, tp=8, spec=SpeculativeConfig(method="ngram")))
    assert ngram.kv_capacity_tokens == base.kv_capacity_tokens
    assert draft.kv_capacity_tokens < eagle.kv_capacity_tokens < base.kv_capacity_tokens
    m = draft.memory[0]
    assert m.weights_by_module["draft"] > 0.1 * 2**30 and m.weights == pytest.approx(sum(m.weights_by_module.values()))
    # one 1B draft model over TP 8: about 1.24 B params × 2 B / 8 GPUs (embedding + LM head included)
    assert m.weights_by_module["draft"] / 2**30 == pytest.approx(1.236e9 * 2 / 8 / 2**30 + 2048 * 128256 * 2 / 8 / 2**30, rel=0.2)


def test_mtp_on_a_moe_model_with_mtp_layers():
    moe = MIXTRAL.replace(mtp_layers=1, id="mixtral-mtp")
    base = evaluate(_proj(model=moe, tp=8, batch=1))
    mtp = evaluate(_proj(model=moe, tp=8, batch=1, spec=SpeculativeConfig(method="mtp", num_tokens=1)))
    assert 1.3 < base.tpot_ms / mtp.tpot_ms < 1.85
    assert mtp.explanations["speculative"].value == pytest.approx(1.85)


def test_explanation_shows_step_and_tokens_per_step():
    r = evaluate(_proj(batch=4, spec=SpeculativeConfig(method="eagle3", num_tokens=3, acceptance=0.7)))
    ex = r.explanations["speculative"]
    terms = {t.name: t.value for t in ex.terms}
    assert terms["TPOT without load"] == pytest.approx(terms["decode step"] / ex.value)
    assert terms["verified per sequence"] == 4
    assert "tokens per step E" in {t.name for t in r.explanations["latency.tpot"].terms}


# ------------------------------------------------------------------ load and simulation
def test_open_loop_and_simulation_agree_with_speculation():
    spec = SpeculativeConfig(method="eagle3", num_tokens=3, acceptance=0.7)
    p = _proj(batch=8, spec=spec, isl=256, osl=256)
    p = p.replace(workload=p.workload.replace(load=Load(mode="concurrency", concurrency=64, num_requests=400)))
    plan = evaluate(p)
    sim = simulate_plan(p)
    assert sim.tpot.mean == pytest.approx(plan.tpot_ms, rel=0.15)
    assert sim.output_tokens_per_s == pytest.approx(plan.output_tokens_per_s, rel=0.15)
    p_rate = p.replace(workload=p.workload.replace(load=Load(mode="rate", rate_per_s=5.0)))
    r = evaluate(p_rate)
    assert r.load is not None and not r.load.saturated
    assert r.output_tokens_per_s == pytest.approx(5.0 * 256, rel=1e-6)
    assert math.isfinite(r.tpot_ms) and r.tpot_ms < evaluate(p_rate.replace(
        serving=ServingConfig())).tpot_ms


def test_sweep_rows_use_the_speculative_step():
    plain = sweep(_proj())
    fast = sweep(_proj(spec=SpeculativeConfig(method="eagle3", num_tokens=3, acceptance=0.8)))
    i = int(np.argmin(plain.columns["batch"] + 1000 * (plain.columns["tp"] != 1)))
    j = int(np.argmin(fast.columns["batch"] + 1000 * (fast.columns["tp"] != 1)))
    assert fast.columns["tpot_ms"][j] < 0.7 * plain.columns["tpot_ms"][i]


# ------------------------------------------------------------------ project files
def test_project_file_keeps_the_setting_and_older_files_load(tmp_path):
    import json

    from studio.io.project_file import (
        load_project,
        project_from_json,
        project_to_json,
        save_project,
    )

    spec = SpeculativeConfig(method="draft", num_tokens=4, acceptance_by_position=(0.8, 0.6, 0.45),
                             draft_model="llama-3.2-1b", draft=DRAFT_1B, draft_checkpoint="meta-llama/Llama-3.2-1B")
    p = _proj(model=LLAMA_70B, tp=8, spec=spec)
    path = tmp_path / "plan.json"
    save_project(p, path)
    back = load_project(path)
    assert back.serving.speculative == spec
    assert evaluate(back).tpot_ms == pytest.approx(evaluate(p).tpot_ms)
    old = json.loads(project_to_json(_proj()))
    del old["serving"]["speculative"]
    del old["model"]["mtp_layers"]
    loaded = project_from_json(json.dumps(old), "old file")
    assert loaded.serving.speculative is None and loaded.model.mtp_layers == 0
