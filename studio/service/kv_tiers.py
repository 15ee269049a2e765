"""KV tiers against the drawn nodes: each node template's host memory, NVMe and host link (from the
presets) bound the tiers a project asks for, and give the link a host hit is loaded over."""

from __future__ import annotations

from dataclasses import dataclass

from studio.core.errors import StudioError
from studio.core.project import Project
from studio.core.settings.reuse import KVTiers
from studio.core.units import GIB
from studio.engine.plan.results import PlanResult


def node_limits(project: Project) -> tuple[float | None, float | None, float | None]:
    """Smallest host memory (GiB), NVMe (GiB) and host link (GB/s per GPU) over the project's nodes'
    templates; None where a template does not publish it or a node has no template."""
    from studio.io.presets import load_catalog

    cat = load_catalog()
    host: list[float | None] = []
    nvme: list[float | None] = []
    link: list[float | None] = []
    for tid in {n.template for n in project.cluster.nodes}:
        t = cat.nodes.get(tid) if tid else None
        host.append(t.host_memory_gib if t else None)
        nvme.append(t.nvme_gib if t else None)
        link.append(t.host_kv_gbps if t else None)

    def smallest(xs: list[float | None]) -> float | None:
        return None if not xs or None in xs else min(x for x in xs if x is not None)

    return smallest(host), smallest(nvme), smallest(link)


def checked_tiers(project: Project, tiers: KVTiers) -> KVTiers:
    """``tiers`` with the nodes' host link filled in, after checking each tier fits its node.

    Raises
    ------
    StudioError
        A tier is larger than the node's host memory or NVMe, or the measured hits are placed in a
        tier of size 0 (the message names the field).
    """
    host, nvme, link = node_limits(project)
    if host is not None and tiers.host_gib > host:
        raise StudioError(f"kv_tiers.host_gib {tiers.host_gib:g} GiB is more than the node's host memory "
                          f"({host:g} GiB per node)")
    if nvme is not None and tiers.disk_gib > nvme:
        raise StudioError(f"kv_tiers.disk_gib {tiers.disk_gib:g} GiB is more than the node's local NVMe "
                          f"({nvme:g} GiB per node)")
    hit_tier = project.workload.reuse.hit_tier
    if (hit_tier == "host" and not tiers.host_gib) or (hit_tier == "disk" and not tiers.disk_gib):
        field = "host_gib" if hit_tier == "host" else "disk_gib"
        raise StudioError(f"reuse.hit_tier '{hit_tier}' serves the measured hits from a tier the project has not: "
                          f"kv_tiers.{field} is 0")
    _check_engine(project, tiers)
    if link is not None and tiers.host_link_gbps is None and (tiers.host_gib or tiers.disk_gib):
        return tiers.replace(host_link_gbps=link)
    return tiers


def _check_engine(project: Project, tiers: KVTiers) -> None:
    """Refuse a tier the engine version has no setting for (``presets/engines/rules.json``)."""
    from studio.io.export.checks.startup_rules import version_in
    from studio.io.export.features import feature_rules

    sv = project.serving
    names = {"vllm": "vLLM", "trtllm": "TensorRT-LLM", "sglang": "SGLang"}
    for field, feature, size in (("host_gib", "kv_host_tier", tiers.host_gib), ("disk_gib", "kv_disk_tier", tiers.disk_gib)):
        if not size:
            continue
        rule = feature_rules().get(feature, {})
        entry = rule.get(sv.runtime)
        label = names.get(sv.runtime, sv.runtime)
        if not isinstance(entry, dict):
            raise StudioError(f"kv_tiers.{field}: {label} has no setting for {rule.get('says', feature)}; set it to 0 or pick "
                              "an engine that has one (presets/engines/rules.json)")
        if sv.runtime_version is not None and not version_in(sv.runtime_version, str(entry["versions"])):
            raise StudioError(f"kv_tiers.{field}: {label} {sv.runtime_version} has no {entry['key']} (versions "
                              f"{entry['versions']}); set it to 0 or choose a newer version")


@dataclass(frozen=True)
class TierUse:
    """One KV tier of a replica as the memory view and the report show it.

    ``capacity_gib``: KV the tier holds for one replica; ``running_gib``: what the running batch
    takes of it (HBM only); ``prefix_gib``: what the reused prefixes (the working set) fill of the
    rest; ``hit_rate``: share of prompt tokens served from it; ``node_gib``: the node's own host
    memory or NVMe from its template (None for HBM, or a node without a template).
    """

    name: str
    capacity_gib: float
    running_gib: float
    prefix_gib: float
    hit_rate: float
    node_gib: float | None

    @property
    def used_gib(self) -> float:
        return self.running_gib + self.prefix_gib


def working_set_tokens(project: Project, plan: PlanResult) -> float:
    """KV tokens of one replica's reused prefixes: the system prompt once, the history of every
    conversation waiting for its next turn (users between turns × their history), and every
    re-read document. The request rate is the plan's (the load's rate per replica, or the batch's
    users each taking a request's latency plus the think time)."""
    wl = project.workload
    r = wl.reuse
    isl, osl = float(wl.isl), float(wl.osl)
    hist = r.mean_history_tokens()
    rest = max(isl - r.system_prompt_tokens - hist, 0.0)
    doc = r.document_share * rest
    turn_s = plan.request_latency_ms / 1e3 + r.think_time_s
    if wl.load.mode == "rate" and wl.load.rate_per_s:
        rate = wl.load.rate_per_s / max(plan.layout.replicas, 1)
    else:
        rate = plan.batch / max(turn_s, 1e-9)
    conversations = rate * turn_s * (hist + rest - doc + osl) if r.turns > 1 else 0.0
    return float(r.system_prompt_tokens) + conversations + r.documents * doc


def tier_use(project: Project, plan: PlanResult) -> list[TierUse]:
    """HBM, host DRAM and NVMe of one replica of ``plan``: capacity, what the running batch and the
    working set fill (in that order, HBM first, as the LRU fills them) and the hits of each; empty
    when the plan has no prefix cache."""
    pc = plan.prefix_cache
    if pc is None:
        return []
    wl = project.workload
    kv = project.model.kv_bytes_per_token(project.serving.kv_dtype)
    running = min(plan.batch * float(wl.isl + wl.osl) - (plan.batch - 1) * wl.reuse.system_prompt_tokens,
                  pc["capacity_tokens_hbm"])
    left = working_set_tokens(project, plan)
    host_node, nvme_node, _link = node_limits(project)
    out = []
    for name, key, base, node in (("HBM", "hbm", running, None), ("host DRAM", "host", 0.0, host_node),
                                  ("NVMe", "disk", 0.0, nvme_node)):
        cap = pc[f"capacity_tokens_{key}"]
        kept = min(max(cap - base, 0.0), left)
        left -= kept
        out.append(TierUse(name, cap * kv / GIB, base * kv / GIB, kept * kv / GIB, pc[f"hit_rate_{key}"], node))
    return out


def node_tier_limits(project: Project) -> dict[str, tuple[float | None, float | None]]:
    """Host memory and NVMe (GiB) of each node, from its template (None where not published)."""
    from studio.io.presets import load_catalog

    cat = load_catalog()
    out: dict[str, tuple[float | None, float | None]] = {}
    for n in project.cluster.nodes:
        t = cat.nodes.get(n.template) if n.template else None
        out[n.id] = (t.host_memory_gib if t else None, t.nvme_gib if t else None)
    return out
