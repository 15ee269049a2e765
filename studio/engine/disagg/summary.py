"""A disaggregated plan's figures in words, written once for every reader: ``plan --disagg``,
the Serving mode panel's summary and the disaggregated export's header. Each figure follows the
plan's status (:attr:`studio.engine.disagg.results.DisaggResult.status`): a figure the status voids
(an open loop past saturation has no TTFT; pools that do not fit have no throughput) shows the
status's headline instead of a number, in every reader alike."""

from __future__ import annotations

from studio.core.units import MIB, figure
from studio.engine.disagg.results import DisaggResult


def figures(res: DisaggResult) -> dict[str, str]:
    """``TTFT``, ``TPOT``, ``throughput`` and ``KV transfer`` of ``res``, each its value in words
    (without the name), e.g. ``{"TTFT": "412.3 ms = queue 1.2 + prefill 408 + KV transfer 3.1", …}``."""
    st, t = res.status, res.transfer
    gone = f"- ({st.headline})"
    ttft = (
        f"{figure(res.ttft_ms)} ms = queue {figure(res.queue_ms)} + prefill {figure(res.prefill_ms)} + "
        f"KV transfer {figure(t.time_ms)}"
    )
    tpot = f"{figure(res.tpot_ms)} ms (decode-only iterations, no prefill interference)"
    throughput = (
        f"{figure(res.output_tokens_per_s)} output tokens/s ({figure(res.output_tokens_per_s_per_gpu)} per GPU); "
        f"limited by the {res.limited_by} at {figure(res.saturation_rate_per_s)} req/s"
    )
    transfer = (
        f"{figure(t.bytes_per_request / MIB)} MiB per request, {figure(t.time_ms)} ms over "
        f"{t.bottleneck_name or 'the same GPU'} ({t.src_gpu} → {t.dst_gpu})"
    )
    out = {
        "TTFT": ttft if st.shows("ttft") else gone,
        "TPOT": tpot if st.shows("tpot") else gone,
        "throughput": throughput if st.shows("throughput") else gone,
        "KV transfer": transfer,
    }
    if (pc := res.prefix_cache) is not None:  # only when the project caches prefixes
        out["prefix cache"] = (
            f"{pc['hit_rate']:.0%} of each prompt from the prefill pool's cache (HBM {pc['hit_rate_hbm']:.0%}, "
            f"host {pc['hit_rate_host']:.0%}, NVMe {pc['hit_rate_disk']:.0%}): "
            f"{figure(pc['prefilled_tokens'])} of {figure(pc['prompt_tokens'])} tokens prefilled, "
            f"{figure(pc['saved_prefill_tokens'])} saved per request"
        )
    return out


def summary_lines(res: DisaggResult) -> list[str]:
    """One line per figure of :func:`figures`: ``TTFT 412.3 ms = queue …``."""
    names = {"throughput": "Throughput", "prefix cache": "Prefix cache"}
    return [f"{names.get(k, k)} {v}" for k, v in figures(res).items()]
