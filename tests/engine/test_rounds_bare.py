"""``IterationModel.rounds_under(..., bare=True)``: the unpadded GPU round it adds first is, value for
value, :meth:`round_ms` of the same layout without its engine (the constants making the per-step
remainder the same), although both are costed in one call with the padded rows; and the engine's
rounds that follow are those of a call without ``bare``. The engine explanation reads all three."""

from __future__ import annotations

import numpy as np
import pytest

from studio.core.layout import Layout
from studio.core.workload import ServingConfig, Workload
from studio.engine import evaluate
from studio.engine.fabric.topology import topology_of
from studio.engine.plan.costs import project_costs
from studio.engine.plan.evaluate import constants_for
from studio.engine.runtime.profile import SchedulerCost
from studio.engine.runtime.step import RuntimeStep
from studio.engine.step.iteration import IterationModel, step_overhead_us
from tests.engine.fixtures import LLAMA_70B, MIXTRAL, cluster, project


@pytest.mark.parametrize(("model", "layout", "runtime", "batches"), [
    (LLAMA_70B, Layout(tp=4, pp=2, micro_batches=2), "vllm", [1.0, 3.0, 37.0, 200.0]),
    (MIXTRAL, Layout(tp=2, dp=4, ep=4), "sglang", [5.0, 64.0]),
    (LLAMA_70B, Layout(tp=8), "trtllm", [13.0]),
])
def test_the_bare_round_is_the_round_without_the_engine(model, layout, runtime, batches):
    p = project(cluster(), model, layout, Workload(isl=1000, osl=300),
                ServingConfig(runtime=runtime, weight_dtype="fp8", kv_dtype="fp8"))
    placed = evaluate(p, layout, details=False).layout
    c = constants_for(None)
    lc = project_costs(p, placed, placed.placement, topology_of(p.cluster), c)
    rt = lc.runtime
    assert rt is not None
    same = step_overhead_us(lc, c)
    c = c.with_overrides({"decode_step_overhead_us": same, "decode_step_overhead_sync_us": same})
    quiet = RuntimeStep(scheduler=SchedulerCost(0.0, 0.0, 0.0, True, 0.0), graph_sizes=rt.graph_sizes,
                        padding=rt.padding)
    d = np.array(batches)
    m = float(layout.micro_batches)
    bare, padded, full = IterationModel(lc, c).rounds_under((quiet, rt), 0.0, d, 1150.0, 1000.0, m, bare=True)
    alone = IterationModel(lc.replace(runtime=None), c).round_ms(0.0, d, 1150.0, 1000.0, m)
    np.testing.assert_allclose(bare, alone, rtol=1e-12, atol=0.0)
    before = IterationModel(lc, c).rounds_under((quiet, rt), 0.0, d, 1150.0, 1000.0, m)
    np.testing.assert_array_equal(padded, before[0])
    np.testing.assert_array_equal(full, before[1])
    # padding to a captured size never makes the GPU step shorter, and the host time adds
    assert (padded >= bare - 1e-12).all() and (full >= padded).all()
