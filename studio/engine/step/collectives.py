"""All-reduce times from the measured collective tables, scaled by the drawn links.

aiconfigurator's tables time NCCL's all-reduce and the serving engine's custom (one-shot / two-shot)
all-reduce on 2, 4 and 8 GPUs of one box of each measured system. :func:`measured_allreduce` turns
them into a :class:`Measured` cost for a TP group of one island:

* an NVSwitch domain: the faster of the custom all-reduce and NCCL at each message size (what the
  engines' auto strategy picks); the custom all-reduce from TensorRT-LLM's table for every engine
  (:func:`_graph_timed` says why);
* PCIe (no NVLink): NCCL only — vLLM, SGLang and TensorRT-LLM turn their custom all-reduce off when
  the GPUs are not all NVLink-connected, so TP over PCIe runs NCCL's ring: the measured small-message
  floor of the silicon's PCIe box, plus the ring's 2(n−1)/n of the message over the drawn links
  (switch-attached GPUs, PIX/PXB, reach the switch's bandwidth; a ring through the CPU root complex
  or across sockets, PHB/NODE/SYS, the slower and shared host links). The measured box's own PCIe
  tree is unknown, so its bandwidth is not used;
* NVSwitch: the drawn links set the size scale: a message of S bytes over links of effective bandwidth B costs
  what S · B_measured / B took on the measured box (the latency floor of small messages stays, the
  bandwidth part scales). B_measured is the measured system's per-GPU link spec (its systems yaml)
  at the drawn link kind's efficiency.

Groups larger than 8, groups spanning islands, links whose figures a calibration profile fitted, mixed GPU types and GPUs without their own measured
silicon keep the α–β model of :mod:`studio.engine.comm`.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from typing import TYPE_CHECKING

import numpy as np

from studio.engine.step.kernels import Curve
from studio.engine.step.records import Record

if TYPE_CHECKING:
    from studio.core.hardware import GpuSpec
    from studio.engine.fabric.topology import Topology
    from studio.engine.step.kernels import Silicon


class Measured(Record):
    """Measured all-reduce curves (log size → log µs), each valid up to its largest size, and the
    size scale of the drawn links; time(S) = min over the curves of curve(S × scale). ``key``
    identifies the curves and scale (two replicas with equal keys take the same time)."""

    curves: tuple[tuple[tuple[float, ...], tuple[float, ...]], ...]
    scale: float
    provenance: str
    key: tuple = ()
    fast: tuple[Curve, ...] = ()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Measured) and (self.key, self.provenance) == (other.key, other.provenance)

    def __hash__(self) -> int:
        return hash((self.key, self.provenance))

    @staticmethod
    def of(curves: tuple[tuple[tuple[float, ...], tuple[float, ...]], ...], scale: float, provenance: str) -> Measured:
        return Measured(curves, scale, provenance, (scale, hash(curves)),
                        tuple(Curve(np.exp(np.asarray(x)), np.exp(np.asarray(t)), provenance) for x, t in curves))

    def time_us(self, size: np.ndarray | float) -> np.ndarray:
        ls = np.log(np.maximum(np.asarray(size, dtype=float) * self.scale, 1.0))
        best = self.fast[0].at_log(ls)
        for cv in self.fast[1:]:
            best = np.minimum(best, cv.at_log(ls))
        return best

    def time_one(self, size: float) -> float:
        """:meth:`time_us` of one size in Python floats (an evaluation asks a few hundred times)."""
        ls = math.log(max(size * self.scale, 1.0))
        best = math.inf
        for lx, lt in self.curves:
            if ls <= lx[0]:
                v = lt[0]
            elif ls >= lx[-1]:
                v = lt[-1] + ls - lx[-1]
            else:
                i = bisect_right(lx, ls) - 1
                w = (ls - lx[i]) / (lx[i + 1] - lx[i])
                v = lt[i] + w * (lt[i + 1] - lt[i])
            best = min(best, math.exp(v))
        return best


def measured_allreduce(topo: Topology, group: list[str], nvswitch: tuple[float, int, float] | None,
                       ring_bw: float, ring_link: int | None, engine: str, version: str | None,
                       eager: bool = False) -> Measured | None:
    """The measured all-reduce of ``group`` (one island), or None where the tables do not apply.
    ``eager``: the engine launches its decode steps without CUDA graphs (:func:`_eager_timed`)."""
    from studio.engine.step.kernels import collective_table, silicon_for

    n = len(group)
    types = {topo.gpu_type[g] for g in group}
    if n < 2 or n > 8 or len(types) != 1:
        return None
    spec = topo.cluster.gpu_specs[types.pop()]
    try:
        sil = silicon_for(spec, engine, version)
    except Exception:  # noqa: BLE001 - no tables for that engine: the α–β model stays
        return None
    if not sil.measured:
        return None
    ref = float(sil.peaks["intra_node_gbps"])
    pcie_box = ref <= float(sil.peaks.get("pcie_gbps") or 64.0) + 1e-6
    if nvswitch is not None and not pcie_box:
        bw, li, _lat = nvswitch
        names: tuple[str, ...] = ("ar_custom", "ar_nccl")
        eff = _efficiency(topo, li)
    elif nvswitch is None and pcie_box and ring_link is not None and \
            str(getattr(topo.link_family[ring_link], "value", topo.link_family[ring_link])) in ("pcie", "cpu"):
        # the measured PCIe box's tree (switches, root complexes, socket link) is not the drawn one:
        # its latency floor is kept, the bandwidth is the drawn ring's (below)
        tab = collective_table(sil, "ar_nccl", n)
        if tab is None or topo.link_kind[ring_link] in topo.fitted_kinds:
            return None
        sizes = tab.sizes
        steps = 2 * (n - 1)
        t = float(tab.times_us[0]) + sizes * (steps / n) / (ring_bw * 1e3)
        return Measured.of(((tuple(np.log(sizes).tolist()), tuple(np.log(t).tolist())),), 1.0,
                        f"{tab.provenance} latency floor {tab.times_us[0]:.1f} µs; bandwidth: NCCL ring over "
                        f"the drawn PCIe links ({ring_bw:.1f} GB/s per GPU; no custom all-reduce over PCIe)")
    else:
        return None
    if topo.link_kind[li] in topo.fitted_kinds:
        return None  # the user's own measurement of these links (a calibration profile) wins
    curves = []
    provs = []
    for name in names:
        tab = collective_table(_graph_timed(spec, sil) if name == "ar_custom" else sil, name, n)
        if tab is None:
            continue
        lx, lt = np.log(tab.sizes), np.log(tab.times_us)
        prov = tab.provenance
        if eager and name == "ar_custom":
            slow = collective_table(_eager_timed(spec, sil), name, n)
            if slow is not None:  # an eager call costs its launch or its kernel, whichever is longer
                lt = np.maximum(lt, np.interp(lx, np.log(slow.sizes), np.log(slow.times_us)))
                prov = f"{prov}, launched eagerly: at least the eager call of {slow.provenance}"
        curves.append((tuple(lx.tolist()), tuple(lt.tolist())))
        provs.append(prov)
    if not curves or not (bw > 0 and math.isfinite(bw)):
        return None
    scale = ref * eff / bw
    note = "" if abs(scale - 1.0) < 0.02 else f"; sizes scaled ×{scale:.2f} for the drawn links"
    return Measured.of(tuple(curves), scale, " / ".join(provs) + note)


def _graph_timed(spec: GpuSpec, sil: Silicon) -> Silicon:
    """The tables whose custom all-reduce stands for the kernel a served decode step launches.

    Served decode steps replay a CUDA graph, so an all-reduce costs its kernel alone. The vLLM and
    SGLang custom all-reduce tables of aiconfigurator-core 0.12.0 hold a flat floor (H200: vLLM
    12.6–13.3 µs, SGLang 16.1–17.4 µs) from 128 B to 64 KiB on 2, 4 and 8 GPUs alike — the host's
    launch time of an eager call, not the GPUs' exchange — while TensorRT-LLM's rises from 2.6 µs
    with the group and the message as a one-shot kernel does; above ~4 MiB the three agree within
    ~15 %. So every engine's custom all-reduce is timed from TensorRT-LLM's table (its provenance
    says so); NCCL's tables are the same measurement for all three engines."""
    from studio.engine.step.kernels import DEFAULT_ENGINE, silicon_for

    if sil.engine == DEFAULT_ENGINE:
        return sil
    try:
        return silicon_for(spec, DEFAULT_ENGINE)
    except Exception:  # noqa: BLE001 - no TensorRT-LLM tables for this silicon: the engine's own
        return sil


def _eager_timed(spec: GpuSpec, sil: Silicon) -> Silicon:
    """The tables whose custom all-reduce stands for one launched without a CUDA graph.

    An engine that runs its steps eagerly (TensorRT-LLM 0.12-0.17's TensorRT engines: the Triton
    backend of 0.14 builds the executor's ``ExtendedRuntimePerfKnobConfig(multiBlockMode,
    enableContextFMHAFP32Acc)``, leaving ``cudaGraphMode`` at its default ``false``; the backend
    reads a ``cuda_graph_mode`` parameter only from 0.15 on) pays each all-reduce as an eager call:
    the host's launch of the copy into the shared buffer and of the kernel, and the wait for the
    slowest of the group's independently launching ranks. The custom all-reduce tables measured that
    way are vLLM's (aiconfigurator-core 0.12.0; :func:`_graph_timed`: a floor of 12.6–13.3 µs on
    H200 from 128 B to 64 KiB, on 2, 4 and 8 GPUs alike), so an eager engine's custom all-reduce is
    timed from them; NCCL's tables are the same for every engine, and above ~4 MiB the engines'
    tables agree within ~15 %."""
    from studio.engine.step.kernels import silicon_for

    try:
        return silicon_for(spec, "vllm")
    except Exception:  # noqa: BLE001 - no vLLM tables for this silicon: the graph-timed ones
        return _graph_timed(spec, sil)


def _efficiency(topo: Topology, li: int) -> float:
    kind = topo.cluster.link_kinds[topo.link_kind[li]]
    return topo.link_bw[li] / (kind.bandwidth_gbps * topo.link_lanes[li]) if kind.bandwidth_gbps else 1.0
