"""``sweep --traffic``: the sweep's fitting layouts ranked by cost per day at a p99 SLO, in the table
and in the JSON's ``fleet``; missing targets refused with exit 2."""

from __future__ import annotations

SWEEP = ("sweep", "--gpu", "h100-sxm", "--nodes", "1", "--model", "llama-3.1-70b", "--top", "3")
FLEET = ("--traffic", "business-hours-chat", "--ttft-p99-ms", "2000", "--tpot-p99-ms", "50",
         "--fleet-requests", "150")


def test_sweep_json_ranks_by_cost_per_day(cli):
    r = cli(*SWEEP, *FLEET, "--json")
    assert r.code == 0, r.err
    fleet = r.json()["fleet"]
    assert fleet["slo"] == {"ttft_p99_ms": 2000, "tpot_p99_ms": 50} and fleet["peak_rate_per_s"] == 50
    planned = [x for x in fleet["ranked"] if x["planned"]]
    assert len(planned) >= 2
    costs = [x["usd_per_day"] for x in planned]
    assert costs == sorted(costs) and costs[0] > 0
    assert len({x["layout"] for x in fleet["ranked"]}) == len(fleet["ranked"])  # one row per replica shape


def test_sweep_table_has_cost_per_day_section(cli):
    r = cli(*SWEEP, *FLEET, "--peak", "20")
    assert r.code == 0, r.err
    section = r.out.split("Layouts by cost per day at the SLO", 1)[1]
    assert "peak 20 req/s" in section and "$/day" in section


def test_sweep_traffic_needs_both_targets(cli):
    r = cli(*SWEEP, "--traffic", "business-hours-chat", "--ttft-p99-ms", "2000")
    assert r.code == 2 and "--tpot-p99-ms" in r.err
    r = cli(*SWEEP, "--ttft-p99-ms", "2000")
    assert r.code == 2 and "--traffic" in r.err


def test_sweep_without_traffic_has_no_fleet(cli):
    r = cli(*SWEEP, "--json")
    assert r.code == 0 and "fleet" not in r.json()
