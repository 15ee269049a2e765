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
    hbm, _, _ = _best(cli, "--kv-host-gib", "0")
    host, host_best, reasons = _best(cli)
    assert len({off, hbm, host}) == 3, (off, hbm, host)
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
