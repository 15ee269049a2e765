"""The expert all-to-all of each backend (``serving.features.all2all_backend``), as the collectives
the step model times (``lc.alltoall``) — the default cost is the NCCL-style all-to-all of
:func:`studio.engine.fabric.comm.alltoall`, which sends each token once to every EP rank holding one
of its experts.

* DeepEP normal (high-throughput) kernels: the same traffic at the share of the link bandwidth
  DeepEP published (153 of ~160 GB/s NVLink on H800; the network link as drawn);
* DeepEP low-latency kernels: each token goes once per expert (not once per rank), at the
  bandwidth DeepEP published for its EP size (H800 + CX7, 39-127 GB/s), one transfer latency fixed;
* SGLang ``deepep`` (``deepep_mode`` auto): the normal kernels for prefill-sized batches, the
  low-latency ones for decode-sized: each message takes the faster of the two;
* any other name keeps the default cost (no public table); :func:`backend_class` says which.
"""

from __future__ import annotations

import math

import numpy as np

from studio.engine.fabric.comm import GB_PER_S_TO_BYTES_PER_US, Algo, Collective
from studio.engine.fabric.topology import Topology
from studio.engine.features.data import figure
from studio.engine.step.constants import Constants


def backend_class(engine: str, name: str | None) -> str | None:
    """``deepep_normal``, ``deepep_low_latency`` or ``deepep_auto`` for a backend with a public
    table, else ``None`` (the default all-to-all cost)."""
    if not name:
        return None
    names = figure("all2all", "names").get(engine, {})
    out = names.get(name) if isinstance(names, dict) and name != "source" else None
    return str(out) if out else None


def low_latency_gbps(ranks: int) -> float:
    """DeepEP low-latency bandwidth (GB/s) at ``ranks`` EP ranks: dispatch and combine, each
    interpolated in log EP size over DeepEP's table, their harmonic mean (a layer runs both)."""
    ep = np.log(np.asarray(figure("all2all", "deepep_low_latency", "ep"), dtype=float))
    x = math.log(max(float(ranks), 1.0))
    d = float(np.interp(x, ep, np.asarray(figure("all2all", "deepep_low_latency", "dispatch_gbps"), dtype=float)))
    c = float(np.interp(x, ep, np.asarray(figure("all2all", "deepep_low_latency", "combine_gbps"), dtype=float)))
    return 2.0 / (1.0 / d + 1.0 / c)


def copies_per_rank_copy(topk: int, ranks: int) -> float:
    """Per-expert copies of a token over its per-rank copies: ``k`` against the distinct ranks its
    ``k`` experts fall on (the remote share is the same for both)."""
    if ranks <= 1 or topk <= 0:
        return 1.0
    distinct = ranks * (1.0 - (1.0 - 1.0 / ranks) ** topk)
    return topk / distinct


def _normal(col: Collective, topo: Topology) -> tuple[Algo, ...]:
    spans = len(topo.islands_of(col.group)) > 1
    share = float(figure("all2all", "deepep_normal",
                         "bandwidth_share_network" if spans else "bandwidth_share_scale_up"))
    return tuple(a.replace(name="DeepEP normal", us_per_byte=a.us_per_byte / share,
                           bandwidth_gbps=a.bandwidth_gbps * share,
                           note=f"{a.note}; DeepEP normal kernels at {share:.3g} of the link") for a in col.algos)


def _low_latency(col: Collective, c: Constants, topk: int, ranks: int) -> tuple[Algo, ...]:
    bw = low_latency_gbps(len(col.group))
    ratio = copies_per_rank_copy(topk, ranks)
    a0 = col.algos[0]
    return (Algo(name="DeepEP low-latency", alpha_us=c.p2p_base_latency_us,
                 us_per_byte=ratio / (bw * GB_PER_S_TO_BYTES_PER_US), max_bytes=np.inf, bandwidth_gbps=bw / ratio,
                 bottleneck_link=a0.bottleneck_link, bottleneck_kind=a0.bottleneck_kind,
                 note=f"DeepEP low-latency kernels: {ratio:.2f}x the bytes (one copy per expert) at {bw:.0f} GB/s"),)


def backend_collectives(alltoall: list[list[Collective]], cls: str, topo: Topology, c: Constants, topk: int,
                        ranks: int) -> list[list[Collective]]:
    """``alltoall`` ([stage][replica group]) re-timed for backend class ``cls``; ``ranks`` is the
    EP ranks a token's experts are spread over (``ep // tp``)."""
    out: list[list[Collective]] = []
    for stage in alltoall:
        row = []
        for col in stage:
            if not col.algos or col.measured is not None:
                row.append(col)
                continue
            if cls == "deepep_normal":
                algos = _normal(col, topo)
            elif cls == "deepep_low_latency":
                algos = _low_latency(col, c, topk, ranks)
            else:  # deepep_auto: whichever of the two is faster for the message
                algos = _normal(col, topo) + _low_latency(col, c, topk, ranks)
            row.append(Collective(col.kind, col.group, algos))
        out.append(row)
    return out
