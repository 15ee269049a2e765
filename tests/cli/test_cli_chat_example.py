"""The bundled multi-turn chat example (docs/cli.md): prefix caching plus a host-DRAM KV tier
changes the layout the sweep recommends, and the sweep and plan --explain say why."""

from __future__ import annotations

EXAMPLE = "dgx-h100-llama-70b-multiturn-chat"


def _best(cli, *flags: str) -> tuple[tuple[int, int, int], dict, list[str]]:
    r = cli("sweep", EXAMPLE, "--top", "1", "--json", *flags)
    assert r.code == 0, r.err
    doc = r.json()
    best = doc["layouts"][0]
    return (best["layout"]["tp"], best["layout"]["pp"], best["layout"]["dp"]), best, doc["reasons"]


def test_reuse_changes_the_recommended_layout(cli):
    off, off_best, off_reasons = _best(cli, "--prefix-cache", "off", "--kv-host-gib", "0")
    _, hbm_best, _ = _best(cli, "--kv-host-gib", "0")
    host, host_best, reasons = _best(cli)
    # HBM alone keeps the system prompt (a quarter of each prompt) while anything runs, which makes
    # every layout prefill less but leaves the ranking prefill-heavy; the host tier keeps the
    # conversations across the think time, prefill shrinks to an eighth and decode decides.
    assert host != off, (off, host)
    tok = lambda best: best["throughput"]["output_tokens_per_s"]  # noqa: E731
    assert tok(off_best) < tok(hbm_best) < tok(host_best)
    assert host_best["throughput"]["output_tokens_per_s"] > 2 * off_best["throughput"]["output_tokens_per_s"]
    pc = host_best["prefix_cache"]
    assert pc["hit_rate_host"] > 0.5 and "prefix_cache" not in off_best
    why = reasons[-1]
    assert why.startswith("prefix cache: ") and f"host DRAM {pc['hit_rate_host']:.0%}" in why, why
    assert not any(r.startswith("prefix cache") for r in off_reasons)


def test_plan_explain_shows_the_hits(cli):
    r = cli("plan", EXAMPLE, "--explain")
    assert r.code == 0, r.err
    assert "prefix_cache.hit_rate = " in r.out and "hits in host memory" in r.out


def test_simulate_json_reports_each_requests_hit(cli):
    flags = ("--rate", "1", "--num-requests", "300", "--json")
    on = cli("simulate", EXAMPLE, *flags)
    off = cli("simulate", EXAMPLE, "--prefix-cache", "off", "--kv-host-gib", "0", *flags)
    assert on.code == off.code == 0, on.err + off.err
    pc = on.json()["prefix_cache"]
    assert sum(pc["requests"].values()) == on.json()["run"]["requests"]
    assert pc["requests"]["host"] > pc["requests"]["hbm"] >= 0 and 0.5 < pc["hit_rate"] <= 1.0
    assert "prefix_cache" not in off.json()
    ttft_on, ttft_off = on.json()["latency_ms"]["ttft"], off.json()["latency_ms"]["ttft"]
    assert ttft_on["p50"] < ttft_off["p50"] / 2 and ttft_on["p99"] < ttft_off["p99"]
    assert "prefix_cache" in on.json()["definitions"]
