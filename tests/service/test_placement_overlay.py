"""The placement overlay comes from the engine's answer (studio.service.placement_overlay): the
plan carries each GPU's rank coordinates and the slow TP hops, and the overlay before the answer
is the layout's own ranks (Layout.coords, the inverse of Layout.rank)."""

from __future__ import annotations

from pathlib import Path

import pytest

from studio.core.layout import Layout
from studio.core.serving_mode import parse_pools
from studio.engine import evaluate
from studio.io.project_file import load_project
from studio.service.placement_overlay import (
    layout_overlay,
    plan_overlay,
    pool_overlay,
    pool_tile_text,
    rank_tile_text,
)

EXAMPLES = Path(__file__).resolve().parents[2] / "presets" / "examples"


@pytest.fixture(scope="module")
def bridge():
    """8 × H100 PCIe in NVLink-bridge pairs: TP2 stays on a bridge, TP4 crosses PCIe."""
    return load_project(EXAMPLES / "h100-pcie-bridge-llama-70b.json")


@pytest.mark.parametrize("lay", [
    Layout(tp=4, pp=2, dp=2), Layout(tp=2, dp=4, ep=8), Layout(tp=4, dp=2, ep=2), Layout(tp=1, pp=3, dp=2),
])
def test_coords_invert_rank(lay):
    seen = set()
    for r in range(lay.world_size):
        c = lay.coords(r)
        assert lay.rank(c.dp_index, c.stage, c.tp_rank) == r == c.rank
        assert c.group == c.dp_index * lay.pp + c.stage
        assert 0 <= c.ep_rank < max(lay.ep, 1)
        seen.add((c.ep_group, c.ep_rank) if lay.ep > lay.tp else (c.group, c.tp_rank))
    assert len(seen) == lay.world_size
    with pytest.raises(ValueError, match="outside"):
        lay.coords(lay.world_size)


def test_expert_groups_are_the_ranks_of_one_all_to_all():
    lay = Layout(tp=2, pp=2, dp=4, ep=4)  # an all-to-all joins 2 replicas' TP groups of a stage
    members = [r for r in range(lay.world_size) if lay.coords(r).ep_group == lay.coords(0).ep_group]
    assert members == [0, 1, 4, 5]
    assert [lay.coords(r).ep_rank for r in members] == [0, 1, 2, 3]
    assert Layout(tp=4, ep=2).coords(3).ep_rank == 1  # ep < tp: an expert set over 2 TP ranks


def test_the_plan_carries_every_gpus_rank(bridge):
    plan = evaluate(bridge)
    assert set(plan.ranks) == set(plan.layout.placement)
    for m in plan.memory:
        c = plan.ranks[m.gpu_id]
        assert (c.rank, c.stage, c.tp_rank, c.dp_index) == (m.rank, m.stage, m.tp_rank, m.dp_index)


def test_slow_hops_are_the_tp_all_reduces_over_pcie(bridge):
    on_bridges = evaluate(bridge, Layout(tp=2, pp=4, micro_batches=4))
    assert on_bridges.slow_links == frozenset() and on_bridges.slow_gpus == frozenset()
    over_pcie = evaluate(bridge, Layout(tp=4, dp=2))
    warning = next(w for w in over_pcie.warnings if w.code == "TP_OVER_SLOW_LINK")
    assert over_pcie.slow_links and over_pcie.slow_links <= set(warning.links)
    assert over_pcie.slow_gpus and over_pcie.slow_gpus <= set(warning.gpus)
    pl = plan_overlay(over_pcie)
    assert pl.slow_links == over_pcie.slow_links and pl.slow_gpus == over_pcie.slow_gpus
    gid = next(iter(pl.slow_gpus))
    assert "crosses a slow link" in rank_tile_text(pl, gid)[1]


def test_the_preview_before_the_answer_is_what_the_answer_shows(bridge):
    lay = Layout(tp=4, dp=2)
    plan = evaluate(bridge, lay)
    assert layout_overlay(lay, bridge.cluster, plan) == plan_overlay(plan)
    bare = layout_overlay(lay, bridge.cluster)
    assert bare.stage_of == plan_overlay(plan).stage_of and bare.slow_gpus == frozenset()
    gpus = [g.id for g in bridge.cluster.gpus]
    assert bare.dp_of[gpus[4]] == 1 and bare.tp_rank_of[gpus[5]] == 1
    assert rank_tile_text(bare, gpus[4])[0] == "S0r1"


def test_a_layout_larger_than_the_cluster_shows_the_ranks_it_has(bridge):
    pl = layout_overlay(Layout(tp=8, dp=2), bridge.cluster)
    assert len(pl.stage_of) == bridge.cluster.num_gpus


def test_pools_are_placed_as_the_engine_places_them(bridge):
    assert pool_overlay(bridge) is None  # aggregated
    p = bridge.replace(serving_mode=parse_pools("1P:tp2,1D:tp4"))
    pl = pool_overlay(p)
    assert pl is not None
    assert sorted(pl.pool_of.values()) == ["decode"] * 4 + ["prefill"] * 2
    gid = next(g for g, role in pl.pool_of.items() if role == "decode")
    label, note = pool_tile_text(pl, gid, p)
    assert label == "D0" and "decode pool, worker 0" in note
