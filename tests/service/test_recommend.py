""""Best layout for my targets" and the Explorer recommend the same row, with or without a
percentile SLO (studio.service.explore.recommend.best_row). No Qt."""

from __future__ import annotations

from pathlib import Path

import pytest

from studio.engine import sweep
from studio.io.project_file import load_project
from studio.service.explore.recommend import SLO_SIMULATED, best_row, sweep_kwargs
from studio.service.slo import project_targets, sweep_with_slo

EXAMPLES = Path(__file__).resolve().parents[2] / "presets" / "examples"


@pytest.fixture(scope="module")
def bridge70():
    return load_project(EXAMPLES / "h100-pcie-bridge-llama-70b.json")


def test_without_an_slo_the_row_is_the_sweeps_recommendation(bridge70):
    result, row, why = best_row(bridge70)
    assert why == ""
    assert row == result.recommended


def test_with_an_slo_the_row_is_the_explorers_best_meeting_it(bridge70):
    p = bridge70.replace(explorer=bridge70.explorer.replace(ttft_p99_ms=5_000.0, slo_rate_per_s=0.5))
    result, row, why = best_row(p)
    explored = sweep_with_slo(p, sweep, sweep_kwargs(p), project_targets(p), simulate=SLO_SIMULATED)
    assert row is not None and why == ""
    assert row == explored.slo.best_row
    check = explored.slo.for_layout(result.layout(row))
    assert check is not None and check.meets and check.ttft_p99_ms <= 5_000.0


def test_an_slo_nothing_meets_says_so_instead_of_applying_a_layout(bridge70):
    p = bridge70.replace(explorer=bridge70.explorer.replace(ttft_p99_ms=0.001, slo_rate_per_s=0.5))
    _, row, why = best_row(p)
    assert row is None
    assert "SLO" in why and "p99 TTFT" in why
