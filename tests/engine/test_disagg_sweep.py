"""Disaggregated candidates of the sweep: the targets filter them, the ranking and the full plan agree."""

from __future__ import annotations

import pytest

from studio.core.workload import Workload
from studio.engine.disagg.sweep import sweep_disaggregated, worker_shapes
from tests.engine.fixtures import H200, HGX_H200, LLAMA_8B, MIXTRAL, cluster, llama, project

WL = Workload(isl=2048, osl=256, max_batch=128, ttft_ms=1000, tpot_ms=30)


@pytest.fixture(scope="module")
def swept():
    p = project(cluster(HGX_H200, 1, H200), LLAMA_8B, workload=WL)
    return sweep_disaggregated(p)


def test_rows_meeting_the_targets_come_first_best_throughput_first(swept):
    rows = swept.rows
    meets = [r.meets_targets for r in rows]
    assert any(meets) and not all(meets)
    first_miss = meets.index(False)
    assert all(meets[:first_miss]) and not any(meets[first_miss:])
    for r in rows[:first_miss]:
        assert r.ttft_ms <= 1000 and r.tpot_ms <= 30
    per_gpu = [r.tokens_per_s_per_gpu for r in rows[:first_miss]]
    assert per_gpu == sorted(per_gpu, reverse=True)
    assert swept.best is rows[0]


def test_every_split_fits_the_gpus_and_a_row_says_why(swept):
    for r in swept.rows:
        assert r.gpus == r.mode.prefill.gpus + r.mode.decode.gpus <= 8
    best = swept.best
    assert best.why().startswith(f"disaggregated {best.label}: TPOT")
    assert "KV transfer" in best.why()


def test_the_best_rows_full_plan_matches_its_sweep_figures(swept):
    best = swept.best
    res = swept.result(best)
    assert res.label == best.label
    assert res.tpot_ms == pytest.approx(best.tpot_ms, rel=1e-6)
    assert res.ttft_ms == pytest.approx(best.ttft_ms, rel=1e-6)
    assert res.output_tokens_per_s_per_gpu == pytest.approx(best.tokens_per_s_per_gpu, rel=1e-6)


def test_a_tighter_tpot_target_never_raises_the_best_throughput(swept):
    p = swept.project
    tight = sweep_disaggregated(p, tpot_ms=10)
    assert tight.best is None or tight.best.tokens_per_s_per_gpu <= swept.best.tokens_per_s_per_gpu
    assert all(r.tpot_ms <= 10 for r in tight.rows if r.meets_targets)


def test_workers_tried_split_the_attention_heads():
    heads40 = llama(5120, 48, 40, 8, 16384, "forty-heads")
    shapes = worker_shapes(project(cluster(HGX_H200, 2, H200), heads40), None)
    assert {w.tp for w in shapes} == {1, 2, 4, 8}
    wide = worker_shapes(project(cluster(HGX_H200.replace(gpus_per_node=16), 1, H200), heads40), None)
    assert 16 not in {w.tp for w in wide} and 8 in {w.tp for w in wide}


def test_moe_workers_try_expert_parallel_and_dense_ones_do_not():
    dense = worker_shapes(project(cluster(HGX_H200, 1, H200), LLAMA_8B), None)
    moe = worker_shapes(project(cluster(HGX_H200, 1, H200), MIXTRAL), None)
    assert {w.ep for w in dense} == {1}
    assert any(w.ep == w.tp > 1 for w in moe)
    assert all(w.tp * w.pp <= 8 for w in moe)


@pytest.mark.parametrize("load", [None, "rate"])
def test_rows_solved_together_equal_each_pair_served_alone(load):
    """The array solve of every (prefill pool, decode pool, batch) gives serve()'s figures row by row."""
    from studio.engine.disagg import sweep as dsw

    wl = WL
    if load == "rate":
        wl = WL.replace(load=WL.load.model_copy(update={"mode": "rate", "rate_per_s": 20.0}))
    p = project(cluster(HGX_H200, 1, H200), LLAMA_8B, workload=wl)
    sw = sweep_disaggregated(p)
    assert len(sw.rows) > 50
    from studio.engine.disagg.evaluate import place_pools
    from studio.engine.fabric.topology import topology_of
    from studio.engine.plan.evaluate import constants_for, resolve_calibration

    cal = resolve_calibration(p, None)
    c = constants_for(cal, None)
    topo = topology_of(p.cluster, cal.link_fits if cal else None)
    cache: dict = {}
    for r in sw.rows[::7]:
        ppl, dpl = place_pools(p, r.mode)
        pw = dsw._worker(p, topo, c, cache, {}, "prefill", r.mode.prefill, ppl)
        dw = dsw._worker(p, topo, c, cache, {}, "decode", r.mode.decode, dpl)
        alone = dsw._row(p, r.mode, pw.curve, dw.curve.capped(r.batch), _Transfer(r), 0.0,
                         r.gpus, 1000, 30)
        assert alone.ttft_ms == pytest.approx(r.ttft_ms, rel=1e-12)
        assert alone.tpot_ms == pytest.approx(r.tpot_ms, rel=1e-12)
        assert alone.tokens_per_s == pytest.approx(r.tokens_per_s, rel=1e-12)
        assert (alone.limited_by, alone.saturated, alone.meets_targets) == (
            r.limited_by, r.saturated, r.meets_targets)


class _Transfer:
    def __init__(self, row):
        self.time_ms = row.transfer_ms
        self.bottleneck_name = row.transfer_over
