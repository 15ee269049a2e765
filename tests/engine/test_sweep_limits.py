"""The sweep only enumerates layouts a :class:`Layout` can hold: on a cluster larger than the TP
limit, ``sweep --nodes 1000`` (8,000 GPUs) used to crash building a TP=8000 layout."""

from __future__ import annotations

from studio.core.layout import MAX_PP, MAX_TP, Layout
from studio.engine.search.sweep import layout_candidates
from tests.engine.fixtures import DGX_H100, LLAMA_405B, MIXTRAL, cluster, project


def test_candidates_on_8000_gpus_are_all_valid_layouts() -> None:
    proj = project(cluster(DGX_H100, 1), LLAMA_405B)
    combos = layout_candidates(proj, 8000)
    assert combos, "some layout must exist"
    assert max(tp for tp, *_ in combos) <= MAX_TP
    assert max(pp for _, pp, *_ in combos) <= min(MAX_PP, LLAMA_405B.num_layers)
    for tp, pp, dp, ep in combos:
        assert tp * pp * dp == 8000
        Layout(tp=tp, pp=pp, dp=dp, ep=ep)  # raises if the sweep would build an invalid layout


def test_candidates_keep_every_small_cluster_split() -> None:
    proj = project(cluster(DGX_H100, 2), MIXTRAL)
    combos = layout_candidates(proj, 16)
    assert {(tp, pp) for tp, pp, _, _ in combos} == {
        (tp, pp) for tp in (1, 2, 4, 8, 16) for pp in (1, 2, 4, 8, 16) if tp * pp <= 16 and 16 % (tp * pp) == 0
    }
    for tp, pp, dp, ep in combos:
        Layout(tp=tp, pp=pp, dp=dp, ep=ep)
