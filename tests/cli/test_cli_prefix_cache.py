"""Prompt reuse and KV tiers on the command line: plan --json reports them, bad settings name the
flag, export writes each engine's own keys."""

from __future__ import annotations

from pathlib import Path

CHAT = ("--gpu", "h100-sxm", "--model", "llama-3.1-70b", "--tp", "4", "--isl", "8000", "--osl", "300",
        "--system-prompt-tokens", "2000", "--turns", "8", "--history-tokens", "1000", "--think-time-s", "20")


def test_plan_json_reports_hit_rate_and_tiers(cli):
    # a batch below what the KV cache holds, so HBM keeps room for the shared prefix whatever the
    # remainder the auto batch would leave (less than one sequence, by chance above or below 2,000 tokens)
    chat = (*CHAT, "--max-batch", "64")
    off = cli("plan", *chat, "--prefix-cache", "off", "--json")
    hbm = cli("plan", *chat, "--json")
    host = cli("plan", *chat, "--kv-host-gib", "512", "--json")
    assert off.code == hbm.code == host.code == 0, off.err + hbm.err + host.err
    assert "prefix_cache" not in off.json()
    pc, pch = hbm.json()["prefix_cache"], host.json()["prefix_cache"]
    assert 0.25 <= pc["hit_rate"] < pch["hit_rate"] <= 1.0
    assert pc["capacity_tokens_host"] == 0 and pch["capacity_tokens_host"] > 0
    assert host.json()["latency_ms"]["ttft"] < off.json()["latency_ms"]["ttft"]
    assert host.json()["batch"] > off.json()["batch"]  # the system prompt's blocks are held once


def test_bad_settings_name_the_flag(cli):
    r = cli("plan", "--isl", "1000", "--system-prompt-tokens", "5000")
    assert r.code != 0 and "system_prompt_tokens (5,000)" in r.err and "isl (1,000" in r.err
    r = cli("plan", "--prefix-cache", "off", "--kv-host-gib", "10")
    assert r.code != 0 and "--prefix-cache off" in r.err and "need prefix_cache on" in r.err
    r = cli("plan", "--kv-host-gib", "5000", "--system-prompt-tokens", "10")
    assert r.code != 0 and "--kv-host-gib 5000 GiB is more than the node's host memory" in r.err
    r = cli("plan", "--runtime", "vllm", "--runtime-version", "0.6.3", "--kv-host-gib", "100")
    assert r.code != 0 and "vLLM 0.6.3 has no kv-offloading-size" in r.err
    r = cli("plan", "--runtime", "vllm", "--kv-disk-gib", "100")
    assert r.code != 0 and "--kv-disk-gib" in r.err and "NVMe" in r.err


def test_export_writes_each_engines_keys(cli, tmp_path: Path):
    flags = ("--system-prompt-tokens", "500", "--prefix-cache", "on", "--kv-host-gib", "512")
    # the example is TP8 x PP2 over 2 nodes: 512 GiB per node = 64 GiB per GPU, and vLLM splits
    # kv-offloading-size over all 16 workers of the server (TP x PP), so the server's size is 1,024 GiB
    want = {"vllm": ("--enable-prefix-caching", "--kv-offloading-size 1024", "--kv-offloading-backend native"),
            "trtllm": ("enable_block_reuse: true", f"host_cache_size: {64 * 1024**3}"),
            "sglang": ("--enable-hierarchical-cache", "--hicache-size 68")}
    for engine, keys in want.items():
        out = tmp_path / engine
        r = cli("export", "--engine", engine, "-o", str(out), "--model-path", "org/model", *flags)
        assert r.code == 0, r.err
        check = cli("export", "--engine", engine, "--check", "-o", str(tmp_path / "c"), "--model-path", "org/model",
                    *flags)
        assert check.code == 0 and "passes the engine's run-time rules" in check.out, check.err
        text = "\n".join(p.read_text() for p in out.iterdir() if p.is_file())
        for key in keys:
            assert key in text, (engine, key)
    off = cli("export", "--engine", "sglang", "-o", str(tmp_path / "off"), "--model-path", "org/model",
              "--prefix-cache", "off")
    assert off.code == 0 and "--disable-radix-cache" in (tmp_path / "off" / "sglang-commands.sh").read_text()


def test_explain_says_where_the_hits_come_from(cli):
    r = cli("plan", *CHAT, "--kv-host-gib", "512", "--explain")
    assert r.code == 0, r.err
    assert "prefix_cache.hit_rate = " in r.out and "hits in host memory" in r.out and "Che's approximation" in r.out
    assert "prefix_cache.hit_rate" not in cli("plan", *CHAT, "--prefix-cache", "off", "--explain").out


def test_host_tier_changes_the_recommended_layout(cli):
    """The documented multi-turn chat example (docs/cli.md): with most of each prompt cached in host
    memory the sweep's best layout for throughput changes."""
    chat = ("sweep", "--node-template", "dgx-h100", "--nodes", "1", "--model", "llama-3.1-70b", "--isl", "12000",
            "--osl", "400", "--system-prompt-tokens", "3000", "--turns", "10", "--history-tokens", "1500",
            "--think-time-s", "30", "--objective", "throughput", "--top", "1", "--json")
    off = cli(*chat, "--prefix-cache", "off")
    host = cli(*chat, "--kv-host-gib", "1024")
    assert off.code == host.code == 0, off.err + host.err
    best = [r.json()["layouts"][0] for r in (off, host)]
    shape = [(b["layout"]["tp"], b["layout"]["pp"], b["layout"]["dp"]) for b in best]
    assert shape[0] != shape[1], shape
    assert best[1]["throughput"]["output_tokens_per_s"] > 2 * best[0]["throughput"]["output_tokens_per_s"]
    assert "prefix_cache" not in best[0] and best[1]["prefix_cache"]["hit_rate_host"] > 0


def test_measured_hits_in_a_missing_tier_are_refused(cli, tmp_path: Path):
    from studio.commands.options.project_args import load_base_project
    from studio.core.settings.reuse import Reuse
    from studio.io.project_file import save_project

    base = load_base_project(None)
    p = base.replace(workload=base.workload.replace(reuse=Reuse(hit_rate=0.8, hit_tier="host")))
    path = save_project(p, tmp_path / "hits.json")
    r = cli("plan", str(path))
    assert r.code != 0 and "reuse.hit_tier 'host'" in r.err and "kv_tiers.host_gib is 0" in r.err
    ok = cli("plan", str(path), "--kv-host-gib", "100", "--json")
    assert ok.code == 0, ok.err
    assert ok.json()["prefix_cache"]["hit_rate_host"] > 0.7
