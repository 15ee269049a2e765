"""The disaggregated validation points (benchmarks/validation/disaggregated-points.json) name their
source and kind, and each one the engine can cost is costed with finite figures."""

from __future__ import annotations

import math

import pytest

from benchmarks.validation.disaggregated import load_disagg_points, predict_point

POINTS = load_disagg_points()


def test_points_name_their_source_kind_and_tier():
    assert len(POINTS) >= 3
    assert any(p["kind"] == "measurement" for p in POINTS)
    for p in POINTS:
        assert (
            p["source"]
            and p["kind"] in ("measurement", "estimate")
            and p["tier"] in ("A", "B", "C")
        ), p["id"]
        assert p["measured"]["tokens_per_s_per_gpu"] > 0


@pytest.mark.parametrize("rec", [p for p in POINTS if "slo" not in p], ids=lambda p: p["id"])
def test_each_layout_point_is_costed_next_to_its_published_figures(rec):
    rows = predict_point(rec)
    figures = {r.figure for r in rows}
    assert (
        "disaggregated tokens_per_s_per_gpu" in figures and "disaggregated / aggregated" in figures
    )
    for r in rows:
        assert r.published > 0 and r.engine > 0 and math.isfinite(r.error), (r.figure, r.engine)
