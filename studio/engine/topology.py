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
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from studio.core.errors import StudioError
from studio.core.hardware import Cluster, LinkFamily
from studio.core.project import LinkFit

NVLINK_SWITCH_KINDS = ("nvswitch", "nvlink-switch")


@dataclass(frozen=True, slots=True)
class Path:
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


class Topology:
    """Link graph of one cluster with per-link effective bandwidth and latency."""

    def __init__(self, cluster: Cluster, link_fits: Mapping[str, LinkFit] | None = None) -> None:
        fits = dict(link_fits or {})
        self.cluster = cluster
        self.link_ids: list[str] = [lk.id for lk in cluster.links]
        self.link_kind: list[str] = [lk.kind for lk in cluster.links]
        self.link_family: list[LinkFamily] = []
        self.link_bw: list[float] = []
        self.link_lat: list[float] = []
        self.link_ends: list[tuple[str, str]] = []
        self.adj: dict[str, list[tuple[str, int, bool]]] = {}
        for i, lk in enumerate(cluster.links):
            kind = cluster.link_kinds[lk.kind]
            fit = fits.get(lk.kind)
            bw = (fit.bandwidth_gbps if fit else kind.effective_gbps) * lk.lanes
            lat = fit.latency_us if fit else kind.latency_us
            self.link_family.append(kind.family)
            self.link_bw.append(bw)
            self.link_lat.append(lat)
            self.link_ends.append((lk.a, lk.b))
            self.adj.setdefault(lk.a, []).append((lk.b, i, True))
            self.adj.setdefault(lk.b, []).append((lk.a, i, False))
        self.gpu_ids: list[str] = [g.id for g in cluster.gpus]
        self.gpu_set = set(self.gpu_ids)
        self.gpu_type: dict[str, str] = {g.id: g.type for g in cluster.gpus}
        self.gpu_node: dict[str, str] = {g.id: n.id for n in cluster.nodes for g in n.gpus}
        self.switch_kind: dict[str, str] = {s.id: s.kind for n in cluster.nodes for s in n.switches}
        self.switch_kind.update({s.id: s.kind for s in cluster.switches})
        self._paths: dict[str, dict[str, Path]] = {}
        self._nvl: dict[str, list[tuple[str, int]]] = {}
        for g in self.gpu_ids:
            for nb, li, _ in self.adj.get(g, ()):
                if self.switch_kind.get(nb) in NVLINK_SWITCH_KINDS:
                    self._nvl.setdefault(g, []).append((nb, li))

    # ----------------------------------------------------------------- paths
    def path(self, a: str, b: str) -> Path:
        """Widest path from GPU ``a`` to GPU ``b``; :class:`StudioError` when none exists."""
        if a == b:
            return Path(a, b, (), None, None, float("inf"), 0.0)
        table = self._paths.get(a)
        if table is None:
            table = self._paths[a] = self._widest_from(a)
        p = table.get(b)
        if p is None:
            raise StudioError(
                f"GPUs '{a}' and '{b}' are not joined by any chain of links; draw a link "
                "(NVLink, PCIe or a NIC to a fabric) between them or choose another layout"
            )
        return p

    def _widest_from(self, src: str) -> dict[str, Path]:
        best: dict[str, tuple[float, float, int]] = {src: (float("inf"), 0.0, 0)}
        prev: dict[str, tuple[str, int, bool]] = {}
        heap: list[tuple[float, float, int, str]] = [(-float("inf"), 0.0, 0, src)]
        done: set[str] = set()
        while heap:
            nbw, lat, hops, v = heapq.heappop(heap)
            if v in done:
                continue
            done.add(v)
            if v != src and v in self.gpu_set:
                continue  # GPUs are endpoints, never transit
            for w, li, fwd in self.adj.get(v, ()):
                if w in done:
                    continue
                cand = (min(-nbw, self.link_bw[li]), lat + self.link_lat[li], hops + 1)
                cur = best.get(w)
                if cur is None or (-cand[0], cand[1], cand[2]) < (-cur[0], cur[1], cur[2]):
                    best[w] = cand
                    prev[w] = (v, li, fwd)
                    heapq.heappush(heap, (-cand[0], cand[1], cand[2], w))
        out: dict[str, Path] = {}
        for g in self.gpu_ids:
            if g == src or g not in prev:
                continue
            idx: list[int] = []
            fwd: list[bool] = []
            v = g
            while v != src:
                u, li, f = prev[v]
                idx.append(li)
                fwd.append(f)
                v = u
            idx.reverse()
            fwd.reverse()
            bott = min(idx, key=lambda i: (self.link_bw[i], -self.link_lat[i]))
            out[g] = Path(
                a=src,
                b=g,
                hops=tuple(self.link_ids[i] for i in idx),
                bottleneck_link=self.link_ids[bott],
                bottleneck_kind=self.link_kind[bott],
                bandwidth_gbps=self.link_bw[bott],
                latency_us=sum(self.link_lat[i] for i in idx),
                link_index=tuple(idx),
                forward=tuple(fwd),
            )
        return out

    # ----------------------------------------------------------------- sharing
    def concurrent(self, pairs: Iterable[tuple[str, str]]) -> tuple[float, int | None, float]:
        """Transfers that run at the same time, each over its widest path.

        Returns
        -------
        bandwidth_gbps, bottleneck, latency_us
            The smallest per-transfer bandwidth once every link direction is shared equally by the
            transfers crossing it, the index of the link that limits it, and the largest path latency.
        """
        paths = [self.path(a, b) for a, b in pairs if a != b]
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
        return best, where, max(p.latency_us for p in paths)

    # ----------------------------------------------------------------- scale-up domains
    def nvswitch_domain(self, gpus: list[str] | tuple[str, ...]) -> tuple[float, int, float] | None:
        """If every GPU links directly to one common NVSwitch / NVLink switch: (per-GPU effective
        bandwidth of the slowest such link, its index, switch round-trip latency); else None."""
        if not gpus:
            return None
        common: set[str] | None = None
        for g in gpus:
            sw = {s for s, _ in self._nvl.get(g, ())}
            common = sw if common is None else common & sw
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
