"""The report's "Fleet for a day of traffic" section: the replicas each slot needs within the p99
SLO, cost, power, energy and emissions (:class:`studio.service.fleet.FleetResult`), as HTML. The
section is there when the report was asked with traffic (``layout-studio report --traffic``)."""

from __future__ import annotations

from html import escape

from studio.engine.fleet.traffic import clock
from studio.service import units
from studio.service.report.report_content import ReportData

#: Most rows of the slot table (a per-minute day is shown hour by hour).
MAX_ROWS = 24


def fleet_section(data: ReportData) -> list[str]:
    """The section's HTML blocks; none when no fleet was planned."""
    result = data.fleet
    if result is None:
        return []
    p, c = result.plan, result.capacity  # type: ignore[attr-defined]
    tr = p.traffic
    usd = units.usd
    rows = [
        ("Traffic", f"{tr.name}: peak {tr.peak_per_s:,.3g} req/s, {tr.requests_per_day:,.0f} requests per day "
                    f"({tr.slots} slots of {tr.slot_s / 60:,.0f} minutes)"),
        ("One replica", f"{result.layout.replace(dp=1).label} on {p.gpus_per_replica} GPUs holds {c.rate_per_s:,.3g} "  # type: ignore[attr-defined]
                        f"req/s within p99 TTFT and TPOT (simulated: {c.ttft_p99_ms:,.0f} ms and {c.tpot_p99_ms:,.1f} ms "
                        f"at that rate; {c.requests} requests, seed {c.seed})"),
        ("Replicas", f"{int(p.replicas.min())} to {int(p.replicas.max())} ({int(p.gpus.max())} GPUs at the peak), "
                     f"{p.headroom * 100:,.0f} % headroom; a new replica is ready in {p.ready.total_s:,.0f} s, so each "
                     "slot holds what the next ones need"),
        ("Cost", f"{usd(p.usd_per_day, 0)} per day, {usd(p.usd_per_day * 365.25 / 12, 0)} per month, "
                 f"{usd(p.usd_per_million_output_tokens)} per million output tokens ({p.gpu_hours_per_day:,.0f} "
                 f"GPU-hours per day; {p.reserved_replicas} reserved replicas, {p.pricing.burst} burst)"),
        ("Energy", f"{p.kwh_per_day:,.0f} kWh per day on the GPUs (peak {p.watts.max() / 1e3:,.1f} kW), "
                   f"{p.j_per_output_token:,.3g} J per output token; {p.facility_kwh_per_day:,.0f} kWh at PUE "
                   f"{p.facility.pue:g}, {p.kg_co2e_per_day:,.0f} kg CO2e per day at "
                   f"{p.facility.grid_g_co2e_per_kwh:g} g/kWh"),
    ]
    pairs = "".join(f"<tr><td><b>{escape(k)}</b></td><td>{escape(v)}</td></tr>" for k, v in rows)
    step = max(1, tr.slots // MAX_ROWS)
    slots = "".join(
        f"<tr><td>{clock(float(tr.starts_s[k]))}</td><td class=\"num\">{tr.rates_per_s[k]:,.3g}</td>"
        f"<td class=\"num\">{int(p.replicas[k])}</td><td class=\"num\">{int(p.gpus[k])}</td>"
        f"<td class=\"num\">{p.watts[k] / 1e3:,.1f}</td><td>{'yes' if p.slo_met[k] else 'NO'}</td></tr>"
        for k in range(0, tr.slots, step)
    )
    return [
        "<h2>Fleet for a day of traffic</h2>",
        f"<table>{pairs}</table>",
        '<table class="grid"><tr><th>start</th><th>req/s</th><th>replicas</th><th>GPUs</th><th>kW</th>'
        f"<th>SLO met</th></tr>{slots}</table>",
        '<p class="caption">Replicas per slot: the slot\'s rate with headroom over the rate one replica holds the '
        "SLO at (request simulation), asked for a ready time ahead (weights from storage, engine start-up, CUDA "
        "graphs). Power from what the replicas' iterations do, bounded by board power (docs/fleet.md).</p>",
    ]
