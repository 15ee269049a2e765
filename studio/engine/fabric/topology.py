"""Paths between GPUs over the drawn link graph, and link sharing when transfers run together.

The cluster is a graph whose vertices are GPUs, switches and NICs and whose edges are links. The
path between two GPUs is the *widest* one (largest bottleneck effective bandwidth; ties broken by
lower latency, then fewer hops) that does not pass through a third GPU. Paths are computed lazily
per source GPU and cached per (cluster, calibration) in a small identity-keyed LRU, because frozen
pydantic models holding dicts are not hashable.
"""

from __future__ import annotations

import heapq
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from typing import TypeVar

from studio.core.errors import StudioError
from studio.core.hardware import NVLINK_SWITCH_KINDS, Cluster, LinkFamily
from studio.core.project import LinkFit
from studio.engine.step.identity_cache import cached_by_identity
from studio.engine.step.records import Record


class Path(Record, frozen=True):
    """Route between two GPUs.

    Attributes
    ----------
    hops:
        Link ids from ``a`` to ``b``.
    bottleneck_link, bottleneck_kind:
        The slowest link on the route and its link-kind id.
    bandwidth_gbps:
        Effective bandwidth of the bottleneck (spec × efficiency × lanes, or the calibrated fit), GB/s.
    latency_us:
        Sum of the one-hop latencies.
    """

    a: str
    b: str
    hops: tuple[str, ...]
    bottleneck_link: str | None
    bottleneck_kind: str | None
    bandwidth_gbps: float
    latency_us: float
    link_index: tuple[int, ...] = ()
    forward: tuple[bool, ...] = ()


class _Search:
    """One widest-path search (resumable): labels of the *transit* vertices (switches, NICs and the
    source) it has settled, in the order settled, plus the labels of the hubs when they are
    terminal. GPU labels are not stored: :meth:`_PathStore._gpu_label` works one out from the
    GPU's own few links when asked, so a switch with 1,024 GPUs costs nothing per search."""

    __slots__ = ("src", "stop_hubs", "best", "prev", "order", "heap", "src_leaves")

    def __init__(self, src: str, stop_hubs: bool,
                 src_leaves: dict[str, list[tuple[str, int, bool]]] | None = None) -> None:
        self.src = src
        self.stop_hubs = stop_hubs
        #: Leaves next to the source, by parent: the source labels them first, so their parent
        #: relaxes them as any other vertex (see :class:`_Shape`).
        self.src_leaves: dict[str, list[tuple[str, int, bool]]] = src_leaves or {}
        self.best: dict[str, tuple[float, float, int]] = {src: (float("inf"), 0.0, 0)}
        self.prev: dict[str, tuple[str, int, bool]] = {}
        self.order: dict[str, int] = {}
        self.heap: list[tuple[float, float, int, str]] = [(-float("inf"), 0.0, 0, src)]


class _Shape:
    """Lookups that depend only on the link graph, not on the links' figures.

    A *leaf* is a switch or NIC (not a hub) whose links to anything but GPUs all go to one vertex,
    its parent: a PCIe switch holding one GPU under a CPU, say. A search that goes on from a leaf
    can only come back to the parent, so a search does not queue leaves: a leaf's label is the
    parent's label over the leaf's best link, worked out when a target GPU next to it is asked for
    (:meth:`_PathStore._label_of`). On a node of 1,024 GPUs, each behind its own PCIe switch, a
    search then settles ~40 vertices instead of ~1,030."""

    __slots__ = ("next", "pos", "near", "leaf_parent", "leaf_links", "src_leaves")

    def __init__(self, adj: dict[str, list[tuple[str, int, bool]]], gpu_set: set[str],
                 hubs: frozenset[str] = frozenset()) -> None:
        full = {v: [(w, li, f) for w, li, f in nbrs if w not in gpu_set] for v, nbrs in adj.items()}
        #: Parent of every leaf.
        self.leaf_parent: dict[str, str] = {}
        for v, nbrs in full.items():
            if v in gpu_set or v in hubs or not nbrs:
                continue
            parents = {w for w, _li, _f in nbrs}
            if len(parents) == 1 and v not in parents:
                self.leaf_parent[v] = next(iter(parents))
        #: Links from a leaf's parent to the leaf (as the parent lists them: link, direction).
        self.leaf_links: dict[str, list[tuple[int, bool]]] = {}
        for v, nbrs in full.items():
            for w, li, f in nbrs:
                if self.leaf_parent.get(w) == v:
                    self.leaf_links.setdefault(w, []).append((li, f))
        #: Neighbours worth queuing (not GPUs, not the vertex's own leaves).
        self.next: dict[str, list[tuple[str, int, bool]]] = {
            v: [(w, li, f) for w, li, f in nbrs if self.leaf_parent.get(w) != v] for v, nbrs in full.items()
        }
        #: Position of link ``li`` in ``adj[v]``: the order a search meets a vertex's links in.
        self.pos: dict[tuple[str, int], int] = {
            (v, li): k for v, nbrs in adj.items() for k, (_w, li, _f) in enumerate(nbrs)
        }
        #: Neighbours of every vertex; for a GPU also the parents of its leaf neighbours (settling
        #: one labels the leaf, so it can change the GPU's label as a neighbour does).
        self.near: dict[str, frozenset[str]] = {}
        for v, nbrs in adj.items():
            near = {w for w, _li, _f in nbrs}
            if v in gpu_set:
                near |= {self.leaf_parent[w] for w in near if w in self.leaf_parent}
            self.near[v] = frozenset(near)
        #: Leaves next to each source GPU by parent (see :class:`_Search`), worked out on first use.
        self.src_leaves: dict[str, dict[str, list[tuple[str, int, bool]]]] = {}


_Routes = OrderedDict[tuple[str, str], tuple[tuple[int, ...], tuple[bool, ...]] | None]


class _PathStore:
    """Widest-path routes of one link graph, shared by every :class:`Topology` with the same
    structure (an edit that moves a node or renames it keeps the links, so the paths are reused).

    Paths are found in two parts so a large cluster does not need one full graph search per GPU:
    a *local* search from the source GPU that stops at the cluster-level switches (``hubs``: the
    network fabric, a rack NVLink switch), and one full search per hub. The best route is the
    better of the local one and, for every hub the local search reached, source → hub → target;
    without hubs the local search is the whole graph.

    GPUs are never transited (a route does not pass through a third GPU), so the searches settle
    only switches and NICs; a target GPU's label is the best over its own links to settled
    vertices (ties go to the vertex settled first, then to the link listed first — exactly the
    choice a search that also queued GPUs would make). A local search stops as soon as the target's
    label cannot improve any more and resumes for the next target, so a route inside an NVSwitch
    box costs a few steps instead of a sweep of the whole node.
    """

    #: Local searches kept (each holds at most one node's switches and NICs).
    LOCAL_CACHE = 4096
    #: Routes kept.
    ROUTE_CACHE = 1 << 20
    #: Answers kept per memo of :meth:`Topology.concurrent` and :meth:`Topology.costed` (a 512-GPU
    #: sweep asks ~1,300 sets of transfers and ~770 all-reduce groups); a full memo starts over.
    MEMO_CACHE = 1 << 14
    #: Constants objects whose collectives are kept (a calibration fit tries many, newest kept).
    CONSTANTS_KEPT = 4

    def __init__(self, adj: dict[str, list[tuple[str, int, bool]]], link_bw: list[float],
                 link_lat: list[float], gpu_set: set[str], hubs: frozenset[str],
                 shape: _Shape | None = None, routes: _Routes | None = None) -> None:
        self.adj = adj
        self.link_bw = link_bw
        self.link_lat = link_lat
        self.gpu_set = gpu_set
        self.hubs = hubs
        shape = shape or _Shape(adj, gpu_set, hubs)
        self._next = shape.next
        self._pos = shape.pos
        self._near = shape.near
        self._leaf_parent = shape.leaf_parent
        self._leaf_links = shape.leaf_links
        self._src_leaves = shape.src_leaves
        self._local: OrderedDict[str, _Search] = OrderedDict()
        self._hub: dict[str, _Search] = {}
        #: Finished routes by (a, b); shared with every store whose figures order the links the same
        #: way (see :func:`_route_class`), since those find the same routes.
        self._routes: _Routes = OrderedDict() if routes is None else routes
        #: Finished :class:`Path` values by (a, b). A path reads only what the store's key fixes
        #: (link ids, kinds, lanes, the kinds' figures), so every Topology sharing the store shares
        #: them: an undo, or a link edit back and forth, does not rebuild them.
        self.paths: dict[tuple[str, str], Path] = {}
        #: :meth:`Topology.concurrent` answers by their tuple of pairs. Like a path, an answer reads
        #: only the paths and the links' bandwidths, which the store's key fixes. A sweep asks
        #: each set of transfers ~3 times over (a 512-GPU sweep: 3,543 calls, 1,324 sets), and the
        #: next sweep of the same cluster (a workload edit) asks the same sets again.
        self.sharing: dict[tuple[tuple[str, str], ...], tuple[float, int | None, float]] = {}
        #: Collectives costed on this link graph (:meth:`Topology.costed`): by constants object
        #: (:func:`cached_by_identity`), then by (kind, group).
        self.collectives: OrderedDict[int, tuple[object, dict[tuple, object]]] = OrderedDict()

    # ------------------------------------------------------------------ searching
    def _top(self, s: _Search) -> tuple[float, float, int] | None:
        """Key of the next vertex the search would settle (stale queue entries dropped)."""
        heap, order = s.heap, s.order
        while heap and heap[0][3] in order:
            heapq.heappop(heap)
        return heap[0][:3] if heap else None

    def _step(self, s: _Search) -> str | None:
        """Settle the next transit vertex and relax its links to switches, NICs and hubs; returns
        the vertex settled (``None`` when the queue entry was stale)."""
        nbw, lat, hops, v = heapq.heappop(s.heap)
        if v in s.order:
            return None
        s.order[v] = len(s.order)
        hubs = self.hubs
        cur_bw = -nbw
        best, prev, order = s.best, s.prev, s.order
        bw_of, lat_of = self.link_bw, self.link_lat
        push = heapq.heappush
        links = self._next.get(v, ())
        if s.src_leaves and v in s.src_leaves:
            links = [*links, *s.src_leaves[v]]
        for w, li, fwd in links:
            if w in order:
                continue
            bw = bw_of[li]
            if cur_bw < bw:
                bw = cur_bw
            nl = lat + lat_of[li]
            old = best.get(w)
            if old is None or bw > old[0] or (bw == old[0] and (nl < old[1] or (nl == old[1] and hops + 1 < old[2]))):
                best[w] = (bw, nl, hops + 1)
                prev[w] = (v, li, fwd)
                if not (s.stop_hubs and w in hubs):
                    push(s.heap, (-bw, nl, hops + 1, w))
        return v

    def _new_search(self, src: str, stop_hubs: bool) -> _Search:
        """A search from ``src``, told which leaves next to ``src`` its parents must relax."""
        src_leaves = self._src_leaves.get(src)
        if src_leaves is None:
            src_leaves = {}
            for w in dict.fromkeys(w for w, _li, _f in self._next.get(src, ())):
                parent = self._leaf_parent.get(w)
                if parent is not None:
                    src_leaves.setdefault(parent, []).extend((w, li, f) for li, f in self._leaf_links[w])
            self._src_leaves[src] = src_leaves
        return _Search(src, stop_hubs, src_leaves)

    def _label_of(self, s: _Search, u: str) -> tuple[tuple[float, float, int], tuple[str, int, bool] | None] | None:
        """Final label of transit vertex ``u`` in search ``s`` and the hop into it: a settled
        vertex's own, a leaf's worked out from its settled parent (the parent's first best link,
        as relaxing it would keep); None when ``u`` is not settled."""
        if u in s.order:
            return s.best[u], s.prev.get(u)
        parent = self._leaf_parent.get(u)
        if parent is None or u in s.best or parent not in s.order:
            return None
        pbw, plat, phops = s.best[parent]
        pick: tuple[tuple[float, float, int], tuple[str, int, bool]] | None = None
        for li, f in self._leaf_links[u]:
            bw = self.link_bw[li]
            if pbw < bw:
                bw = pbw
            nl = plat + self.link_lat[li]
            if pick is None or bw > pick[0][0] or (bw == pick[0][0] and nl < pick[0][1]):
                pick = ((bw, nl, phops + 1), (parent, li, f))
        return pick

    def _run(self, s: _Search) -> None:
        while self._top(s) is not None:
            self._step(s)

    def _gpu_label(self, s: _Search, b: str) -> tuple[tuple[float, float, int], tuple[str, int, bool]] | None:
        """Best (key, previous hop) of GPU ``b`` over its links to vertices ``s`` has settled."""
        if b == s.src:
            return (-float("inf"), 0.0, 0), (b, -1, True)
        pick = None
        for u, li, fwd_b in self.adj.get(b, ()):
            lab = self._label_of(s, u)
            if lab is None:
                continue
            ubw, ulat, uhops = lab[0]
            bw = self.link_bw[li]
            if ubw < bw:
                bw = ubw
            # vertices settle in (key, name) order, so that pair ranks u as its settling order would
            cand = (-bw, ulat + self.link_lat[li], uhops + 1, (-ubw, ulat, uhops, u), self._pos[(u, li)])
            if pick is None or cand < pick[0]:
                pick = (cand, (u, li, not fwd_b))
        if pick is None:
            return None
        return pick[0][:3], pick[1]

    def _local_search(self, a: str) -> _Search:
        s = self._local.get(a)
        if s is None:
            s = self._local[a] = self._new_search(a, True)
            while len(self._local) > self.LOCAL_CACHE:
                self._local.popitem(last=False)
        else:
            self._local.move_to_end(a)
        return s

    def _hub_search(self, h: str) -> _Search:
        s = self._hub.get(h)
        if s is None:
            s = self._hub[h] = self._new_search(h, False)
            self._run(s)
        return s

    def _walk(self, s: _Search, dst: str, last: tuple[str, int, bool] | None = None) -> tuple[list[int], list[bool]]:
        src = s.src
        idx: list[int] = []
        fwd: list[bool] = []
        v = dst
        if last is not None and dst != src:
            u, li, f = last
            idx.append(li)
            fwd.append(f)
            v = u
        while v != src:
            hop = s.prev.get(v)
            if hop is None:  # a leaf, labelled from its parent
                lab = self._label_of(s, v)
                assert lab is not None and lab[1] is not None
                hop = lab[1]
            u, li, f = hop
            idx.append(li)
            fwd.append(f)
            v = u
        idx.reverse()
        fwd.reverse()
        return idx, fwd

    def route(self, a: str, b: str) -> tuple[tuple[int, ...], tuple[bool, ...]] | None:
        """Link indices and directions of the widest route from GPU ``a`` to GPU ``b``, or None."""
        key = (a, b)
        if key in self._routes:
            return self._routes[key]
        s = self._local_search(a)
        near = self._near.get(b, frozenset())  # with the parents of b's leaf neighbours
        local = self._gpu_label(s, b)
        while True:  # settle until b's label is final (nothing queued can beat it) or all is done
            top = self._top(s)
            if top is None or (local is not None and top >= local[0]):
                break
            if self._step(s) in near:  # only a neighbour of b can change b's label
                local = self._gpu_label(s, b)
        pick: tuple[tuple[float, float, int], str | None] | None = None
        if local is not None:
            pick = (local[0], None)
        for h in self.hubs:
            hl = s.best.get(h)
            if hl is None or h == a:
                continue
            if pick is not None and (-hl[0], hl[1], hl[2]) >= pick[0]:
                continue  # the hub itself is no better than the pick: no route through it is
            tree = self._hub_search(h)
            lb = self._gpu_label(tree, b)
            if lb is None:
                continue
            bw2, lat2, hop2 = -lb[0][0], lb[0][1], lb[0][2]
            cand = (-min(hl[0], bw2), hl[1] + lat2, hl[2] + hop2)
            if pick is None or cand < pick[0]:
                pick = (cand, h)
        if pick is None:
            out = None
        elif pick[1] is None:
            idx, fwd = self._walk(s, b, local[1] if local else None)
            out = (tuple(idx), tuple(fwd))
        else:
            hub = pick[1]
            idx, fwd = self._walk(s, hub)
            tree = self._hub[hub]
            lb = self._gpu_label(tree, b)
            i2, f2 = self._walk(tree, b, lb[1] if lb else None)
            idx += i2
            fwd += f2
            out = (tuple(idx), tuple(fwd))
        self._routes[key] = out
        while len(self._routes) > self.ROUTE_CACHE:
            self._routes.popitem(last=False)
        return out


def _islands(link_ends: list[tuple[str, str]], link_family: list[LinkFamily], gpu_ids: list[str],
             gpu_node: dict[str, str]) -> dict[str, str]:
    """Scale-up island of every GPU: GPUs joined by NVLink-family links (directly, or through an
    NVSwitch / rack NVLink switch) form one NVLink domain; an island is a domain together with
    every GPU sharing a node with it. Named by its first GPU."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        root = x
        while parent.get(root, root) != root:
            root = parent[root]
        while parent.get(x, x) != root:
            parent[x], x = root, parent[x]
        return root

    def union(x: str, y: str) -> None:
        rx, ry = find(x), find(y)
        if rx != ry:
            parent[ry] = rx

    for i, (a, b) in enumerate(link_ends):
        if link_family[i].is_scale_up:
            union(a, b)
    first: dict[str, str] = {}
    for g in gpu_ids:
        node = gpu_node.get(g)
        if node is not None:
            if node in first:
                union(first[node], g)
            else:
                first[node] = g
    name: dict[str, str] = {}
    out: dict[str, str] = {}
    for g in gpu_ids:
        out[g] = name.setdefault(find(g), g)
    return out


class _Skeleton:
    """What a :class:`Topology` reads of its cluster apart from the links' figures: built once per
    cluster object and shared, read-only, by its topologies under every calibration (a link fit
    builds ~140 of one cluster)."""

    def __init__(self, cluster: Cluster) -> None:
        links = cluster.links
        self.link_ids: list[str] = [lk.id for lk in links]
        self.link_kind: list[str] = [lk.kind for lk in links]
        self.link_lanes: list[float] = [lk.lanes for lk in links]
        kinds = cluster.link_kinds
        self.link_family: list[LinkFamily] = [kinds[k].family for k in self.link_kind]
        self.link_ends: list[tuple[str, str]] = [(lk.a, lk.b) for lk in links]
        self.adj: dict[str, list[tuple[str, int, bool]]] = {}
        for i, (a, b) in enumerate(self.link_ends):
            self.adj.setdefault(a, []).append((b, i, True))
            self.adj.setdefault(b, []).append((a, i, False))
        #: Link kinds in the order the links first use them.
        self.kinds: list[str] = list(dict.fromkeys(self.link_kind))
        self.link_pos: dict[str, int] = {lid: i for i, lid in enumerate(self.link_ids)}
        self.gpu_ids: list[str] = [g.id for g in cluster.gpus]
        self.gpu_set = set(self.gpu_ids)
        self.gpu_type: dict[str, str] = {g.id: g.type for g in cluster.gpus}
        self.gpu_node: dict[str, str] = {g.id: n.id for n in cluster.nodes for g in n.gpus}
        self.switch_kind: dict[str, str] = {s.id: s.kind for n in cluster.nodes for s in n.switches}
        self.switch_kind.update({s.id: s.kind for s in cluster.switches})
        self.hubs = frozenset(s.id for s in cluster.switches)
        #: The structural part of the path store's key (see :func:`_store_for`).
        self.store_key = (
            tuple((lk.id, lk.kind, lk.a, lk.b, lk.lanes) for lk in links),
            tuple(self.gpu_ids),
            tuple(sorted(self.hubs)),
        )
        self.nvl: dict[str, list[tuple[str, int]]] = {}
        for g in self.gpu_ids:
            for nb, li, _ in self.adj.get(g, ()):
                if self.switch_kind.get(nb) in NVLINK_SWITCH_KINDS:
                    self.nvl.setdefault(g, []).append((nb, li))
        self.gpu_island: dict[str, str] = _islands(self.link_ends, self.link_family, self.gpu_ids, self.gpu_node)


_SKELETONS: OrderedDict[int, tuple[Cluster, _Skeleton]] = OrderedDict()
_SKELETONS_SIZE = 4


def _skeleton_of(cluster: Cluster) -> _Skeleton:
    """The (cached) :class:`_Skeleton` of ``cluster``; keyed by object identity (clusters are
    immutable; the entry holds the cluster, so its id is not reused while cached)."""
    return cached_by_identity(_SKELETONS, cluster, _SKELETONS_SIZE, _Skeleton)


V = TypeVar("V")


def _kept(memo: dict, key: object, value: V) -> V:
    """``value``, stored in ``memo`` under ``key``; a memo of :data:`_PathStore.MEMO_CACHE`
    answers starts over first."""
    if len(memo) >= _PathStore.MEMO_CACHE:
        memo.clear()
    memo[key] = value
    return value


class Topology:
    """Link graph of one cluster with per-link effective bandwidth and latency."""

    def __init__(self, cluster: Cluster, link_fits: Mapping[str, LinkFit] | None = None) -> None:
        fits = dict(link_fits or {})
        #: Link kinds whose figures a calibration profile fitted (measured collectives give way to them).
        self.fitted_kinds = frozenset(fits)
        sk = _skeleton_of(cluster)
        self.cluster = cluster
        self.link_ids = sk.link_ids
        self.link_kind = sk.link_kind
        self.link_family = sk.link_family
        self.link_lanes = sk.link_lanes
        figures: dict[str, tuple[float, float]] = {}
        for k in sk.kinds:
            kind = cluster.link_kinds[k]
            fit = fits.get(k)
            figures[k] = ((fit.bandwidth_gbps if fit else kind.effective_gbps),
                          (fit.latency_us if fit else kind.latency_us))
        self.link_bw: list[float] = [figures[k][0] * lanes for k, lanes in zip(sk.link_kind, sk.link_lanes, strict=True)]
        self.link_lat: list[float] = [figures[k][1] for k in sk.link_kind]
        self.link_ends = sk.link_ends
        self.adj = sk.adj
        self.link_pos = sk.link_pos
        self.gpu_ids = sk.gpu_ids
        self.gpu_set = sk.gpu_set
        self.gpu_type = sk.gpu_type
        self.gpu_node = sk.gpu_node
        self.switch_kind = sk.switch_kind
        #: The cluster-level switches (network fabrics, rack NVLink switches).
        self.hubs = sk.hubs
        self._store = _store_for(sk, figures, self)
        self._paths = self._store.paths
        self._sharing = self._store.sharing
        self._collectives = self._store.collectives
        self._nvl = sk.nvl
        self.gpu_island = sk.gpu_island

    # ----------------------------------------------------------------- paths
    def path(self, a: str, b: str) -> Path:
        """Widest path from GPU ``a`` to GPU ``b``; :class:`StudioError` when none exists."""
        if a == b:
            return Path(a, b, (), None, None, float("inf"), 0.0)
        key = (a, b)
        p = self._paths.get(key)
        if p is not None:
            return p
        r = self._store.route(a, b)
        if r is None:
            raise StudioError(
                f"GPUs '{a}' and '{b}' are not joined by any chain of links; draw a link "
                "(NVLink, PCIe or a NIC to a fabric) between them or choose another layout"
            )
        idx, fwd = r
        bws, lats = self.link_bw, self.link_lat
        bott = min(idx, key=lambda i: (bws[i], -lats[i]))
        if len(self._paths) >= _PathStore.ROUTE_CACHE:
            self._paths.clear()
        p = self._paths[key] = Path(
            a=a, b=b, hops=tuple(self.link_ids[i] for i in idx), bottleneck_link=self.link_ids[bott],
            bottleneck_kind=self.link_kind[bott], bandwidth_gbps=bws[bott],
            latency_us=sum(lats[i] for i in idx), link_index=idx, forward=fwd,
        )
        return p

    # ----------------------------------------------------------------- sharing
    def concurrent(self, pairs: Iterable[tuple[str, str]]) -> tuple[float, int | None, float]:
        """Transfers that run at the same time, each over its widest path.

        Returns
        -------
        bandwidth_gbps, bottleneck, latency_us
            The smallest per-transfer bandwidth once every link direction is shared equally by the
            transfers crossing it, the index of the link that limits it, and the largest path latency.
        """
        key = tuple(pairs)
        known = self._sharing.get(key)
        if known is not None:
            return known
        paths = [self.path(a, b) for a, b in key if a != b]
        if not paths:
            return float("inf"), None, 0.0
        load: dict[tuple[int, bool], int] = {}
        for p in paths:
            for li, f in zip(p.link_index, p.forward, strict=True):
                load[(li, f)] = load.get((li, f), 0) + 1
        best = float("inf")
        where: int | None = None
        for p in paths:
            for li, f in zip(p.link_index, p.forward, strict=True):
                bw = self.link_bw[li] / load[(li, f)]
                if bw < best:
                    best, where = bw, li
        return _kept(self._sharing, key, (best, where, max(p.latency_us for p in paths)))

    def costed(self, key: tuple, constants: object, cost: Callable[[], V]) -> V:
        """``cost()``, kept with the link graph's path store under ``key`` and ``constants``: for
        a collective, whose algorithms read only the paths, the links' figures (which the store's
        key fixes) and the constants. A sweep costs each all-reduce group ~2.4 times over, and the
        next sweep of the same cluster the same groups again."""
        memo: dict[tuple, V] = cached_by_identity(
            self._collectives, constants, _PathStore.CONSTANTS_KEPT, lambda _c: {}
        )
        known = memo.get(key)
        return known if known is not None else _kept(memo, key, cost())

    # ----------------------------------------------------------------- scale-up domains
    def nvswitch_domain(self, gpus: list[str] | tuple[str, ...]) -> tuple[float, int, float] | None:
        """If every GPU links directly to one common NVSwitch / NVLink switch: (per-GPU effective
        bandwidth of the slowest such link, its index, switch round-trip latency); else None."""
        if not gpus:
            return None
        common: set[str] | None = None
        for g in gpus:
            switches = {s for s, _ in self._nvl.get(g, ())}
            common = switches if common is None else common & switches
            if not common:
                return None
        assert common
        best: tuple[float, int, float] | None = None
        for s in sorted(common):
            worst_bw, worst_li, lat = float("inf"), -1, 0.0
            for g in gpus:
                bw = 0.0
                li_g = -1
                for sw, li in self._nvl[g]:
                    if sw == s:
                        bw += self.link_bw[li]
                        li_g = li
                if bw < worst_bw:
                    worst_bw, worst_li = bw, li_g
                lat = max(lat, 2 * self.link_lat[li_g])
            if best is None or worst_bw > best[0]:
                best = (worst_bw, worst_li, lat)
        return best

    def nodes_of(self, gpus: Iterable[str]) -> dict[str, list[str]]:
        """GPUs grouped by node, in the given order."""
        out: dict[str, list[str]] = {}
        for g in gpus:
            out.setdefault(self.gpu_node[g], []).append(g)
        return out

    def islands_of(self, gpus: Iterable[str]) -> dict[str, list[str]]:
        """GPUs grouped by scale-up island (NVLink domain ∪ its nodes), in the given order.

        Two DGX boxes joined by InfiniBand are two islands; the 18 trays of a GB200 NVL72 rack, all
        linked to one rack NVLink switch, are one.
        """
        out: dict[str, list[str]] = {}
        for g in gpus:
            out.setdefault(self.gpu_island[g], []).append(g)
        return out


_STORES: OrderedDict[tuple, _PathStore] = OrderedDict()
#: The figure-independent lookups of a link graph, shared by its stores (calibration fits rebuild
#: the store for every trial figure; the graph's shape stays the same).
_SHAPES: OrderedDict[tuple, _Shape] = OrderedDict()
#: Route tables shared by the stores of one link graph whose figures find the same routes
#: (:func:`_route_class`): a calibration fit tries ~45 bandwidths of one kind, a handful of classes.
_ROUTE_TABLES: OrderedDict[tuple, _Routes] = OrderedDict()
_STORES_SIZE = 8


def _route_class(links: tuple[tuple[str, str, str, str, float], ...],
                 figures: dict[str, tuple[float, float]]) -> tuple | None:
    """What the route search reads of the links' figures, or None (a NaN figure).

    The search only takes minimums of link bandwidths and compares them (never adds or scales
    them), and adds latencies: so figures with the same per-kind latencies and the same order —
    ties included — of every link bandwidth value (``bandwidth × lanes`` of each kind/lanes pair,
    and the source's ∞) find exactly the same routes, tie-breaks and all."""
    classes = sorted({(kind, lanes) for _id, kind, _a, _b, lanes in links})
    values = [figures[kind][0] * lanes for kind, lanes in classes] + [float("inf")]
    lats = tuple(sorted((kind, fig[1]) for kind, fig in figures.items()))
    if any(v != v for v in values) or any(lat != lat for _k, lat in lats):
        return None
    rank = {v: i for i, v in enumerate(sorted(set(values)))}
    return lats, tuple(classes), tuple(rank[v] for v in values)


def _store_for(sk: _Skeleton, figures: dict[str, tuple[float, float]], topo: Topology) -> _PathStore:
    """The path store of a link graph, keyed by its structure: every link's (id, kind, ends, lanes),
    the effective bandwidth and latency of each kind, the GPU ids and the hubs. A new
    :class:`Cluster` object with the same links (an edit elsewhere) reuses the computed paths."""
    links, gpus, hubs = sk.store_key
    key = (links, tuple(sorted(figures.items())), gpus, hubs)
    store = _STORES.get(key)
    if store is not None:
        _STORES.move_to_end(key)
        return store
    shape_key = (key[0], key[2], key[3])
    shape = _SHAPES.get(shape_key)
    if shape is None:
        shape = _SHAPES[shape_key] = _Shape(topo.adj, topo.gpu_set, sk.hubs)
        while len(_SHAPES) > _STORES_SIZE:
            _SHAPES.popitem(last=False)
    else:
        _SHAPES.move_to_end(shape_key)
    routes: _Routes | None = None
    rclass = _route_class(key[0], figures)
    if rclass is not None:
        rkey = (shape_key, rclass)
        routes = _ROUTE_TABLES.get(rkey)
        if routes is None:
            routes = _ROUTE_TABLES[rkey] = OrderedDict()
            while len(_ROUTE_TABLES) > _STORES_SIZE:
                _ROUTE_TABLES.popitem(last=False)
        else:
            _ROUTE_TABLES.move_to_end(rkey)
    store = _PathStore(topo.adj, topo.link_bw, topo.link_lat, topo.gpu_set, sk.hubs, shape, routes)
    _STORES[key] = store
    while len(_STORES) > _STORES_SIZE:
        _STORES.popitem(last=False)
    return store


_CACHE: OrderedDict[tuple[int, int], tuple[Cluster, object, Topology]] = OrderedDict()
_CACHE_SIZE = 16


def topology_of(cluster: Cluster, link_fits: Mapping[str, LinkFit] | None = None) -> Topology:
    """The (cached) :class:`Topology` of ``cluster`` under ``link_fits``; keyed by object identity."""
    key = (id(cluster), id(link_fits) if link_fits else 0)
    hit = _CACHE.get(key)
    if hit is not None and hit[0] is cluster and (hit[1] is link_fits or not link_fits):
        _CACHE.move_to_end(key)
        return hit[2]
    topo = Topology(cluster, link_fits)
    _CACHE[key] = (cluster, link_fits, topo)
    while len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    return topo


def path_between(cluster: Cluster, gpu_a: str, gpu_b: str) -> Path:
    """Hops, bottleneck link, bandwidth and latency of the widest path between two GPUs.

    Raises
    ------
    StudioError
        If either id is not a GPU of ``cluster`` or no chain of links joins them.
    """
    topo = topology_of(cluster)
    for g in (gpu_a, gpu_b):
        if g not in topo.gpu_set:
            from studio.core.errors import nearest

            hint = nearest(g, topo.gpu_ids)
            extra = f"; did you mean {', '.join(hint)}?" if hint else ""
            raise StudioError(f"'{g}' is not a GPU of this cluster{extra}")
    return topo.path(gpu_a, gpu_b)
