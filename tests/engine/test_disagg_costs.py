"""A disaggregated pool is costed as an aggregated layout is (one project → costs builder):
speculative decoding and the token budget reach its workers."""

from __future__ import annotations

import pytest

from studio.core.layout import Layout
from studio.core.serving_mode import parse_pools
from studio.core.workload import ServingConfig, SpeculativeConfig, Workload
from studio.engine import evaluate
from studio.engine.disagg.evaluate import evaluate_disaggregated
from studio.engine.step.speculative import acceptance
from tests.engine.fixtures import H200, HGX_H200, LLAMA_70B, cluster, project

WL = Workload(isl=2048, osl=256, max_batch=256)
NGRAM = SpeculativeConfig(method="ngram")


def _project(spec: SpeculativeConfig | None = None, budget: int | None = None):
    sv = ServingConfig(speculative=spec, max_num_batched_tokens=budget)
    return project(cluster(HGX_H200, 2, H200), LLAMA_70B, Layout(tp=8, dp=2), WL, sv).replace(
        serving_mode=parse_pools("1P:tp8,1D:tp8")
    )


def test_disaggregated_tpot_follows_speculative_decoding_as_the_aggregated_plan_does():
    plain, spec = _project(), _project(NGRAM)
    e = acceptance(NGRAM).tokens_per_step
    assert e > 1.0
    agg_plain, agg_spec = evaluate(plain).tpot_ms, evaluate(spec).tpot_ms
    dis_plain, dis_spec = evaluate_disaggregated(plain), evaluate_disaggregated(spec)
    assert agg_spec < agg_plain
    assert dis_spec.tpot_ms < dis_plain.tpot_ms
    # a decode iteration yields E tokens per sequence: TPOT is the iteration / E
    assert dis_spec.decode.iteration_ms / dis_spec.tpot_ms == pytest.approx(e)
    assert dis_plain.decode.iteration_ms == pytest.approx(dis_plain.tpot_ms)


def test_the_token_budget_caps_the_decoding_sequences_and_sizes_prefill_batches():
    wide, narrow = evaluate_disaggregated(_project(NGRAM)), evaluate_disaggregated(_project(NGRAM, budget=512))
    verify = NGRAM.num_tokens + 1  # each decoding sequence takes k + 1 tokens of the budget
    assert wide.decode.max_running > 512 // verify
    assert narrow.decode.max_running == 512 // verify
    assert wide.prefill.batch > 1  # whole prompts share an iteration ...
    assert narrow.prefill.batch == 1  # ... a 2,048-token prompt runs alone, in chunks of 512
    assert narrow.prefill.iteration_ms < wide.prefill.iteration_ms
