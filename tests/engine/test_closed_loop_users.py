"""Issue 34 case 2: a closed loop is right at every user count. One user's TTFT is the unloaded
TTFT (the plan's own batch of one gives the same as one user of the load), one user saturates at
one request per end-to-end time, and from 1 to 512 users TTFT and throughput never fall while the
users grow (more users only add work; throughput flattens at the running cap)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from property_budget import examples

from studio.engine import evaluate
from studio.engine.step.constants import default_constants
from studio.io.project_file import load_project

EXAMPLE = Path(__file__).resolve().parents[2] / "presets" / "examples" / "dgx-h100-2node-llama-405b.json"


@pytest.fixture(scope="module")
def project():
    return load_project(EXAMPLE)


def _users(project, n: int):
    wl = project.workload
    return evaluate(project.replace(workload=wl.replace(batch="auto", load=wl.load.replace(
        mode="concurrency", concurrency=n))), details=False)


def _batch(project, n: int):
    wl = project.workload
    return evaluate(project.replace(workload=wl.replace(batch=n, load=wl.load.replace(
        mode="concurrency", concurrency=None))), details=False)


def test_one_user_is_the_unloaded_ttft_and_saturates_at_one_request_per_request_time(project):
    one, batch_one, sixteen = _users(project, 1), _batch(project, 1), _batch(project, 16)
    front = default_constants().request_overhead_ms  # the served request's front end, under a load only
    assert one.ttft_ms == pytest.approx(batch_one.ttft_ms + front, rel=1e-9)
    assert batch_one.ttft_ms <= sixteen.ttft_ms  # a lone user waits for nobody
    assert one.layout.replicas == 1
    for r in (one, batch_one):
        # one request per end-to-end time (the front end's few ms of a served request aside)
        assert r.load.saturation_rate_per_s == pytest.approx(1e3 / r.request_latency_ms, rel=1e-3)
        assert r.load.saturation_rate_per_s == pytest.approx(r.load.request_rate_per_s, rel=1e-9)
        assert not r.load.saturated and r.status.ok


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(st.integers(1, 512), min_size=2, max_size=2, unique=True))
def test_more_users_never_lower_ttft_or_throughput(project, pair):
    few, many = sorted(pair)
    a, b = _users(project, few), _users(project, many)
    assert a.ttft_ms <= b.ttft_ms * (1 + 1e-9)
    assert a.output_tokens_per_s <= b.output_tokens_per_s * (1 + 1e-9)
    assert a.load.request_rate_per_s <= b.load.request_rate_per_s * (1 + 1e-9)
