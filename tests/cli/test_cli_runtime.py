"""``--runtime`` / ``--runtime-version``: the serving engine chosen on the command line."""

from __future__ import annotations

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
