"""Hypothesis property tests of engine invariants."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from studio.core.layout import Layout
from studio.core.workload import Workload
from studio.engine import evaluate
from studio.engine.search.sweep import pareto_front
from studio.engine.step.step_times import bubble_fraction
from tests.engine.fixtures import DGX_H100, LLAMA_70B, MIXTRAL, cluster, project

C8 = cluster(DGX_H100, 1)
C16 = cluster(DGX_H100, 2)


@given(st.integers(1, 64), st.integers(1, 512))
def test_bubble_in_unit_interval(p, m):
    b = bubble_fraction(p, m)
    assert 0.0 <= b < 1.0


@settings(max_examples=25, deadline=None)
@given(tp=st.sampled_from([1, 2, 4, 8]), pp=st.sampled_from([1, 2, 4, 8]), isl=st.integers(1, 8000),
       osl=st.integers(1, 2000), batch=st.integers(1, 64), moe=st.booleans())
def test_memory_terms_add_up(tp, pp, isl, osl, batch, moe):
    if tp * pp > 8:
        pp = 8 // tp
    model = MIXTRAL if moe else LLAMA_70B
    r = evaluate(project(C8, model, Layout(tp=tp, pp=pp, dp=8 // (tp * pp)), workload=Workload(isl=isl, osl=osl, batch=batch)))
    for m in r.memory:
        assert m.total == pytest.approx(m.weights + m.kv_cache + m.activations + m.overhead)
        assert m.weights == pytest.approx(sum(m.weights_by_module.values()))
        assert min(m.weights, m.kv_cache, m.activations, m.overhead) >= 0
    assert r.ttft_ms > 0 and r.tpot_ms > 0 and 0 <= r.bubble_fraction < 1


@settings(max_examples=20, deadline=None)
@given(tp=st.sampled_from([1, 2, 4, 8]), pp=st.sampled_from([1, 2, 4]), grow=st.sampled_from(["tp", "pp"]))
def test_more_gpus_never_raise_per_gpu_weights(tp, pp, grow):
    small = evaluate(project(C8, LLAMA_70B, Layout(tp=tp, pp=pp, dp=8 // (tp * pp)) if tp * pp <= 8 else Layout(tp=8)))
    big_layout = Layout(tp=tp * 2, pp=pp) if grow == "tp" else Layout(tp=tp, pp=pp * 2)
    if big_layout.world_size > 16:
        return
    big_layout = big_layout.model_copy(update={"dp": 16 // big_layout.world_size})
    big = evaluate(project(C16, LLAMA_70B, big_layout))
    if tp * pp <= 8:
        assert max(m.weights for m in big.memory) <= max(m.weights for m in small.memory) + 1e-6


@given(st.lists(st.tuples(st.floats(0, 1e4), st.floats(0, 1e3), st.booleans()), min_size=1, max_size=60))
def test_pareto_front_non_dominated(rows):
    import numpy as np

    g = np.array([r[0] for r in rows])
    u = np.array([r[1] for r in rows])
    f = np.array([r[2] for r in rows])
    front = pareto_front(g, u, f)
    for i in front:
        assert f[i]
        better = f & (g >= g[i]) & (u >= u[i]) & ((g > g[i]) | (u > u[i]))
        assert not better.any()
    for j in np.flatnonzero(f):  # every fitting row off the front is dominated or tied by one on it
        if j not in front:
            assert any(g[i] >= g[j] and u[i] >= u[j] for i in front)
