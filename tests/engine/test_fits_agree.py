"""``plan`` and ``sweep`` agree on "fits" for every row (one definition: studio.engine.plan.fits).

Random clusters, models, lengths and batches: every row the sweep costs is evaluated as a plan at
its own batch, and the two verdicts must be the same — also where memory fits but the heads do not
split over TP, or a sequence is longer than the model's context window (the case that split them).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from studio.core.errors import StudioError
from studio.core.workload import Workload
from studio.engine import sweep
from tests.engine.fixtures import (
    DGX_H100,
    L40S,
    L40S_BOX,
    LLAMA_8B,
    LLAMA_70B,
    MHA_7B,
    cluster,
    llama,
    project,
)
from tests.property_budget import examples

#: 12 attention heads: TP = 8 does not split them, so the sweep lists rows whose heads do not split.
SMALL_12_HEADS = llama(1536, 16, 12, 4, 4096, "small-12-heads", ctx=32768)
CLUSTERS = (cluster(DGX_H100, 1), cluster(L40S_BOX, 1, L40S))


def test_the_case_that_split_them_now_agrees():
    """Llama-3.1-8B, isl 131,072 + osl 1,000 (over its 131,072-token window): neither fits."""
    p = project(CLUSTERS[0], LLAMA_8B, workload=Workload(isl=131072, osl=1000, batch=1))
    res = sweep(p, batches=[1], cp_sizes=[1])
    rows = [i for i in range(res.candidates) if int(res.columns["tp"][i]) == 8]
    assert rows and not any(bool(res.columns["fits"][i]) for i in rows)
    plan = res.plan(rows[0], details=False)
    assert not plan.fits and "context window" in plan.fit_reason


@settings(max_examples=examples(200), deadline=None)
@given(
    cl=st.sampled_from(CLUSTERS),
    model=st.sampled_from([LLAMA_8B, LLAMA_70B, MHA_7B, SMALL_12_HEADS]),
    isl=st.integers(1, 150_000),
    osl=st.integers(1, 4_000),
    batch=st.integers(1, 512),
)
def test_plan_and_sweep_agree_on_fits_for_every_row(cl, model, isl, osl, batch):
    p = project(cl, model, workload=Workload(isl=isl, osl=osl, batch=batch, max_batch=512))
    res = sweep(p, batches=[batch], cp_sizes=[1])
    for i in range(res.candidates):
        row_fits = bool(res.columns["fits"][i])
        try:
            plan_fits = res.plan(i, details=False).fits
        except StudioError:  # a layout the sweep could not cost (GPUs of a group not linked)
            plan_fits = False
        assert plan_fits == row_fits, (res.label(i), isl, osl, batch)
