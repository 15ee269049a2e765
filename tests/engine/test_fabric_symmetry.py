"""Alike blocks of a link graph: a KV transfer costed once per pattern of GPUs on alike nodes is the
transfer costed pair by pair (studio.engine.fabric.symmetry)."""

from __future__ import annotations

import random

import pytest

from studio.engine.disagg.kv_transfer import kv_transfer
from studio.engine.fabric.symmetry import Symmetry
from studio.engine.fabric.topology import Topology
from tests.engine.fixtures import DGX_H100, LLAMA_70B, cluster


def _wider_nic(cl, node: str):
    """``cl`` with node ``node``'s first NIC link to the fabric doubled in lanes."""
    links = list(cl.links)
    i = next(i for i, lk in enumerate(links) if lk.a.startswith(f"{node}/nic") and lk.b in {s.id for s in cl.switches})
    links[i] = links[i].replace(lanes=links[i].lanes * 2)
    return cl.replace(links=tuple(links))


def test_nodes_of_one_template_behind_one_switch_are_alike_and_a_changed_link_sets_one_apart():
    cl = cluster(DGX_H100, 6)
    sym = Symmetry(Topology(cl))
    assert len(sym.block_class) == 6 and len(set(sym.block_class)) == 1
    odd = Symmetry(Topology(_wider_nic(cl, "n3")))
    assert len(set(odd.block_class)) == 2
    assert odd.block_class.count(odd.block_class[3]) == 1


def test_a_gpu_and_a_link_found_on_one_pattern_land_on_the_same_place_of_another():
    cl = cluster(DGX_H100, 4)
    topo = Topology(cl)
    sym = Symmetry(topo)
    a = ["n0/gpu1", "n0/gpu2", "n2/gpu5"]
    b = ["n3/gpu1", "n3/gpu2", "n1/gpu5"]
    assert sym.key(a) == sym.key(b)
    assert sym.key(a) != sym.key(["n0/gpu1", "n0/gpu2", "n0/gpu5"])
    ba, bb = sym.blocks(a), sym.blocks(b)
    assert sym.gpu_at(bb, sym.gpu_place(ba, "n2/gpu5")) == "n1/gpu5"
    li = topo.link_pos["n2/nic5-fabric"]
    assert topo.link_ids[sym.link_at(bb, sym.link_place(ba, li))] == "n1/nic5-fabric"


@pytest.mark.parametrize("odd", [False, True])
def test_transfers_costed_once_per_pattern_equal_the_transfers_costed_pair_by_pair(odd):
    cl = cluster(DGX_H100, 6)
    if odd:
        cl = _wider_nic(cl, "n3")
    topo = Topology(cl)
    gpus = [g.id for g in cl.gpus]
    rng = random.Random(7)
    memo: dict = {}
    for tp_p, tp_d, pp in ((2, 4, 1), (4, 8, 2), (8, 2, 1), (1, 8, 2)):
        for _ in range(12):
            picked = rng.sample(gpus, 2 * (tp_p + tp_d) * pp)
            half = (tp_p * pp) * 2
            pre, dec = picked[:half], picked[half:]
            pg = [[pre[w * tp_p * pp + s * tp_p:w * tp_p * pp + (s + 1) * tp_p] for s in range(pp)] for w in range(2)]
            dg = [[dec[w * tp_d * pp + s * tp_d:w * tp_d * pp + (s + 1) * tp_d] for s in range(pp)] for w in range(2)]
            layers = tuple([80 // pp] * pp)
            args = (topo, LLAMA_70B, "bf16", 2048.0, pg, dg, layers, layers)
            assert kv_transfer(*args, cache=memo) == kv_transfer(*args)
            # the same pattern moved to other alike nodes: costed from the memo, renamed
            shift = {f"n{i}": f"n{(i + 1) % 6}" for i in range(6)}
            moved = [[[shift[g.split("/")[0]] + "/" + g.split("/")[1] for g in st] for st in w] for w in (*pg, *dg)]
            args = (topo, LLAMA_70B, "bf16", 2048.0, moved[:2], moved[2:], layers, layers)
            assert kv_transfer(*args, cache=memo) == kv_transfer(*args)


def test_a_worker_pairs_key_from_its_two_workers_parts_is_the_key_of_their_gpus():
    cl = cluster(DGX_H100, 5)
    sym = Symmetry(Topology(cl))
    gpus = [g.id for g in cl.gpus]
    rng = random.Random(3)
    pairs = []
    for _ in range(300):
        a, b = rng.sample(gpus, 4), rng.sample(gpus, 2)
        a = tuple(a)
        b = tuple(g for g in b if g not in a) or (next(g for g in gpus if g not in a),)
        pairs.append((a, b))
    for a, b in pairs:
        key, blocks = sym.pair(a, b)
        assert blocks == sym.blocks(a + b)
    for (a, b), (c, d) in zip(pairs, pairs[1:] + pairs[:1], strict=True):
        assert (sym.pair(a, b)[0] == sym.pair(c, d)[0]) == (sym.key(a + b) == sym.key(c + d))
    # the same pattern moved to other nodes: equal keys from both
    a, b = ("n0/gpu1", "n0/gpu2"), ("n1/gpu0", "n0/gpu3")
    c, d = ("n4/gpu1", "n4/gpu2"), ("n2/gpu0", "n4/gpu3")
    assert sym.pair(a, b)[0] == sym.pair(c, d)[0] and sym.key(a + b) == sym.key(c + d)
