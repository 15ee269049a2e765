"""The all-reduce model against a public nccl-tests sweep (8× H200, NVSwitch, NCCL 2.30.7;
reference/collectives.md §1.1(b), times derived there from busbw).

Pins what docs/calibration.md states: NCCL's large-message algorithm (NVLS) is within 10 % from
8 MiB up; below that the serving path's custom one-shot all-reduce is what plans use.
"""

from __future__ import annotations

import pytest

from studio.engine.fabric.comm import allreduce
from studio.engine.fabric.topology import topology_of
from studio.engine.step.constants import default_constants
from tests.engine.fixtures import HGX_H200, cluster

#: KiB → µs, nccl-tests all_reduce_perf on 8× H200 (stas00/ml-engineering network/benchmarks)
MEASURED_US = {
    8192: 80.7, 16384: 121.0, 32768: 197.0, 65536: 318.0, 131072: 571.0,
    262144: 1062.0, 524288: 2061.0, 1048576: 4050.0,
}


@pytest.fixture(scope="module")
def tp8():
    topo = topology_of(cluster(HGX_H200, 1))
    return allreduce(topo, [f"n0/gpu{i}" for i in range(8)], default_constants())


@pytest.mark.parametrize("kib", sorted(MEASURED_US))
def test_nccl_large_messages_within_ten_percent(tp8, kib):
    size = kib * 1024
    nccl = min(a.alpha_us + size * a.us_per_byte for a in tp8.algos if a.name != "one-shot")
    assert nccl == pytest.approx(MEASURED_US[kib], rel=0.10)


def test_small_messages_take_the_one_shot_kernel(tp8):
    """A decode all-reduce (70B, 64 sequences: 1 MiB) runs the custom kernel, not NCCL's ring."""
    assert tp8.pick(64 * 8192 * 2).name == "one-shot"
    assert tp8.pick(64 * 1024 * 1024).name == "nvls"
