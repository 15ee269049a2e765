"""Placement comparison on irregular boxes: the winner keeps TP groups on the fastest links."""

from __future__ import annotations

import pytest

from studio.core.errors import StudioError
from studio.core.layout import Layout
from studio.engine.search.placement import (
    candidate_placements,
    compare_placements,
    topology_for,
    tp_bottleneck,
)
from tests.explorer.conftest import rewire_bridges


def test_every_candidate_is_a_valid_placement(bridge70):
    lay = Layout(tp=2, pp=4, micro_batches=4)
    gpus = {g.id for g in bridge70.cluster.gpus}
    cands = candidate_placements(bridge70, lay)
    assert {c.strategy for c in cands} >= {"contiguous", "interleaved", "fastest-seeded", "fastest-merge"}
    for c in cands:
        assert len(c.placement) == lay.world_size
        assert len(set(c.placement)) == lay.world_size
        assert set(c.placement) <= gpus
        lay.replace(placement=c.placement)  # the domain accepts it


def test_bridge_pairs_in_cluster_order_keep_tp2_on_the_bridge(bridge70):
    comp = compare_placements(bridge70, Layout(tp=2, pp=4, micro_batches=4))
    best = comp.best
    assert best is not None and best.tp_link_kind == "nvlink-bridge-h100"
    interleaved = next(o for o in comp.options if o.candidate.strategy == "interleaved")
    assert interleaved.tp_link_kind != "nvlink-bridge-h100"
    assert interleaved.tokens_per_s_per_gpu < best.tokens_per_s_per_gpu
    assert comp.differs
    assert "nvlink-bridge-h100" in comp.reasons[0]
    assert any(interleaved.tp_link_kind in r and "Interleaved" in r for r in comp.reasons[1:])


def test_rewired_bridges_make_the_greedy_placement_win(bridge70):
    project = rewire_bridges(bridge70, [(0, 5), (1, 4), (2, 7), (3, 6)])
    lay = Layout(tp=2, pp=4, micro_batches=4)
    comp = compare_placements(project, lay)
    best = comp.best
    assert best is not None
    assert best.tp_link_kind.startswith("nvlink-bridge")
    assert best.candidate.strategy != "contiguous" or best.also
    pairs = {frozenset(best.placement[i:i + 2]) for i in range(0, 8, 2)}
    assert pairs == {frozenset({f"n0/gpu{a}", f"n0/gpu{b}"}) for a, b in [(0, 5), (1, 4), (2, 7), (3, 6)]}
    contiguous = next(o for o in comp.options if o.candidate.strategy == "contiguous")
    assert contiguous.tokens_per_s_per_gpu < best.tokens_per_s_per_gpu
    assert contiguous.plan.allreduce_us_per_layer_decode > best.plan.allreduce_us_per_layer_decode


def test_tp_bottleneck_names_the_slowest_hop(dgx405):
    topo = topology_for(dgx405)
    gpus = tuple(g.id for g in dgx405.cluster.gpus)
    kind, bw = tp_bottleneck(topo, Layout(tp=16), gpus)
    assert kind.startswith("ib") and bw < 100
    kind8, bw8 = tp_bottleneck(topo, Layout(tp=8, pp=2), gpus)
    assert kind8.startswith("nvlink") and bw8 > bw
    assert tp_bottleneck(topo, Layout(tp=1, pp=16), gpus) == ("", float("inf"))


def test_tp1_has_a_single_candidate(bridge70):
    cands = candidate_placements(bridge70, Layout(tp=1, pp=8, micro_batches=8))
    assert [c.strategy for c in cands] == ["contiguous"]


def test_too_many_gpus_is_a_clear_error(bridge70):
    with pytest.raises(StudioError, match="needs 16 GPUs; the cluster has 8"):
        candidate_placements(bridge70, Layout(tp=2, pp=8))
