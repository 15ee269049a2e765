"""Prompt reuse in the disaggregated search (issue 36): the prefill pool prefills only its missed
tokens, the decode pool holds the system prompt once, vLLM's connector skips the blocks a decode
worker caches; with reuse off the disaggregated output is the one without reuse fields."""

from __future__ import annotations

from studio.core.serving_mode import parse_pools
from studio.core.settings.reuse import KVTiers, Reuse
from studio.io.presets import example_paths, load_example
from studio.io.project_file import save_project

EXAMPLE = "dgx-h100-llama-70b-multiturn-chat"
OFF = ("--prefix-cache", "off", "--kv-host-gib", "0")


def _disagg(cli, project: str, *flags: str) -> dict:
    r = cli("sweep", project, "--disagg", "--json", *flags)
    assert r.code == 0, r.err
    return r.json()["disaggregated"]


def test_reuse_off_gives_the_disaggregated_sweep_without_reuse_fields(cli, tmp_path):
    project = load_example(example_paths()[EXAMPLE], EXAMPLE)
    bare = project.replace(
        workload=project.workload.replace(reuse=Reuse()),
        serving=project.serving.replace(kv_tiers=KVTiers()),
    )
    path = tmp_path / "bare.json"
    save_project(bare, path, keep_backup=False)
    off = _disagg(cli, EXAMPLE, "--top", "40", *OFF)
    absent = _disagg(cli, str(path), "--top", "40")
    assert off == absent
    assert "prefix_cache" not in off


def test_high_reuse_takes_fewer_prefill_gpus_and_more_batch_per_decode_worker(cli):
    off = _disagg(cli, EXAMPLE, "--top", "1", *OFF)
    on = _disagg(cli, EXAMPLE, "--top", "1")
    b_off, b_on = off["candidates"][0], on["candidates"][0]
    p_off, p_on = parse_pools(b_off["spec"]), parse_pools(b_on["spec"])
    assert p_off.prefill is not None and p_on.prefill is not None
    # the prefill pool shrinks, in GPUs and as a share of the plan's GPUs
    assert p_on.prefill.gpus < p_off.prefill.gpus, (b_off["pools"], b_on["pools"])
    assert p_on.prefill.gpus / b_on["gpus"] < p_off.prefill.gpus / b_off["gpus"]
    # the system prompt held once: a decode worker runs more sequences
    assert b_on["batch"] > b_off["batch"]
    assert b_on["tokens_per_s_per_gpu"] > 1.5 * b_off["tokens_per_s_per_gpu"]
    pc = on["prefix_cache"]
    assert pc["hit_rate_host"] > pc["hit_rate_hbm"] > 0 and 0.5 < pc["hit_rate"] < 1.0
    assert pc["prefilled_tokens"] + pc["saved_prefill_tokens"] == pc["prompt_tokens"] == 16000
    assert "prefix_cache" not in off


def test_plan_says_the_hit_rate_and_the_saved_prefill(cli):
    spec = ("--disagg", "1P:tp1pp2,1D:tp4")
    on = cli("plan", EXAMPLE, *spec, "--json")
    off = cli("plan", EXAMPLE, *spec, "--json", *OFF)
    assert on.code == off.code == 0, on.err + off.err
    pc = on.json()["prefix_cache"]
    assert "prefix_cache" not in off.json()
    # vLLM's connector skips the system prompt's blocks the decode worker caches
    assert pc["kv_transfer_tokens"] == 16000 - 4000
    t_on, t_off = on.json()["kv_transfer"], off.json()["kv_transfer"]
    assert abs(t_on["bytes_per_request"] / t_off["bytes_per_request"] - 12000 / 16000) < 1e-9
    assert on.json()["decode"]["kv_sequences_per_worker"] > off.json()["decode"]["kv_sequences_per_worker"]
    assert on.json()["prefill"]["capacity_req_per_s"] > 2 * off.json()["prefill"]["capacity_req_per_s"]
    text = cli("plan", EXAMPLE, *spec, "--explain").out
    assert "Prefix cache (prefill pool)" in text and "prefix_cache.hit_rate = " in text
    assert f"{pc['prefilled_tokens']:,.0f} tokens (" in text and "saved per request" in text
    sweep = cli("sweep", EXAMPLE, "--disagg", "--top", "1").out
    assert "prefix cache: each prefill worker serves" in sweep
