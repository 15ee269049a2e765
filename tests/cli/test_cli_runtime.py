"""``--runtime`` / ``--runtime-version``: the serving engine chosen on the command line."""

from __future__ import annotations

import pytest

H100 = ("--gpu", "h100-sxm", "--gpus-per-node", "1", "--model", "llama-3.1-8b", "--tp", "1", "--isl", "1024",
        "--osl", "256")


def test_the_engine_sets_its_memory_fraction_and_names_its_profile(cli):
    r = cli("plan", *H100, "--runtime", "sglang")
    assert r.code == 0, r.err
    # SGLang on an 80 GB H100 at TP1: reserve max(512 + 8192 × 1.5 + 256 × 2 + 128 MiB, 10 GiB)
    assert "profile 'sglang-overlap'" in r.out and "memory fraction 0.835" in r.out
    r = cli("plan", *H100, "--runtime", "sglang", "--gpu-memory-utilization", "0.8")
    assert "memory fraction 0.8\n" in r.out  # an explicit fraction wins


def test_a_version_without_a_profile_falls_back_and_says_so(cli):
    r = cli("plan", *H100, "--runtime", "vllm", "--runtime-version", "0.3.0")
    assert r.code == 0, r.err
    assert "vLLM 0.3.0 is older than every profile; using the nearest, 'vllm-v0-sync'" in r.out


def test_a_malformed_version_exits_2_naming_the_flag(cli):
    r = cli("sweep", "--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--runtime-version", "latest")
    assert r.code == 2
    assert "--runtime-version" in r.err and "'latest' is not an engine version" in r.err


@pytest.mark.parametrize(("model", "gpus", "weights", "serves", "refuses"), [
    ("llama-3.1-70b", 1, "fp8", 4096, 8192),      # "1x 80 GB serves only 4k context"
    ("llama-3.1-70b", 2, "fp8", 131072, None),    # "2x 80 GB (TP2) serves 128k"
    ("llama-3.1-405b", 8, "fp8", 131072, None),   # "needs 8x 80 GB for 128k"
    ("mixtral-8x22b", 4, "bf16", 16384, 32768),   # "16k on 4x80GB"
    ("mixtral-8x22b", 8, "bf16", 65536, None),    # "64k on 8x80GB" (the model's whole context)
])
def test_vllm_054_serves_the_contexts_lambda_measured_m6(cli, model, gpus, weights, serves, refuses):
    """reference/memory.md M6 (LambdaLabsML/vllm-benchmark benchmark_v0.md, vLLM 0.5.4 defaults, H100
    80 GB): the longest context each setup serves. vLLM V0 profiles its activation peak at
    max_num_batched_tokens = max_model_len up to 32K and turns chunked prefill (512 tokens) on beyond,
    so a context is served when the KV cache left by that peak holds one whole request of it."""
    def capacity(context: int) -> tuple[int, bool]:
        r = cli("plan", "--gpu", "h100-sxm", "--gpus-per-node", str(gpus), "--model", model, "--tp", str(gpus),
                "--weight-dtype", weights, "--isl", str(context - 1), "--osl", "1", "--batch", "1",
                "--runtime", "vllm", "--runtime-version", "0.5.4", "--json")
        assert r.code == 0, r.err
        data = r.json()
        return data["kv_cache"]["capacity_tokens"], data["fits"]

    cap, fits = capacity(serves)
    assert fits and cap >= serves
    if refuses is not None:
        cap, fits = capacity(refuses)
        assert not fits or cap < refuses


def test_compare_engines_puts_one_layout_on_each_engine(cli):
    r = cli("plan", "--compare-engines", "--json")
    assert r.code == 0, r.err
    rows = {e["engine"]: e for e in r.json()["engines"]}
    assert set(rows) == {"vllm", "trtllm", "sglang"}
    assert rows["sglang"]["memory_fraction"] < rows["trtllm"]["memory_fraction"]  # its reserve rule
    assert len({e["kv_capacity_tokens"] for e in rows.values()}) == 3


def test_each_runtime_gives_its_own_figures_and_explain_names_the_profile_values(cli):
    """Issue 29's first "done when", as a user runs it: the same layout on each engine differs in
    TPOT, TTFT, throughput and KV capacity, and --explain names the profile values behind it."""
    plans = {}
    for rt in ("vllm", "trtllm", "sglang"):
        r = cli("plan", "--runtime", rt, "--json")
        assert r.code == 0, r.err
        d = r.json()
        plans[rt] = (d["latency_ms"]["tpot"], d["latency_ms"]["ttft"], d["kv_cache"]["capacity_tokens"],
                     d["throughput"]["output_tokens_per_s"])
    for k in range(4):
        assert len({p[k] for p in plans.values()}) == 3, (k, plans)
    profiles = {"vllm": "vllm-v1-async", "trtllm": "'trtllm'", "sglang": "sglang-overlap"}
    for rt, profile in profiles.items():
        out = cli("plan", "--runtime", rt, "--explain").out
        engine = out[out.index("\nengine = "):]
        assert profile in engine
        for term in ("token budget:", "running-sequence limit:", "memory fraction:", "KV pool (tightest stage):",
                     "CUDA-graph sizes captured:", "scheduler exposed:"):
            assert term in engine, (rt, term)
    assert "mem_fraction_static" in cli("plan", "--runtime", "sglang", "--explain").out
    assert "free_gpu_memory_fraction" in cli("plan", "--runtime", "trtllm", "--explain").out
