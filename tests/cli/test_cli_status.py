"""Issue 34 case 1 (and 5 on the command line): a figure that cannot be met is never printed as a
number. Above the saturation rate the plan exits 0 with the warning ``SATURATED`` and TTFT null;
a layout that does not fit has no latency at all. Rates are taken from the plan itself (twice its
saturation rate), so the step model's numbers may change."""

from __future__ import annotations


def _saturation(cli) -> float:
    d = cli("plan", "--rate", "0.01", "--json").json()
    return float(d["load"]["saturation_rate_per_s"])


def test_above_saturation_ttft_is_null_with_the_reason_and_the_code(cli):
    sat = _saturation(cli)
    r = cli("plan", "--rate", f"{2 * sat:.4g}", "--json")
    assert r.code == 0, r.err
    d = r.json()
    assert d["status"]["code"] == "SATURATED"
    assert d["status"]["headline"] == f"saturated at {sat:.3g} req/s"
    assert d["latency_ms"]["ttft"] is None and d["latency_ms"]["request"] is None
    assert f"{sat:.3g} req/s" in d["latency_ms"]["null_reason"]
    assert d["latency_ms"]["tpot"] > 0  # decoding at saturation still has a pace
    assert "SATURATED" in [w["code"] for w in d["warnings"]]
    table = cli("plan", "--rate", f"{2 * sat:.4g}").out
    ttft_line = next(ln for ln in table.splitlines() if ln.strip().startswith("TTFT"))
    assert f"saturated at {sat:.3g} req/s" in ttft_line and "ms" not in ttft_line
    assert "SATURATED" in table


def test_below_saturation_the_figures_are_numbers(cli):
    sat = _saturation(cli)
    d = cli("plan", "--rate", f"{0.5 * sat:.4g}", "--json").json()
    assert d["status"]["code"] == "OK" and d["latency_ms"]["null_reason"] is None
    assert 0 < d["latency_ms"]["ttft"] < d["latency_ms"]["request"]
    assert "SATURATED" not in [w["code"] for w in d["warnings"]]


def test_a_layout_that_does_not_fit_has_no_latency(cli):
    r = cli("plan", "--gpu", "h100-sxm", "--nodes", "1", "--model", "llama-3.1-405b",
            "--weight-dtype", "bf16", "--tp", "8", "--pp", "1", "--json")
    assert r.code == 0, r.err
    d = r.json()
    assert d["status"]["code"] == "DOES_NOT_FIT"
    assert d["latency_ms"] == {"ttft": None, "tpot": None, "request": None, "null_reason": d["fit_reason"]}
    assert d["cost"]["usd_per_million_output_tokens"] is None
    table = cli("plan", "--gpu", "h100-sxm", "--nodes", "1", "--model", "llama-3.1-405b",
                "--weight-dtype", "bf16", "--tp", "8", "--pp", "1").out
    latency = table.split("\nLatency\n", 1)[1].split("\n\n", 1)[0]
    assert "ms" not in latency and latency.count("does not fit") == 3
