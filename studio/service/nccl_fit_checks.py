"""Does an nccl-tests log fit the link kind it is said to have run over? ``calibrate nccl`` fits
whatever it is told to; these checks say when the run cannot have been on that link kind alone:
more ranks than any bundled server or rack joins with it (a two-node log called NVLink), or a peak
bus bandwidth far above or below what the link kind carries."""

from __future__ import annotations

from studio.core.hardware import LinkKind, NodeTemplate

#: Peak busbw above this multiple of a (non-network) link kind's spec bandwidth cannot have run on
#: it. NVLink SHARP all-reduces reach ~1.07× the NVLink 4 line rate (480 of 450 GB/s, NVIDIA/nccl-tests
#: issue #212), so the margin is wide.
TOO_FAST = 1.3
#: Peak busbw below this multiple of the link kind's effective bandwidth (spec × efficiency), in a
#: log that reaches :data:`LARGE_MESSAGE_BYTES`, is a slower path than that link kind: the slowest
#: public run on its nominal fabric (2× H100 NVLink bridge, 116 of 117 effective GB/s, NVIDIA/nccl
#: issue #1161) is far above it.
TOO_SLOW = 0.15
#: The smallest message at which a run reaches its link's bandwidth (busbw still grows below it:
#: shared/reference/collectives.md 1.1).
LARGE_MESSAGE_BYTES = 64 * 1024 * 1024


def largest_domain(kind: LinkKind, templates: list[NodeTemplate]) -> int | None:
    """The most GPUs a bundled node template joins with ``kind`` (``None``: no template uses it,
    or it is a network, which joins any number of nodes). NVLink-bridge pairs join 2 GPUs."""
    if kind.family.is_network:
        return None
    sizes = []
    for t in templates:
        if kind.family.is_scale_up and t.scale_up_link == kind.id:
            sizes.append(2 if t.fabric == "bridge-pairs" else t.gpus_per_node * t.trays)
        elif not kind.family.is_scale_up and kind.id in (t.pcie_switch_link, t.scale_up_link):
            sizes.append(t.gpus_per_node)
    return max(sizes) if sizes else None


def link_kind_mismatches(
    kind: LinkKind,
    ranks: int,
    peak_busbw_gbps: float | None,
    largest_message_bytes: int,
    templates: list[NodeTemplate],
) -> list[str]:
    """Warnings (one sentence each; none when the log fits) for a log of ``ranks`` ranks whose
    largest bus bandwidth is ``peak_busbw_gbps`` said to have run over ``kind``.

    Parameters
    ----------
    kind:
        The link kind the fit is for (``--link-kind``).
    ranks:
        Ranks of the run.
    peak_busbw_gbps:
        Largest busbw of any row (GB/s), None when the log has none.
    largest_message_bytes:
        Size of the log's largest message: the bandwidth checks need one of
        :data:`LARGE_MESSAGE_BYTES` or more.
    templates:
        The bundled node templates (what joins GPUs with which link kind).
    """
    out: list[str] = []
    domain = largest_domain(kind, templates)
    if domain is not None and ranks > domain:
        out.append(
            f"the log ran {ranks} ranks, but {kind.name} joins at most {domain} GPUs in any bundled "
            f"server or rack: a run over more than one node also crossed the network, and the fit "
            f"puts all of its time on {kind.id}; fit the network link kind (e.g. ib-ndr, roce-400g) "
            f"or a run inside one node"
        )
    if peak_busbw_gbps is None or peak_busbw_gbps <= 0:
        return out
    if not kind.family.is_network and peak_busbw_gbps > TOO_FAST * kind.bandwidth_gbps:
        out.append(
            f"the log's peak bus bandwidth {peak_busbw_gbps:,.1f} GB/s is {peak_busbw_gbps / kind.bandwidth_gbps:.1f}× "
            f"the {kind.bandwidth_gbps:,.0f} GB/s {kind.name} carries: it ran over a faster link kind"
        )
    effective = kind.bandwidth_gbps * kind.efficiency
    if largest_message_bytes >= LARGE_MESSAGE_BYTES and peak_busbw_gbps < TOO_SLOW * effective:
        out.append(
            f"the log's peak bus bandwidth {peak_busbw_gbps:,.1f} GB/s is {peak_busbw_gbps / effective:.0%} of the "
            f"{effective:,.0f} GB/s {kind.name} reaches in collectives: it ran over a slower path "
            f"(PCIe, a socket link or the network)"
        )
    return out


def log_mismatches(logs: list, ranks: int, kind: LinkKind, templates: list[NodeTemplate]) -> list[str]:
    """:func:`link_kind_mismatches` of parsed nccl-tests logs (:class:`studio.io.importers.nccl_log.NcclLog`):
    their largest busbw (out-of-place or in-place) and their largest message."""
    rows = [r for log in logs for r in log.rows]
    busbw = [b for r in rows for b in (r.busbw_gbps, r.in_busbw_gbps) if b is not None]
    largest = max((r.size_bytes for r in rows), default=0)
    return link_kind_mismatches(kind, ranks, max(busbw, default=None), largest, templates)
