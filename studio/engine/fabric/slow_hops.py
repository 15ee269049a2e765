"""The slow TP hop, defined once: a TP all-reduce whose slowest hop is not a scale-up link.

The slowest hop of an all-reduce is the bottleneck link of the algorithm the runtime picks for the
message (:meth:`~studio.engine.fabric.comm.Collective.pick`); it is slow when that link's family is
not a scale-up one (PCIe, a NIC, a host bridge) — see
:attr:`studio.core.hardware.LinkFamily.is_scale_up`. The plan's ``TP_OVER_SLOW_LINK`` warning and
the links and GPUs the canvas marks both come from :func:`slow_tp_hops`.
"""

from __future__ import annotations

from studio.engine.fabric.comm import Collective
from studio.engine.fabric.topology import Topology


def slow_tp_hops(allreduce: list[list[Collective]], topo: Topology, size: float) -> list[tuple[tuple[str, ...], str]]:
    """``(GPUs of the group, bottleneck link)`` of every TP all-reduce (``allreduce[stage][replica]``)
    whose slowest hop for a message of ``size`` bytes is not a scale-up link."""
    hits: list[tuple[tuple[str, ...], str]] = []
    for cols in allreduce:
        for col in cols:
            if len(col.group) < 2:
                continue
            algo = col.pick(size)
            if algo is None or not algo.bottleneck_link:
                continue
            if not topo.link_family[topo.link_pos[algo.bottleneck_link]].is_scale_up:
                hits.append((col.group, algo.bottleneck_link))
    return hits
