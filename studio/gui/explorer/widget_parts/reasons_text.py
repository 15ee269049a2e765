"""Texts of the Explorer's reasons panel: the best layout under an SLO, and why no disaggregated
candidate is shown."""

from __future__ import annotations

import html

from studio.service.slo import SloReport


def no_pools_text(sw) -> str:
    """Why no disaggregated candidate is shown: none could be placed or costed (with the engine's
    most frequent reason), none runs, or none meets the targets (only when targets are set)."""
    wl = sw.project.workload
    if not sw.rows:
        why = max(sw.skipped.items(), key=lambda kv: kv[1])[0] if sw.skipped else "no split can be placed on these GPUs"
        return f"no pool split of {sw.combinations:,} tried can be costed: {why}"
    targets = [t for t in (f"TTFT ≤ {wl.ttft_ms:,.0f} ms" if wl.ttft_ms else "",
                           f"TPOT ≤ {wl.tpot_ms:,.1f} ms" if wl.tpot_ms else "") if t]
    if targets:
        return f"none of {len(sw.rows):,} pool splits × decode batches meets the targets ({', '.join(targets)})"
    rate = f" at {wl.load.rate_per_s:g} req/s" if wl.load.mode == "rate" and wl.load.rate_per_s else ""
    return f"all {len(sw.rows):,} pool splits × decode batches are saturated{rate}: lower the rate or add GPUs"
def slo_line(slo: SloReport) -> str:
    """The reasons' first line under an SLO: the best layout meeting it, with its figures, or none."""
    head = f"<b>Best meeting the SLO ({html.escape(slo.targets.text)}):</b> "
    if slo.best is None:
        return head + (f"none of the {len(slo.checked)} layouts checked (lower the rate, raise the targets or "
                       "add GPUs)")
    e = slo.checked[slo.best]
    return head + html.escape(f"{e.layout} M={e.micro_batches}: p99 TTFT {e.ttft_p99_ms:,.0f} ms, p99 TPOT "
                              f"{e.tpot_p99_ms:,.1f} ms, saturation {e.saturation_rate_per_s:.3g} req/s")
