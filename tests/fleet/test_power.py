"""The power model: bounded by idle and board power, lower energy per token at bigger batches (as
every published sweep shows), within 2× of the public measurements docs/calibration.md compares
against (the exact errors are printed by benchmarks/energy_calibration.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from studio.core.errors import StudioError
from studio.engine.fleet.power import ReplicaShape, idle_watts, power_at_batch, power_at_rate
from studio.engine.fleet.replica import replica_setup, replica_shape
from studio.io.fleet_presets import power_params
from tests.fleet.conftest import project_of

HF = Path(__file__).resolve().parents[1] / "data" / "hf"


@pytest.fixture(scope="module")
def h100_8b():
    p = project_of("--gpu", "h100-sxm", "--gpus-per-node", "1", "--model", "llama-3.1-8b", "--tp", "1",
                   "--isl", "634", "--osl", "717", "--max-batch", "256")
    return replica_setup(p), replica_shape(p)


def test_power_lies_between_idle_and_board(h100_8b):
    s, shape = h100_8b
    params, _ = power_params()
    idle = idle_watts(shape, params)
    for rate in (0.05, 1.0, 5.0):
        w = power_at_rate(s, shape, params, rate).watts
        assert idle < w <= shape.gpus * shape.board_w
    assert power_at_rate(s, shape, params, 0.0).watts == pytest.approx(idle)


def test_bigger_batches_spend_less_energy_per_token(h100_8b):
    s, shape = h100_8b
    params, _ = power_params()
    j = [power_at_batch(s, shape, params, b).j_per_output_token for b in (8, 64, 256)]
    assert j[0] > j[1] > j[2]
    w = [power_at_batch(s, shape, params, b).watts for b in (8, 256)]
    assert w[0] < w[1]  # the GPU is busier, so it draws more, but not proportionally


@pytest.mark.parametrize(("argv", "batch", "measured_j"), [
    # ML.ENERGY Leaderboard v3 (vLLM 0.11.1), ml-energy/blog docs/posts/llm-energy-over-time.md
    (("--gpu", "h100-sxm", "--gpus-per-node", "1", "--model", "llama-3.1-8b", "--isl", "634", "--osl", "717",
      "--max-batch", "64"), 64, 0.12),
    # ML.ENERGY Leaderboard v3, Qwen 3 32B on 1x B200, text conversation (docs/posts/ml-energy-leaderboard-v3.0.md)
    (("--gpu", "b200", "--gpus-per-node", "1", "--model-config", str(HF / "Qwen--Qwen3-32B-FP8.config.json"),
      "--weight-dtype", "bf16", "--isl", "634", "--osl", "627", "--max-batch", "128"), 128, 0.209),
])
def test_energy_per_token_is_near_public_measurements(argv, batch, measured_j):
    p = project_of(*argv, "--tp", "1")
    params, _ = power_params()
    j = power_at_batch(replica_setup(p), replica_shape(p), params, batch).j_per_output_token
    assert measured_j / 2 < j < measured_j * 2


def test_a_gpu_without_board_power_is_named(h100_8b):
    _, shape = h100_8b
    bare = ReplicaShape(**{**shape.__dict__, "spec": shape.spec.replace(power_w=None)})
    with pytest.raises(StudioError, match="h100-sxm.*power_w"):
        _ = bare.board_w
