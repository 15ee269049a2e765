"""How an open-loop request meets the iterations before its first token (closed form,
``studio.engine.serving.load.first_token_ms``), checked against the rules it states and against the
request-by-request simulation, which schedules the same way without any of the closed form's
averaging:

* an idle engine starts a request at once and alone;
* a busy one finishes the iteration in progress first, and a request lands in a long iteration
  more often than in a short one (length-biased, not half the mean iteration);
* the requests that arrived during the same iteration are admitted with it and share its first
  iteration's prompt tokens.
"""

from __future__ import annotations

import numpy as np
import pytest

from studio.core.layout import Layout
from studio.core.workload import Load, Workload
from studio.engine import evaluate
from studio.engine.serving.load import Iterations, first_token_ms, open_loop
from studio.engine.serving.under_load import serving_setup, simulate_plan

from .fixtures import FP8, LLAMA_8B, LLAMA_70B, cluster, project


class _Linear:
    """An iteration model whose iteration takes ``a`` ms + ``b`` ms per prompt token + ``c`` per
    decoding sequence, so every term of the rule can be computed by hand."""

    def __init__(self, a: float = 5.0, b: float = 0.01, c: float = 0.02) -> None:
        self.a, self.b, self.c = a, b, c

    def round_ms(self, x, d, ctx, prompt, m=1.0):
        return self.a + self.b * np.asarray(x, dtype=float) + self.c * np.asarray(d, dtype=float)


def _its(share: float, prompt: float = 15.0, plain: float = 5.0, d: float = 20.0) -> Iterations:
    return Iterations(mean=share * prompt + (1 - share) * plain, prompt=prompt, plain=plain, share=share,
                      decode_seqs=d, room=8000.0, chunks=1.0)


def test_an_idle_engine_starts_the_request_at_once_and_alone():
    im = _Linear()
    # a vanishing rate: nobody else is in the system
    ttft = first_token_ms(im, _its(0.01), 1e-9, 500, 600, np.array([1.0]), 8192, 100, poisson=True)
    assert ttft == pytest.approx(im.a + im.b * 500, rel=1e-6)  # the prompt alone, no decodes, no wait


def test_a_busy_engine_makes_the_request_wait_for_the_length_biased_iteration():
    im = _Linear()
    it = _its(0.25)  # one iteration in four carries a prompt three times as long as a plain one
    lam = 1e-4  # per ms: few others arrive with it
    ttft = first_token_ms(im, it, lam, 500, 600, np.array([1.0]), 8192, 1e6, poisson=True)  # long requests: busy
    landed = (0.25 * 15 ** 2 + 0.75 * 5 ** 2) / it.mean
    assert landed > it.mean  # the inspection paradox
    own = im.a + im.b * (500 + lam * landed * 500) + im.c * it.decode_seqs
    assert ttft == pytest.approx(0.5 * landed + own, rel=1e-6)
    assert 0.5 * landed > 0.5 * it.mean


def test_prompts_that_arrive_during_the_same_iteration_share_its_first_iteration():
    im = _Linear()
    it = _its(1.0, prompt=20.0, plain=20.0)
    slow, busy = (first_token_ms(im, it, lam, 500, 600, np.array([1.0]), 8192, 1e6, poisson=True)
                  for lam in (1e-3, 5e-2))
    # 0.02 and 1 other request on average in a 20 ms iteration: 0.98 more prompts of 500 tokens
    assert busy - slow == pytest.approx(im.b * 500 * (5e-2 - 1e-3) * 20.0, rel=1e-6)
    # but never beyond the token budget left beside the decode tokens
    capped = first_token_ms(im, it.replace(room=600.0), 5e-2, 500, 600,
                            np.array([1.0]), 8192, 1e6, poisson=True)
    assert capped == pytest.approx(0.5 * 20.0 + im.a + im.b * 600 + im.c * it.decode_seqs, rel=1e-6)


def test_idle_share_follows_the_requests_in_the_system():
    im = _Linear()
    it = _its(0.5)
    short, long_ = (first_token_ms(im, it, 2e-3, 500, 600, np.array([1.0]), 8192, o1, poisson=True)
                    for o1 in (1.0, 100.0))
    # the same rate: short requests leave the engine idle more often, so they wait less
    assert short < long_
    # evenly spaced arrivals find the engine idle whenever the previous request has ended
    even = first_token_ms(im, it, 2e-3, 500, 600, np.array([1.0]), 8192, 1.0, poisson=False)
    assert even == pytest.approx(im.a + im.b * 500, rel=1e-6)


@pytest.mark.parametrize(("model", "tp", "isl", "osl"), [(LLAMA_8B, 1, 467, 16), (LLAMA_8B, 1, 202, 214),
                                                         (LLAMA_70B, 4, 467, 256)])
@pytest.mark.parametrize("fraction", [0.05, 0.3, 0.6])
def test_closed_form_ttft_follows_the_request_simulation_under_poisson_load(model, tp, isl, osl, fraction):
    p = project(cluster(), model, Layout(tp=tp, dp=8 // tp), Workload(isl=isl, osl=osl, max_batch=256), FP8)
    sat = evaluate(p).load.saturation_rate_per_s
    at = p.replace(workload=p.workload.replace(load=Load(mode="rate", rate_per_s=fraction * sat, num_requests=3000)))
    plan, sim = evaluate(at), simulate_plan(at)
    # the closed form averages what the simulation does request by request: within 10 % (before the
    # three rules it took half the mean iteration as the wait and one prompt per iteration: +10 % at
    # 5 % of saturation, −28 % at 60 % for the short-output prompt-heavy run, −18 % for 70B)
    assert plan.ttft_ms == pytest.approx(sim.ttft.mean, rel=0.10)


def test_open_loop_at_a_vanishing_rate_is_the_prompt_alone():
    p = project(cluster(), LLAMA_8B, Layout(tp=1, dp=8), Workload(isl=1024, osl=128, max_batch=256), FP8)
    s = serving_setup(p)
    alone = float(s.model.round_ms(1024.0, 0.0, 1024 + 64, 1024.0)[0])
    st, _ = open_loop(s.model, 1e-6, 1.0, 1024, 128, s.budget, s.running_cap)
    assert float(st.ttft_ms[0]) == pytest.approx(alone, rel=1e-6)
    # the plan adds the front end's time on top, and nothing else
    plan = evaluate(p.replace(workload=p.workload.replace(load=Load(mode="rate", rate_per_s=1e-6))))
    assert plan.ttft_ms - alone == pytest.approx(s.model.c.request_overhead_ms, rel=1e-6)


def test_the_plan_explains_how_a_request_under_a_rate_meets_the_iterations():
    p = project(cluster(), LLAMA_8B, Layout(tp=1, dp=8), Workload(isl=467, osl=16, max_batch=256), FP8)
    sat = evaluate(p).load.saturation_rate_per_s
    light, busy = (evaluate(p.replace(workload=p.workload.replace(load=Load(mode="rate", rate_per_s=f * sat))))
                   for f in (0.02, 0.6))
    # more load: fewer arrivals find the engine idle, they wait longer and share their first iteration more
    assert 1.0 >= light.load.arrival_idle_share > busy.load.arrival_idle_share >= 0.0
    assert light.load.arrival_wait_ms < busy.load.arrival_wait_ms
    assert 1.0 <= light.load.arrival_prompts < busy.load.arrival_prompts
    terms = {t.name: t.value for t in busy.explanations["latency.ttft"].terms}
    assert terms["arrivals finding the engine idle"] == pytest.approx(busy.load.arrival_idle_share)
    assert terms["wait for the iteration in progress"] == pytest.approx(busy.load.arrival_wait_ms)
    assert terms["prompts in its first iteration"] == pytest.approx(busy.load.arrival_prompts)
    # a closed loop has no arrivals at random times: no such terms
    users = evaluate(p.replace(workload=p.workload.replace(load=Load(mode="concurrency", concurrency=64))))
    assert users.load.arrival_idle_share is None
    assert "arrivals finding the engine idle" not in {t.name for t in users.explanations["latency.ttft"].terms}
