"""Compare placements of one TP × PP × DP layout: which GPUs form each TP group.

On a regular machine (every GPU on one NVSwitch) any placement inside a node costs the same; on an
irregular one — NVLink-bridge pairs in a PCIe box, two sockets, several nodes — the TP group's
all-reduce runs at the speed of the slowest hop between its GPUs, so *which* GPUs form a group
decides the decode step time. :func:`candidate_placements` builds a few placements (cluster order,
interleaved, and two greedy ones that keep TP groups on the fastest links of the drawn graph),
:func:`compare_placements` costs each with :func:`studio.engine.evaluate`, ranks them and says why
the winner wins.
"""

from __future__ import annotations

from dataclasses import dataclass

from studio.core.errors import StudioError
from studio.core.layout import Layout
from studio.core.project import Project
from studio.engine.fabric.topology import Topology, topology_of
from studio.engine.plan.evaluate import evaluate, resolve_calibration
from studio.engine.plan.results import PlanResult

#: Above this many GPUs the greedy placements only look inside the seed GPU's node first.
MAX_PLACEMENT_GPUS = 4096


@dataclass(frozen=True)
class Candidate:
    """One way to put the ranks of a layout on GPUs (before costing)."""

    strategy: str
    name: str
    description: str
    placement: tuple[str, ...]


@dataclass(frozen=True)
class PlacementOption:
    """A costed placement.

    Attributes
    ----------
    tp_link_kind:
        Link kind of the slowest hop inside any TP group ("" when TP = 1).
    tp_bandwidth_gbps:
        Effective bandwidth of that hop, GB/s (``inf`` when TP = 1).
    plan:
        :func:`evaluate` of the layout with this placement, or ``None`` when the engine refused it
        (``error`` says why).
    also:
        Names of other strategies that produced the same placement.
    """

    candidate: Candidate
    tp_link_kind: str
    tp_bandwidth_gbps: float
    plan: PlanResult | None
    error: str = ""
    also: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return self.candidate.name

    @property
    def placement(self) -> tuple[str, ...]:
        return self.candidate.placement

    @property
    def tokens_per_s_per_gpu(self) -> float:
        return self.plan.output_tokens_per_s_per_gpu if self.plan is not None and self.plan.fits else 0.0


@dataclass(frozen=True)
class PlacementComparison:
    """Every distinct candidate placement of one layout, best first, with the reasons."""

    layout: Layout
    options: tuple[PlacementOption, ...]
    reasons: tuple[str, ...]

    @property
    def best(self) -> PlacementOption | None:
        return self.options[0] if self.options and self.options[0].plan is not None else None

    @property
    def differs(self) -> bool:
        """Whether the placements cost differently at all (an irregular topology)."""
        tps = {round(o.tokens_per_s_per_gpu, 6) for o in self.options if o.plan is not None}
        return len(tps) > 1


# ---------------------------------------------------------------------------------- candidates
def candidate_placements(project: Project, layout: Layout) -> list[Candidate]:
    """Distinct placements of ``layout`` on the project's cluster, in a fixed order.

    Raises
    ------
    StudioError
        If the layout needs more GPUs than the cluster has.
    """
    topo = topology_for(project)
    world = layout.world_size
    gpus = list(topo.gpu_ids)
    if world > len(gpus):
        raise StudioError(
            f"layout {layout.label} needs {world} GPUs; the cluster has {len(gpus)}"
        )
    if len(gpus) > MAX_PLACEMENT_GPUS:
        raise StudioError(
            f"placement comparison handles up to {MAX_PLACEMENT_GPUS} GPUs; this cluster has {len(gpus)}"
        )
    tp, groups_needed = layout.tp, layout.pp * layout.dp
    out = [
        Candidate("contiguous", "Cluster order",
                  "rank r on the r-th GPU (node by node, slot by slot), the engines' default",
                  tuple(gpus[:world])),
    ]
    if tp > 1 and groups_needed > 1:
        out.append(Candidate(
            "interleaved", "Interleaved",
            f"TP rank t of group g on GPU t·{groups_needed}+g: each TP group strided across the box",
            tuple(gpus[(r % tp) * groups_needed + r // tp] for r in range(world)),
        ))
    if tp > 1:
        seeded = _order_groups(topo, _seeded_groups(topo, gpus, tp, groups_needed))
        out.append(Candidate(
            "fastest-seeded", "Fastest links (grow)",
            "each TP group grown from the first free GPU by adding the GPU with the widest path to it",
            tuple(g for grp in seeded for g in grp),
        ))
        if tp & (tp - 1) == 0:
            merged = _order_groups(topo, _merged_groups(topo, gpus, tp, groups_needed))
            out.append(Candidate(
                "fastest-merge", "Fastest links (pair up)",
                "GPUs paired over their widest links, then pairs of pairs, until groups of TP",
                tuple(g for grp in merged for g in grp),
            ))
    return out


def topology_for(project: Project) -> Topology:
    """The cached link graph of the project's cluster under its selected calibration."""
    cal = resolve_calibration(project, None)
    return topology_of(project.cluster, cal.link_fits if cal else None)


def _bw(topo: Topology, a: str, b: str) -> tuple[float, float]:
    """(bandwidth, −latency) of the widest path; (−1, 0) when no path joins them."""
    try:
        p = topo.path(a, b)
    except StudioError:
        return -1.0, 0.0
    return p.bandwidth_gbps, -p.latency_us


def _pool_near(topo: Topology, seed: str, pool: list[str], need: int) -> list[str]:
    same = [g for g in pool if topo.gpu_node[g] == topo.gpu_node[seed]]
    return same if len(same) >= need else list(pool)  # a copy: the caller removes from both


def _seeded_groups(topo: Topology, gpus: list[str], tp: int, n_groups: int) -> list[list[str]]:
    pos = {g: i for i, g in enumerate(gpus)}
    pool = list(gpus)
    groups: list[list[str]] = []
    while len(groups) < n_groups:
        seed = pool.pop(0)
        group = [seed]
        near = _pool_near(topo, seed, pool, tp - 1)
        while len(group) < tp:
            best = max(near, key=lambda g: (min(_bw(topo, m, g) for m in group), -pos[g]))
            group.append(best)
            near.remove(best)
            pool.remove(best)
        groups.append(group)
    return groups


def _merged_groups(topo: Topology, gpus: list[str], tp: int, n_groups: int) -> list[list[str]]:
    """Agglomerate: pair up clusters of equal size by their widest joining path, greedily."""
    pos = {g: i for i, g in enumerate(gpus)}
    clusters: list[list[str]] = [[g] for g in gpus]
    size = 1
    while size < tp:
        scored = []
        for i in range(len(clusters)):
            for j in range(i + 1, len(clusters)):
                a, b = clusters[i], clusters[j]
                if topo.gpu_node[a[0]] != topo.gpu_node[b[0]] and len(gpus) > 64:
                    continue  # big clusters: pair inside nodes first (leftovers merged below)
                bw = min(_bw(topo, x, y) for x in a for y in b)
                scored.append((bw, -i, -j, i, j))
        scored.sort(reverse=True)
        used: set[int] = set()
        nxt: list[list[str]] = []
        for *_key, i, j in scored:
            if i in used or j in used:
                continue
            used.update((i, j))
            nxt.append(clusters[i] + clusters[j])
        rest = [c for k, c in enumerate(clusters) if k not in used]
        while len(rest) >= 2:  # odd leftovers: join in cluster order
            nxt.append(rest.pop(0) + rest.pop(0))
        nxt.sort(key=lambda c: min(pos[g] for g in c))
        clusters = [sorted(c, key=pos.__getitem__) for c in nxt]
        size *= 2
    return clusters[:n_groups]


def _order_groups(topo: Topology, groups: list[list[str]]) -> list[list[str]]:
    """Chain groups so consecutive ones (the next stage) are near: widest path from the last."""
    if len(groups) <= 2:
        return groups
    left = list(groups)
    out = [left.pop(0)]
    while left:
        tail = out[-1][0]
        nxt = max(range(len(left)), key=lambda k: (_bw(topo, tail, left[k][0]), -k))
        out.append(left.pop(nxt))
    return out


# ---------------------------------------------------------------------------------- comparison
def tp_bottleneck(topo: Topology, layout: Layout, placement: tuple[str, ...]) -> tuple[str, float]:
    """Link kind and bandwidth (GB/s) of the slowest hop between two GPUs of any TP group."""
    if layout.tp == 1:
        return "", float("inf")
    worst_kind, worst_bw = "", float("inf")
    for ranks in layout.tp_groups():
        grp = [placement[r] for r in ranks]
        for i, a in enumerate(grp):
            for b in grp[i + 1:]:
                try:
                    p = topo.path(a, b)
                except StudioError:
                    return "no link", 0.0
                if p.bandwidth_gbps < worst_bw:
                    worst_kind, worst_bw = p.bottleneck_kind or "", p.bandwidth_gbps
    return worst_kind, worst_bw


def compare_placements(project: Project, layout: Layout | None = None) -> PlacementComparison:
    """Cost every candidate placement of ``layout`` (default: the project's), best first.

    Ranking: fitting first, then output tokens/s per GPU (higher first), then TPOT (lower first),
    then the candidate order (cluster order wins ties, so an equal alternative never replaces it).
    """
    layout = layout or project.layout
    topo = topology_for(project)
    seen: dict[tuple[str, ...], int] = {}
    raw: list[tuple[Candidate, list[str]]] = []
    for cand in candidate_placements(project, layout):
        if cand.placement in seen:
            raw[seen[cand.placement]][1].append(cand.name)
            continue
        seen[cand.placement] = len(raw)
        raw.append((cand, []))
    options = []
    for cand, also in raw:
        kind, bw = tp_bottleneck(topo, layout, cand.placement)
        try:
            plan = evaluate(project, layout.replace(placement=cand.placement))
            err = ""
        except StudioError as exc:
            plan, err = None, exc.message
        options.append(PlacementOption(cand, kind, bw, plan, err, tuple(also)))
    order = sorted(range(len(options)), key=lambda k: _rank_key(options[k], k))
    ranked = tuple(options[k] for k in order)
    return PlacementComparison(layout, ranked, tuple(_reasons(ranked)))


def _rank_key(o: PlacementOption, k: int) -> tuple:
    if o.plan is None:
        return (2, 0.0, 0.0, k)
    return (0 if o.plan.fits else 1, -o.plan.output_tokens_per_s_per_gpu, o.plan.tpot_ms, k)


def _link(o: PlacementOption) -> str:
    if not o.tp_link_kind:
        return "no TP all-reduce (TP = 1)"
    return f"{o.tp_link_kind} ({o.tp_bandwidth_gbps:,.0f} GB/s)"


def _reasons(options: tuple[PlacementOption, ...]) -> list[str]:
    if not options or options[0].plan is None:
        why = options[0].error if options else "no candidate placements"
        return [f"no placement can be costed: {why}"]
    best = options[0]
    bp = best.plan
    assert bp is not None
    out = [
        f"{best.name} wins: the slowest hop inside a TP group is {_link(best)}; TP all-reduce "
        f"{bp.allreduce_us_per_layer_decode:,.1f} µs per layer in decode, TPOT {bp.tpot_ms:,.1f} ms, "
        f"{bp.output_tokens_per_s_per_gpu:,.1f} tok/s per GPU"
    ]
    for o in options[1:]:
        if o.plan is None:
            out.append(f"{o.name} cannot run: {o.error}")
            continue
        p = o.plan
        d = (p.output_tokens_per_s_per_gpu - bp.output_tokens_per_s_per_gpu) / max(bp.output_tokens_per_s_per_gpu, 1e-12)
        if abs(d) < 0.005 and abs(p.tpot_ms - bp.tpot_ms) < 0.01 * bp.tpot_ms:
            out.append(f"{o.name} costs the same (its TP groups also ride {_link(o)})")
            continue
        out.append(
            f"{o.name}: {d:+.0%} tok/s per GPU — its TP groups cross {_link(o)}, all-reduce "
            f"{p.allreduce_us_per_layer_decode:,.1f} µs vs {bp.allreduce_us_per_layer_decode:,.1f} µs per layer, "
            f"TPOT {p.tpot_ms:,.1f} ms vs {bp.tpot_ms:,.1f} ms"
            + ("" if p.fits else f"; does not fit: {p.fit_reason}")
        )
    return out
