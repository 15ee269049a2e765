"""The gated prefill batch ``k = λ·T(k)`` of a prefill worker, solved in closed form
(:func:`studio.engine.disagg.pools.least_fixed_point`)."""

from __future__ import annotations

import numpy as np
import pytest

from studio.core.serving_mode import parse_pools
from studio.core.workload import Workload
from studio.engine.disagg.evaluate import evaluate_disaggregated, pool_costs, prefill_worker
from studio.engine.disagg.pools import PrefillCurve, least_fixed_point
from studio.engine.fabric.topology import topology_of
from studio.engine.plan.evaluate import constants_for
from tests.engine.fixtures import H200, HGX_H200, LLAMA_70B, cluster, project


def _iterate(lam: np.ndarray, k_grid: np.ndarray, t_grid: np.ndarray, rounds: int) -> np.ndarray:
    """The gated-batch iteration the closed form replaces, run ``rounds`` times from one prompt."""
    k = np.full(lam.shape, k_grid[0])
    for _ in range(rounds):
        k = np.clip(lam * np.interp(k, k_grid, t_grid), k_grid[0], k_grid[-1])
    return k


def test_an_affine_batch_time_gives_the_textbook_fixed_point():
    # T(k) = a + b·k ms: k = λa / (1 − λb) while that lies in [1, slots]
    a, b, slots = 40.0, 10.0, 8.0
    grid = np.linspace(1.0, slots, 5)
    lam = np.array([0.0, 0.01, 0.05, 0.08, 0.095, 0.099, 0.2])
    k = least_fixed_point(lam, grid, a + b * grid)
    exact = np.clip(lam * a / np.maximum(1.0 - lam * b, 1e-300), 1.0, slots)
    exact[lam * b >= 1.0] = slots  # every batch grows faster than it drains: the largest batch
    assert k == pytest.approx(exact, rel=1e-12)


def test_it_is_where_the_iteration_converges_even_where_the_iteration_is_slow():
    rng = np.random.default_rng(7)
    grid = np.linspace(1.0, 6.0, 41)
    t = 100.0 + np.cumsum(rng.uniform(0.5, 9.0, grid.size))  # a rising, kinked batch time
    lam = np.linspace(0.0, 1.2 / t[-1] * grid[-1], 200)
    k = least_fixed_point(lam, grid, t)
    assert k == pytest.approx(_iterate(lam, grid, t, 2_000), rel=1e-6, abs=1e-9)
    # and a fixed point it is: λ·T(k) = k wherever k is strictly inside [1, slots]
    inside = (k > 1.0) & (k < 6.0)
    assert inside.sum() > 50
    assert lam[inside] * np.interp(k[inside], grid, t) == pytest.approx(k[inside], rel=1e-9)


def test_a_worker_near_saturation_batches_what_arrives_during_its_batch():
    """Llama-3.1-70B prompts of 2,048 tokens on a TP1×PP4 prefill worker of H200s: up to 4 prompts per
    iteration. At every load the batch a prompt runs in is the fixed point of the worker's own
    iteration model (not a truncated iteration towards it) and the load tables rise with the load;
    at saturation the batch has grown until the prompts it holds take as long per prompt as a full
    iteration's (the worker's capacity)."""
    p = project(cluster(HGX_H200, 2, H200), LLAMA_70B, workload=Workload(isl=2048, osl=256, max_batch=256))
    mode = parse_pools("1P:tp1pp4,1D:tp4")
    res = evaluate_disaggregated(p, mode)
    c = constants_for(None)
    lc = pool_costs(p, res.prefill.pool, res.prefill.placement, topology_of(p.cluster), c)
    curve = prefill_worker(p, res.prefill.pool, lc, c, "serving_mode.prefill").curve
    assert isinstance(curve, PrefillCurve) and curve.slots > 1
    rho, k, own = curve._rho, curve._k, curve._own
    lam = rho * curve.mu
    exact_t = curve.chunks * curve.im.round_ms(
        k * min(curve.isl, curve.budget), 0.0, curve.isl, curve.isl, np.full(k.shape, curve.micro_batches))
    assert own == pytest.approx(exact_t, rel=1e-12)
    inside = (k > 1.0) & (k < curve.slots)
    assert inside.any()
    assert lam[inside] * own[inside] == pytest.approx(k[inside], rel=1e-3)
    assert np.all(np.diff(k) >= -1e-12) and np.all(np.diff(own) >= -1e-9)
    assert k[-1] / own[-1] == pytest.approx(curve.mu, rel=1e-3)
