"""``layout-studio simulate`` and the load flags of ``plan`` / ``sweep`` / ``simulate``: figures that
hang together, saturation said plainly, bad input refused with one line naming the flag."""

from __future__ import annotations

import json

import pytest

H100_70B = ("--gpu", "h100-sxm", "--nodes", "1", "--model", "llama-3.1-70b", "--tp", "4", "--dp", "2",
            "--isl", "1024", "--osl", "128")
QUANTILES = ("mean", "p50", "p90", "p99")


def _saturation(cli) -> float:
    r = cli("plan", *H100_70B, "--json")
    assert r.code == 0, r.err
    return r.json()["load"]["saturation_rate_per_s"]


def test_simulate_json_percentiles_ordered_and_defined(cli):
    sat = _saturation(cli)
    r = cli("simulate", *H100_70B, "--rate", f"{0.3 * sat:.4g}", "--num-requests", "600", "--json")
    assert r.code == 0, r.err
    d = r.json()
    assert d["saturated"] is False
    for key in ("ttft", "tpot", "itl", "e2e"):
        q = d["latency_ms"][key]
        assert set(q) == set(QUANTILES)
        assert 0 < q["p50"] <= q["p90"] <= q["p99"], (key, q)
        assert key in d["definitions"] and "vLLM bench serve" in d["definitions"][key]
    assert d["latency_ms"]["ttft"]["mean"] < d["latency_ms"]["e2e"]["mean"]
    assert d["run"]["requests"] == 600
    assert d["saturation_rate_per_s"] == pytest.approx(sat)
    assert "trtllm-bench" in d["definitions"]["throughput"]


def test_simulate_throughput_follows_the_offered_rate_below_saturation(cli):
    sat = _saturation(cli)
    rate = 0.4 * sat
    r = cli("simulate", *H100_70B, "--rate", f"{rate:.6g}", "--arrival", "constant", "--num-requests", "2000",
            "--json")
    d = r.json()
    # evenly spaced arrivals: served requests/s = the offered rate, less the ramp-down of the last ones
    assert d["throughput"]["requests_per_s"] == pytest.approx(rate, rel=0.05)
    assert d["throughput"]["output_tokens_per_s"] == pytest.approx(rate * 128, rel=0.05)


def test_simulate_at_low_load_agrees_with_the_closed_form(cli):
    sat = _saturation(cli)
    r = cli("simulate", *H100_70B, "--rate", f"{0.1 * sat:.4g}", "--arrival", "constant", "--json")
    d = r.json()
    sim, closed = d["latency_ms"], d["closed_form_ms"]
    assert sim["ttft"]["mean"] == pytest.approx(closed["ttft"], rel=0.15)
    assert sim["tpot"]["mean"] == pytest.approx(closed["tpot"], rel=0.15)


def test_simulate_table_lists_every_figure_with_its_definition(cli):
    r = cli("simulate", *H100_70B, "--concurrency", "16", "--num-requests", "200")
    assert r.code == 0, r.err
    for word in ("TTFT (ms)", "TPOT (ms)", "ITL (ms)", "E2E (ms)", "p99", "saturation", "Definitions",
                 "concurrency 16 users", "tok/s"):
        assert word in r.out, word


def test_rate_above_saturation_is_said_instead_of_numbers(cli):
    sat = _saturation(cli)
    r = cli("simulate", *H100_70B, "--rate", f"{2 * sat:.4g}")
    assert r.code == 0, r.err
    assert "SATURATED" in r.out and "no steady state" in r.out
    assert "p99" not in r.out and "TTFT (ms)" not in r.out
    d = cli("simulate", *H100_70B, "--rate", f"{2 * sat:.4g}", "--json").json()
    assert d["saturated"] is True and "latency_ms" not in d
    assert "saturation rate" in d["message"]


def test_offline_throughput_is_at_most_the_steady_state(cli):
    steady = cli("plan", *H100_70B, "--json").json()["throughput"]["output_tokens_per_s"]
    d = cli("simulate", *H100_70B, "--offline", "--num-requests", "400", "--json").json()
    assert d["throughput"]["output_tokens_per_s"] <= steady * 1.02


def test_histogram_file_sets_the_lengths(cli, tmp_path):
    hist = tmp_path / "isl.csv"
    hist.write_text("length,weight\n512,3\n2048,1\n", encoding="utf-8")
    r = cli("simulate", *H100_70B, "--concurrency", "8", "--num-requests", "100", "--isl-histogram", str(hist),
            "--json")
    assert r.code == 0, r.err
    assert r.json()["isl"] == "histogram of 2 lengths, mean 896"
    js = tmp_path / "osl.json"
    js.write_text(json.dumps([[64, 1], [192, 1]]), encoding="utf-8")
    r = cli("simulate", *H100_70B, "--concurrency", "8", "--num-requests", "100", "--osl-histogram", str(js),
            "--osl-spread", "0.1")
    assert r.code == 2  # one or the other
    r = cli("simulate", *H100_70B, "--concurrency", "8", "--num-requests", "100", "--osl-histogram", str(js))
    assert r.code == 0, r.err
    assert "OSL histogram of 2 lengths, mean 128" in r.out


def test_spread_widens_the_tail(cli):
    base = ("simulate", *H100_70B, "--concurrency", "16", "--num-requests", "400", "--json")
    fixed = cli(*base).json()["latency_ms"]["e2e"]
    spread = cli(*base, "--osl-spread", "0.8").json()["latency_ms"]["e2e"]
    assert spread["p99"] - spread["p50"] > fixed["p99"] - fixed["p50"]


def test_plan_shows_the_load_line_in_table_and_json(cli):
    r = cli("plan", *H100_70B, "--rate", "3", "--arrival", "constant")
    assert r.code == 0, r.err
    line = next(ln for ln in r.out.splitlines() if ln.strip().startswith("load "))
    assert "rate 3 req/s (constant arrivals)" in line and "saturation" in line
    assert "definition" in r.out and "vLLM bench serve --request-rate" in r.out
    d = cli("plan", *H100_70B, "--concurrency", "32", "--max-num-batched-tokens", "4096", "--json").json()["load"]
    assert d["mode"] == "concurrency" and d["token_budget"] == 4096
    assert d["users"] == pytest.approx(16)  # 32 users over DP 2
    assert d["asked"]["concurrency"] == 32 and d["definition"]


def test_more_rate_means_more_ttft_in_plan(cli):
    sat = _saturation(cli)
    ttfts = [cli("plan", *H100_70B, "--rate", f"{f * sat:.4g}", "--json").json()["latency_ms"]["ttft"]
             for f in (0.2, 0.6, 0.9)]
    assert ttfts[0] < ttfts[1] < ttfts[2]


def test_sweep_at_a_rate_gives_each_layout_its_figures_at_that_rate(cli):
    sweep = ("sweep", "--gpu", "h100-sxm", "--nodes", "1", "--model", "llama-3.1-70b", "--osl", "256", "--top", "2")
    r = cli(*sweep, "--rate", "2")
    assert r.code == 0, r.err
    section = r.out.split("At the load: rate 2 req/s", 1)[1]
    rows = [ln for ln in section.splitlines()[1:] if ln.strip()]
    assert rows and all("saturation" in ln and ("TTFT" in ln or "SATURATED" in ln) for ln in rows)
    d = cli(*sweep, "--rate", "2", "--json").json()
    checked = 0
    for plan in d["layouts"]:
        assert plan["load"]["mode"] == "rate" and plan["load"]["asked"]["rate_per_s"] == 2
        if plan["fits"] and not plan["load"]["saturated"]:
            checked += 1
            assert plan["throughput"]["output_tokens_per_s"] == pytest.approx(2 * 256, rel=1e-6)
    assert checked >= 2
    assert "At the load" not in cli(*sweep).out  # a closed loop at the batch: the table says it all


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (("--rate", "-1"), "--rate"),
        (("--rate", "0"), "--rate"),
        (("--rate", "nan"), "--rate"),
        (("--num-requests", "0"), "--num-requests"),
        (("--num-requests", "999999999"), "--num-requests"),
        (("--concurrency", "0"), "--concurrency"),
        (("--arrival", "constant"), "--arrival"),
        (("--arrival", "bursty", "--rate", "1"), "--arrival"),
        (("--isl-spread", "1.5"), "--isl-spread"),
        (("--osl-spread", "-0.1"), "--osl-spread"),
        (("--max-num-batched-tokens", "8"), "--max-num-batched-tokens"),
        (("--seed", "-4"), "--seed"),
        (("--rate", "1", "--offline"), "--offline"),
    ],
)
def test_bad_load_input_exits_2_naming_the_flag(cli, argv, flag):
    r = cli("simulate", *H100_70B, *argv)
    assert r.code == 2
    last = r.err.strip().splitlines()[-1]
    assert flag in last and "Traceback" not in r.err


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("length,weight\n100,1\n200,x\n", "line 3"),
        ("100,1\n-5,1\n", "line 2"),
        ("100,1,7\n", "line 1"),
        ("100,-1\n", "line 1"),
        ("# nothing\n", "no lengths"),
        ("100,0\n", "add up to 0"),
    ],
)
def test_malformed_histogram_names_file_and_line(cli, tmp_path, text, where):
    path = tmp_path / "lengths.csv"
    path.write_text(text, encoding="utf-8")
    r = cli("simulate", *H100_70B, "--isl-histogram", str(path))
    assert r.code == 2
    msg = r.err.strip().splitlines()[-1]
    assert "--isl-histogram" in msg and "lengths.csv" in msg and where in msg, msg


def test_missing_histogram_file(cli, tmp_path):
    r = cli("plan", *H100_70B, "--osl-histogram", str(tmp_path / "none.csv"))
    assert r.code == 2 and "--osl-histogram" in r.err and "not found" in r.err


SWEEP_70B = ("sweep", "--gpu", "h100-sxm", "--nodes", "1", "--model", "llama-3.1-70b", "--osl", "256", "--top", "3")


def test_sweep_percentile_slo_screens_then_simulates(cli):
    d = cli(*SWEEP_70B, "--ttft-p99", "2000", "--at-rate", "4", "--slo-check", "3", "--json").json()
    slo = d["slo"]
    assert slo["ttft_p99_ms"] == 2000 and slo["rate_per_s"] == 4
    simulated = [e for e in slo["checked"] if e["ttft_p99_ms"] is not None]
    assert 1 <= len(simulated) <= 3
    for e in slo["checked"]:
        assert e["meets"] == (e["ttft_p99_ms"] is not None and e["ttft_p99_ms"] <= 2000)
        if e["ttft_p99_ms"] is not None:
            assert e["ttft_p99_ms"] >= e["ttft_p50_ms"]
        else:  # screened out by the closed form, and says why
            assert "saturated" in e["verdict"] or "above the target" in e["verdict"]
    assert slo["best"] is not None and slo["checked"][slo["best"]]["meets"]
    first_meeting = next(i for i, e in enumerate(slo["checked"]) if e["meets"])
    assert slo["best"] == first_meeting  # the sweep's ranking decides among those meeting the SLO


def test_sweep_slo_at_a_rate_above_every_saturation(cli):
    r = cli(*SWEEP_70B, "--ttft-p99", "500", "--at-rate", "500")
    assert r.code == 0, r.err
    assert "SLO: p99 TTFT ≤ 500 ms at 500 req/s" in r.out
    assert "saturated" in r.out and "Best meeting the SLO: none" in r.out


def test_sweep_slo_rate_from_the_load_flag(cli):
    d = cli(*SWEEP_70B, "--rate", "3", "--ttft-p99", "5000", "--json").json()
    assert d["slo"]["rate_per_s"] == 3


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (("--at-rate", "3"), "--ttft-p99"),
        (("--ttft-p99", "300"), "--at-rate"),
        (("--ttft-p99", "-3", "--at-rate", "2"), "--ttft-p99"),
        (("--ttft-p99", "300", "--at-rate", "0"), "--at-rate"),
    ],
)
def test_sweep_slo_bad_input(cli, argv, flag):
    r = cli(*SWEEP_70B, *argv)
    assert r.code == 2 and flag in r.err.strip().splitlines()[-1]
