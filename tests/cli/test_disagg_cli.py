"""``plan --disagg`` and ``sweep --disagg`` on the command line."""

from __future__ import annotations

import json

BASE = (
    "--model",
    "llama-3.1-8b",
    "--gpu",
    "h200-sxm",
    "--nodes",
    "2",
    "--isl",
    "2048",
    "--osl",
    "256",
)


def test_plan_disagg_shows_both_pools_the_transfer_and_the_balance(cli):
    r = cli("plan", *BASE, "--disagg", "2P:tp4,1D:tp8")
    assert r.code == 0, r.err
    for text in (
        "Prefill pool: 2P(TP4)",
        "Decode pool: 1D(TP8)",
        "KV transfer (prefill → decode)",
        "slowest hop",
        "TTFT",
        "no prefill interference",
        "Balance",
        "balanced at x:y",
    ):
        assert text in r.out
    assert "InfiniBand" in r.out  # the decode pool is on the second node


def test_plan_disagg_json_is_one_object_with_pools_transfer_and_ttft_breakdown(cli):
    r = cli("plan", *BASE, "--disagg", "1P:tp2,1D:tp4", "--json", "--explain")
    assert r.code == 0, r.err
    data = r.json()
    assert data["serving_mode"] == "disaggregated" and data["spec"] == "1P:tp2,1D:tp4"
    lat = data["latency_ms"]
    assert lat["ttft"] == lat["ttft_queue"] + lat["ttft_prefill"] + lat["ttft_kv_transfer"]
    assert (
        data["prefill"]["gpus"] == 2 and data["decode"]["gpus"] == 4 and data["unused_gpus"] == 10
    )
    assert data["kv_transfer"]["bytes_per_request"] == 32 * 8 * 128 * 2 * 2 * 2048
    assert "latency.ttft" in data["explanations"]


def test_plan_disagg_aggregated_gives_the_usual_plan(cli):
    r = cli("plan", *BASE, "--tp", "8", "--disagg", "aggregated")
    assert r.code == 0 and "Prefill pool" not in r.out and "Memory per GPU" in r.out


def test_a_disaggregated_project_file_is_planned_disaggregated(cli, tmp_path):
    from studio.commands.options.project_args import load_base_project
    from studio.core.serving_mode import parse_pools
    from studio.io.project_file import save_project

    p = load_base_project(None)
    path = tmp_path / "p.json"
    save_project(p.replace(serving_mode=parse_pools("1P:tp8,1D:tp8")), path)
    r = cli("plan", str(path), "--weight-dtype", "fp8", "--json")
    assert r.code == 0, r.err
    assert r.json()["spec"] == "1P:tp8,1D:tp8"


def test_bad_disagg_input_is_one_line_exit_2(cli):
    r = cli("plan", *BASE, "--disagg", "2P:tp4")
    assert (
        r.code == 2 and "--disagg" in r.err and "decode (D)" in r.err and "Traceback" not in r.err
    )
    r = cli("plan", *BASE, "--disagg", "2P:tp8,2D:tp8")
    assert r.code == 2 and "serving_mode.decode" in r.err and "GPUs" in r.err
    r = cli("plan", *BASE, "--kv-transfer-backend", "mooncake")
    assert r.code == 2 and "--disagg" in r.err


def test_sweep_disagg_ranks_disaggregated_candidates_next_to_aggregated(cli):
    args = (
        "sweep",
        "--model",
        "llama-3.1-8b",
        "--gpu",
        "h200-sxm",
        "--nodes",
        "1",
        "--isl",
        "2048",
        "--osl",
        "256",
        "--ttft-ms",
        "1000",
        "--tpot-ms",
        "30",
        "--disagg",
        "--top",
        "3",
    )
    r = cli(*args)
    assert r.code == 0, r.err
    assert "Disaggregated candidates" in r.out and "Best disaggregated" in r.out
    assert "× the best aggregated layout" in r.out
    j = cli(*args, "--json")
    data = json.loads(j.out)["disaggregated"]
    assert data["best"] == 0 and data["candidates"][0]["meets_targets"]
    assert data["candidates"][0]["why"].startswith("disaggregated ")
    assert data["vs_best_aggregated"] > 0


def test_sweep_disagg_checks_a_p99_ttft_slo_by_simulation(cli):
    args = (
        "sweep",
        "--model",
        "llama-3.1-8b",
        "--gpu",
        "h200-sxm",
        "--nodes",
        "1",
        "--isl",
        "2048",
        "--osl",
        "256",
        "--tpot-ms",
        "30",
        "--disagg",
        "--top",
        "3",
        "--ttft-p99",
        "400",
        "--at-rate",
        "20",
        "--slo-check",
        "2",
        "--num-requests",
        "300",
        "--json",
    )
    r = cli(*args)
    assert r.code == 0, r.err
    slo = r.json()["disaggregated"]["slo"]
    assert slo["rate_per_s"] == 20 and slo["requests"] == 300
    simulated = [e for e in slo["checked"] if e["ttft_p99_ms"] is not None]
    assert 1 <= len(simulated) <= 2
    for e in simulated:
        assert e["meets"] == (e["ttft_p99_ms"] <= 400) and e["ttft_p50_ms"] <= e["ttft_p99_ms"]
    assert len({e["spec"] for e in slo["checked"]}) == len(slo["checked"])
    if slo["best"] is not None:
        assert slo["checked"][slo["best"]]["meets"]
