"""``layout-studio capacity`` and ``presets traffic``: the JSON contract, bad traffic refused with
exit 2 and one line naming the file, line and field."""

from __future__ import annotations

EXAMPLE = ("--gpu", "h100-sxm", "--nodes", "2", "--model", "llama-3.1-70b", "--tp", "4",
           "--ttft-p99-ms", "2000", "--tpot-p99-ms", "50", "--requests", "150")


def test_capacity_json_contract(cli):
    r = cli("capacity", *EXAMPLE, "--traffic", "business-hours-chat", "--json")
    assert r.code == 0, r.err
    d = r.json()
    assert len(d["slots"]) == 24
    for s in d["slots"]:
        assert {"start", "rate_per_s", "replicas", "gpus"} <= set(s)
        assert s["gpus"] == s["replicas"] * d["replica"]["gpus"] and s["slo_met"]
    assert [s["start"] for s in d["slots"][:2]] == ["00:00", "01:00"]
    peak = max(d["slots"], key=lambda s: s["rate_per_s"])
    quiet = min(d["slots"], key=lambda s: s["rate_per_s"])
    assert peak["replicas"] > quiet["replicas"]
    assert d["cost"]["usd_per_day"] > 0 and d["energy"]["kwh_per_day"] > 0 and d["energy"]["j_per_output_token"] > 0
    assert d["cost"]["usd_per_month"] > d["cost"]["usd_per_day"]


def test_constant_rate_and_text(cli):
    r = cli("capacity", *EXAMPLE, "--rate", "8")
    assert r.code == 0, r.err
    assert "Capacity plan" in r.out and "kWh/day" in r.out and "per million output tokens" in r.out


def test_bad_traffic_file_exit_2_names_line_and_field(cli, tmp_path):
    bad = tmp_path / "day.csv"
    bad.write_text("hour,rate_per_s\n0,3\n1,-1\n")
    r = cli("capacity", *EXAMPLE, "--traffic", str(bad))
    assert r.code == 2 and r.out == ""
    assert "day.csv" in r.err and "line 3" in r.err and "rate_per_s" in r.err and "negative" in r.err
    assert len(r.err.strip().splitlines()) == 1
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    r = cli("capacity", *EXAMPLE, "--traffic", str(empty))
    assert r.code == 2 and "empty" in r.err


def test_a_rate_no_fleet_serves(cli):
    r = cli("capacity", *EXAMPLE, "--rate", "9000000")
    assert r.code == 2 and "--rate" in r.err and "no fleet" in r.err


def test_presets_traffic(cli):
    r = cli("presets", "traffic", "--json")
    assert r.code == 0, r.err
    ids = {t["id"] for t in r.json()["traffic"]}
    assert {"business-hours-chat", "flat-batch"} <= ids
    r = cli("presets", "traffic")
    assert "How they were made" in r.out and "constructed" in r.out
