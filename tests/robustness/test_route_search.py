"""The switch-settling route search returns exactly the routes of a plain widest-path search that
queues every vertex (the reference below), on every bundled example and node template."""

from __future__ import annotations

import heapq
import random
from pathlib import Path

import pytest

from studio.core.building.builders import build_cluster
from studio.engine.fabric.topology import Topology
from studio.io.presets import load_catalog
from studio.io.project_file import load_project

ROOT = Path(__file__).resolve().parents[2]


def _reference_search(adj, bw_of, lat_of, src, stop, hubs, stop_hubs):
    best = {src: (float("inf"), 0.0, 0)}
    prev = {}
    heap = [(-float("inf"), 0.0, 0, src)]
    done = set()
    while heap:
        nbw, lat, hops, v = heapq.heappop(heap)
        if v in done:
            continue
        done.add(v)
        if v != src and (v in stop or (stop_hubs and v in hubs)):
            continue
        for w, li, fwd in adj.get(v, ()):
            if w in done:
                continue
            bw = min(-nbw, bw_of[li])
            nl = lat + lat_of[li]
            old = best.get(w)
            if old is None or (-bw, nl, hops + 1) < (-old[0], old[1], old[2]):
                best[w] = (bw, nl, hops + 1)
                prev[w] = (v, li, fwd)
                heapq.heappush(heap, (-bw, nl, hops + 1, w))
    return best, prev


def _walk(prev, src, dst):
    idx, fwd, v = [], [], dst
    while v != src:
        u, li, f = prev[v]
        idx.append(li)
        fwd.append(f)
        v = u
    return idx[::-1], fwd[::-1]


def reference_route(topo: Topology, hubs: frozenset[str], a: str, b: str, searches: dict | None = None):
    """Local search that stops at GPUs and hubs, then source -> hub -> target for every hub.

    ``searches`` keeps the searches of one topology and hub set across calls (a search depends on
    its source alone, not on the target: a pair's local search and every hub's tree are the same
    for every pair that shares them)."""
    args = (topo.adj, topo.link_bw, topo.link_lat)
    searches = {} if searches is None else searches

    def search(src: str, stop_hubs: bool):
        key = (src, stop_hubs)
        if key not in searches:
            searches[key] = _reference_search(*args, src, topo.gpu_set, hubs, stop_hubs)
        return searches[key]

    lbest, lprev = search(a, True)
    pick = None
    if b in lbest:
        bw, lat, hops = lbest[b]
        pick = ((-bw, lat, hops), None)
    trees = {}
    for h in hubs:
        if h not in lbest:
            continue
        trees[h] = tree = search(h, False)
        if b not in tree[0]:
            continue
        bw1, lat1, hop1 = lbest[h]
        bw2, lat2, hop2 = tree[0][b]
        cand = (-min(bw1, bw2), lat1 + lat2, hop1 + hop2)
        if pick is None or cand < pick[0]:
            pick = (cand, h)
    if pick is None:
        return None
    if pick[1] is None:
        idx, fwd = _walk(lprev, a, b)
    else:
        idx, fwd = _walk(lprev, a, pick[1])
        i2, f2 = _walk(trees[pick[1]][1], pick[1], b)
        idx, fwd = idx + i2, fwd + f2
    return tuple(idx), tuple(fwd)


def _clusters():
    cat = load_catalog()
    out = [(f.stem, load_project(f).cluster) for f in sorted((ROOT / "presets" / "examples").glob("*.json"))]
    for tid, t in sorted(cat.nodes.items()):
        out.append((f"{tid}x3", build_cluster(t, 3, cat.gpu(t.gpu_type), cat.links)))
    return out


@pytest.mark.parametrize(("name", "cluster"), _clusters(), ids=lambda v: v if isinstance(v, str) else "")
def test_routes_match_the_reference_search(name, cluster):
    topo = Topology(cluster)
    hubs = frozenset(s.id for s in cluster.switches)
    gpus = topo.gpu_ids
    pairs = [(a, b) for a in gpus for b in gpus if a != b]
    rnd = random.Random(name)
    if len(pairs) > 400:
        pairs = rnd.sample(pairs, 400)
    searches: dict = {}
    for a, b in pairs:
        assert topo._store.route(a, b) == reference_route(topo, hubs, a, b, searches), (a, b)


def test_routes_over_leaf_switches_match_the_reference_search():
    """A node sized up from a template gives every GPU its own PCIe switch under the CPUs (the
    maximum cluster's 1,024-GPU nodes): searches skip those leaves and label them from the CPU;
    the routes stay the reference's, within a node and across the fabric."""
    cat = load_catalog()
    template = cat.template_for_gpu("h100-sxm").replace(gpus_per_node=24)
    cluster = build_cluster(template, 3, cat.gpu("h100-sxm"), cat.links)
    topo = Topology(cluster)
    assert len(topo._store._leaf_parent) >= 3 * 16  # the case this test is about
    hubs = frozenset(s.id for s in cluster.switches)
    rnd = random.Random(7)
    pairs = rnd.sample([(a, b) for a in topo.gpu_ids for b in topo.gpu_ids if a != b], 300)
    searches: dict = {}
    for a, b in pairs:
        assert topo._store.route(a, b) == reference_route(topo, hubs, a, b, searches), (a, b)
