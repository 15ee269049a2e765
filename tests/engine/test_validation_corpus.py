"""The validation corpus (benchmarks/validation): every public measurement can be costed, the bundled
constants stay close to it, and the figures follow the definitions the sources used."""

from __future__ import annotations

import math
import statistics

import pytest

from benchmarks.validation.corpus import load_points, project_for
from studio.core.workload import Load
from studio.engine import evaluate
from studio.engine.serving.under_load import simulate_plan
from tests.engine.corpus_predictions import plain_predictions

POINTS = load_points()


@pytest.fixture(scope="module")
def predictions() -> dict[str, float]:
    """The engine's figure for every point (:func:`predict`, one evaluation, or a simulation above
    saturation, per point), shared by the tests below that read it (and, through
    :func:`plain_predictions`, with tests/engine/test_features_off.py)."""
    costed = plain_predictions()
    refused = {p.id: c.figure for p, c in zip(POINTS, costed, strict=True) if isinstance(c.figure, str)}
    assert not refused, refused
    return {p.id: c.figure for p, c in zip(POINTS, costed, strict=True)}


def test_corpus_records_name_their_source_and_layout():
    assert len(POINTS) >= 216
    for p in POINTS:
        r = p.record
        assert r["source"] and r["tier"] in ("A", "B", "C"), p.id
        assert r["tp"] * r["pp"] * r.get("dp", 1) <= r["gpus"] or r.get("ep", 1) > 1, p.id
        assert p.measured > 0, p.id


def test_every_point_is_costed_and_fits(predictions):
    """Each point's plan (``evaluate`` of :func:`project_for`'s project and layout, the one
    :func:`predict` read its figure from) fits, and the figure is positive."""
    for p, c in zip(POINTS, plain_predictions(), strict=True):
        assert c.fits, f"{p.id}: {c.fit_reason}"
        assert predictions[p.id] > 0, p.id


def test_bundled_constants_stay_close_to_the_corpus(predictions):
    """A regression guard on the fitted constants (held-out figures are in docs/calibration.md)."""
    errs = [abs(predictions[p.id] / p.measured - 1) for p in POINTS]
    within = [e <= 1.0 and predictions[p.id] >= p.measured / 2 for p, e in zip(POINTS, errs, strict=True)]
    assert statistics.median(errs) <= 0.15
    assert sum(within) / len(within) >= 0.93


def test_online_points_follow_the_request_rate():
    """TTFT and TPOT of the Triton runs grow with the request rate, as the measurements do."""
    p = next(p for p in POINTS if p.id == "trtllm014-online-h100-sxm-llama-3.1-70b-tp4-467-256-qps4-tpot")
    proj, lay = project_for(p)
    figures = []
    for rate in (1.0, 4.0, 8.0, 12.0):
        wl = proj.workload.replace(load=Load(mode="rate", rate_per_s=rate, num_requests=500))
        r = evaluate(proj.replace(workload=wl), lay)
        figures.append((r.ttft_ms, r.tpot_ms, r.output_tokens_per_s))
    ttft, tpot, tps = zip(*figures, strict=True)
    assert list(ttft) == sorted(ttft) and list(tpot) == sorted(tpot)
    # below saturation the throughput is the offered load: rate × output tokens
    for rate, t in zip((1.0, 4.0, 8.0, 12.0), tps, strict=True):
        assert t == pytest.approx(rate * proj.workload.osl, rel=1e-6)


def test_offline_simulation_agrees_with_the_closed_form():
    """trtllm-bench style runs: the simulated throughput (ramp-up, waves and tail of a finite run)
    is below the steady state the plan shows, and within 20% of it."""
    for pid in ("trtllm017-h100-sxm-llama-3.1-8b-tp1-1000-1000-tput",
                "trtllm10-h200-sxm-llama-3.3-70b-tp1pp1-128-128-tput"):
        p = next(x for x in POINTS if x.id == pid)
        proj, lay = project_for(p)
        steady = evaluate(proj, lay).output_tokens_per_s
        sim = simulate_plan(proj, lay).output_tokens_per_s
        assert math.isfinite(sim) and sim > 0
        assert sim <= steady * 1.02, pid
        assert sim == pytest.approx(steady, rel=0.20), pid


def test_offline_throughput_is_the_whole_finite_run(predictions):
    """trtllm-bench reports output tokens over the whole run: 1,500 requests over 8 attention-DP
    ranks of 320 sequences are one partial wave, well below the steady state of full ranks, and the
    corpus predicts the run the source measured."""
    p = next(x for x in POINTS if x.id == "trtllm10-b200-qwen3-235b-a22b-tp8pp1-1000-2000-tput")
    proj, lay = project_for(p)
    steady = evaluate(proj, lay).output_tokens_per_s
    run = simulate_plan(proj, lay).output_tokens_per_s
    assert predictions[p.id] == pytest.approx(run, rel=1e-9)
    assert run < 0.8 * steady
