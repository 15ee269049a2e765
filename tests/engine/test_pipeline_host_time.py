"""TensorRT-LLM 1.0's pipeline loop (issue 28): exactly pp micro-batches in flight and a blocking
return of each one's sampled tokens, so its per-request host work is not hidden behind the GPU;
the profile of that version range says so, other versions and PP = 1 are unaffected."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from studio.core.layout import Layout
from studio.core.workload import Load, ServingConfig, Workload
from studio.engine import evaluate
from studio.engine.plan.costs import project_costs
from studio.engine.plan.evaluate import constants_for
from studio.engine.runtime import resolve
from studio.engine.runtime.profile import SchedulerCost
from studio.engine.step.iteration import IterationModel
from tests.engine.fixtures import H100_PCIE_ONLY, LLAMA_70B, cluster, project


def test_the_profile_of_the_1_0_line_carries_the_pipeline_host_time_with_its_sources():
    sched = resolve("trtllm", "1.0.0").profile.scheduler
    assert sched.pipeline_per_seq_us == pytest.approx(580 / 64, rel=1e-3)
    src = resolve("trtllm", "1.0.0").profile.source("scheduler.pipeline_per_seq_us")
    assert "_executor_loop_pp" in src and "#3878" in src and "#13957" in src and "#10349" in src
    assert resolve("trtllm", "1.2.0").profile.scheduler.pipeline_per_seq_us == 0.0
    assert resolve("vllm", None).profile.scheduler.pipeline_per_seq_us == 0.0


def test_every_micro_batch_iteration_walks_the_running_requests():
    s = SchedulerCost(0.0, 0.0, 0.0, True, 580.0, pipeline_per_seq_us=9.0)
    assert float(s.pipeline_exposed_us(100, 4)) == pytest.approx(100 * 4 * 9.0)
    assert np.allclose(s.pipeline_exposed_us(np.array([10.0, 20.0]), np.array([2.0, 8.0])), [180.0, 1440.0])


def _plan(version: str, layout: Layout):
    p = project(cluster(H100_PCIE_ONLY), LLAMA_70B, layout,
                Workload(isl=1000, osl=2000, max_batch=256, load=Load(mode="offline", num_requests=2000)),
                ServingConfig(runtime="trtllm", runtime_version=version, weight_dtype="fp8", kv_dtype="fp8"))
    return p, layout



def test_pipeline_rounds_pay_the_host_time_only_on_the_1_0_line_and_only_with_pp():
    pp4 = Layout(tp=2, pp=4, micro_batches=4)
    old, new = evaluate(*_plan("1.0.0", pp4)), evaluate(*_plan("1.2.0", pp4))
    assert old.output_tokens_per_s < new.output_tokens_per_s
    host = next(t for t in old.explanations["engine"].terms if t.name == "pipeline host time")
    assert host.value > 0 and "not hidden by the pipeline loop" in host.note
    host_new = next(t for t in new.explanations["engine"].terms if t.name == "pipeline host time")
    assert host_new.value == 0.0 and "hides" in host_new.note
    # the same engine without PP: nothing added (a dense model, so no other 1.0 rule applies)
    tp8 = Layout(tp=8)
    a, b = evaluate(*_plan("1.0.0", tp8)), evaluate(*_plan("1.2.0", tp8))
    assert a.output_tokens_per_s == pytest.approx(b.output_tokens_per_s)
    assert next(t for t in a.explanations["engine"].terms if t.name == "pipeline host time").value == 0.0


def test_the_round_grows_by_exactly_the_exposed_host_time():
    pp4 = Layout(tp=2, pp=4, micro_batches=4)
    p, lay = _plan("1.0.0", pp4)
    res = evaluate(p, lay)
    placement = res.layout.placement
    from studio.engine.fabric.topology import topology_of

    c = constants_for(None)
    lc = project_costs(p, res.layout, placement, topology_of(p.cluster), c)
    assert lc.runtime is not None
    quiet = lc.replace(runtime=lc.runtime.replace(
        scheduler=dataclasses.replace(lc.runtime.scheduler, pipeline_per_seq_us=0.0)))
    d = np.array([200.0])
    with_host = IterationModel(lc, c).round_ms(0.0, d, 2000.0, 1000.0, 4.0)
    without = IterationModel(quiet, c).round_ms(0.0, d, 2000.0, 1000.0, 4.0)
    assert float(with_host[0] - without[0]) == pytest.approx(200 * 4 * 580 / 64 / 1e3, rel=1e-3)
