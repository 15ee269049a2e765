"""The report's Fleet section: there when a fleet was planned, absent otherwise; its slot table
and figures are the plan's."""

from __future__ import annotations

import dataclasses

from studio.gui.report.document import Images, build_html
from studio.io.fleet_presets import load_traffic
from studio.service.fleet import FleetOptions, capacity_plan

FAKE = Images(src=lambda name: f"data:image/png;base64,{name}", width=600)


def test_fleet_section_only_with_a_plan(data, example):
    assert "Fleet for a day of traffic" not in build_html(data, FAKE)
    traffic = load_traffic("flat-batch").scaled_to_peak(2.0)
    fleet = capacity_plan(example, traffic, FleetOptions(5000.0, 100.0, requests=150))
    html = build_html(dataclasses.replace(data, fleet=fleet), FAKE)
    assert "Fleet for a day of traffic" in html
    section = html[html.index("Fleet for a day of traffic"):]
    assert section.count("<td>00:00</td>") == 1 and "<td>23:00</td>" in section
    assert f"{fleet.plan.kwh_per_day:,.0f} kWh per day" in section
    assert f"{int(fleet.plan.replicas.max())} ({int(fleet.plan.gpus.max())} GPUs at the peak)" in section
