"""Sweep: enumeration, recommendation and its reasons, Pareto front, cancel, and agreement with evaluate."""

from __future__ import annotations

import numpy as np
import pytest

from studio.core.errors import StudioError
from studio.core.workload import Workload
from studio.engine import sweep
from studio.engine.search.sweep import COLUMNS
from tests.engine.fixtures import (
    DGX_H100,
    FP8,
    L40S,
    L40S_BOX,
    LLAMA_70B,
    LLAMA_405B,
    MIXTRAL,
    cluster,
    project,
)


@pytest.fixture(scope="module")
def s405():
    return sweep(project(cluster(DGX_H100, 2), LLAMA_405B))


def test_405b_on_two_dgx_recommends_tp8_pp2_and_explains_tp16(s405):
    r = s405
    assert r.recommended is not None
    lay = r.layout(r.recommended)
    assert (lay.tp, lay.pp, lay.dp) == (8, 2, 1)
    text = " ".join(r.reasons)
    assert "TP16×PP1" in text
    tp16 = [x for x in r.reasons if x.startswith("TP16×PP1")][0]
    assert "ib-ndr" in tp16 and "all-reduce" in tp16


def test_columns_shapes_and_every_layout_uses_all_gpus(s405):
    r = s405
    assert set(COLUMNS) <= set(r.columns)
    for k in COLUMNS:
        assert len(r.columns[k]) == r.candidates
    assert len(r.reasons_unfit) == r.candidates
    prod = r.columns["tp"] * r.columns["pp"] * r.columns["dp"]
    assert (prod == 16).all()
    assert not r.columns["fits"][(r.columns["tp"] == 8) & (r.columns["pp"] == 1)].any()
    unfit = np.flatnonzero(~r.columns["fits"])
    assert all(r.reasons_unfit[i] for i in unfit)


def test_pareto_non_dominated(s405):
    c = s405.columns
    fit = np.flatnonzero(c["fits"])
    for i in s405.pareto:
        assert c["fits"][i]
        dom = (c["tokens_per_s_per_gpu"][fit] >= c["tokens_per_s_per_gpu"][i]) & (
            c["tokens_per_s_per_user"][fit] >= c["tokens_per_s_per_user"][i]) & (
            (c["tokens_per_s_per_gpu"][fit] > c["tokens_per_s_per_gpu"][i])
            | (c["tokens_per_s_per_user"][fit] > c["tokens_per_s_per_user"][i]))
        assert not dom.any()


def test_sweep_row_agrees_with_full_evaluate(s405):
    i = s405.recommended
    plan = s405.plan(i)
    assert plan.tpot_ms == pytest.approx(s405.columns["tpot_ms"][i], rel=1e-9)
    assert plan.ttft_ms == pytest.approx(s405.columns["ttft_ms"][i], rel=1e-9)
    assert plan.output_tokens_per_s == pytest.approx(s405.columns["tokens_per_s"][i], rel=1e-9)
    assert plan.batch == s405.columns["batch"][i]


def test_l40s_pcie_tp8_loses_to_layouts_off_pcie():
    r = sweep(project(cluster(L40S_BOX, 1, L40S), LLAMA_70B, serving=FP8))
    c = r.columns
    best = r.recommended
    assert best is not None and c["tp"][best] < 8
    tp8 = np.flatnonzero((c["tp"] == 8) & c["fits"])
    assert c["tokens_per_s"][tp8].max() < 0.8 * c["tokens_per_s"][best]
    plan = r.plan(int(tp8[np.argmax(c["tokens_per_s"][tp8])]))
    assert "TP_OVER_SLOW_LINK" in {w.code for w in plan.warnings}
    assert "pcie" in " ".join(r.reasons)


def test_targets_filter_and_objectives():
    p = project(cluster(DGX_H100, 1), LLAMA_70B)
    loose = sweep(p)
    tight = sweep(p, tpot_ms=20.0)
    c = tight.columns
    assert (c["tpot_ms"][c["meets_targets"]] <= 20.0).all()
    assert c["meets_targets"].sum() < loose.columns["meets_targets"].sum()
    cheap = sweep(p, objective="cost")
    assert cheap.columns["usd_per_million"][cheap.order[0]] <= cheap.columns["usd_per_million"][
        cheap.columns["fits"]].min() + 1e-9
    with pytest.raises(StudioError, match="objective"):
        sweep(p, objective="speed")


def test_moe_sweep_has_ep_and_cancel_works():
    p = project(cluster(DGX_H100, 1), MIXTRAL, workload=Workload(max_batch=64))
    r = sweep(p, batches=[8, 64])
    assert set(np.unique(r.columns["ep"])) > {1}
    calls = []
    stopped = sweep(p, progress=lambda f: calls.append(f) or len(calls) < 3)
    full = sweep(p)
    assert stopped.cancelled and not full.cancelled and stopped.candidates < full.candidates
    with pytest.raises(StudioError, match="positive"):
        sweep(p, batches=[0])
