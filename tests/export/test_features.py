"""Engine features of a plan (serving.features; --eplb, --dbo, --all2all-backend, ...) in each
engine's own keys, only where the engine version accepts them, and checked by export --check."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import replace

import pytest
import yaml

from studio.cli import main
from studio.core.engine_features import EngineFeatures
from studio.core.errors import StudioError
from studio.core.layout import Layout
from studio.core.workload import ServingConfig
from studio.io.export import export_plan
from studio.io.export.checks.check import check_recipe
from studio.io.export.features import apply_features

from .conftest import LLAMA_70B, MIXTRAL, plan, project

MOE_LAYOUT = Layout(tp=4, dp=2, ep=8)


def _export(engine, features, layout=MOE_LAYOUT, nodes=1):
    proj = project(MIXTRAL, nodes, layout, serving=ServingConfig(kv_dtype="fp8", features=features))
    return export_plan(proj, plan(proj), engine=engine, fmt="yaml")


def _cfg(bundle, name):
    text = bundle.files[name]
    return yaml.safe_load("\n".join(ln for ln in text.splitlines() if not ln.startswith("#")))


FEATS = EngineFeatures(eplb=True, redundant_experts=8, dual_batch_overlap=True)


def test_each_engine_writes_eplb_and_overlap_in_its_own_keys():
    v = _cfg(_export("vllm", FEATS.replace(all2all_backend="deepep_low_latency", api_servers=2)), "vllm-serve.yaml")
    assert v["enable-eplb"] is True and json.loads(v["eplb-config"]) == {"num_redundant_experts": 8}
    assert v["enable-dbo"] is True and v["all2all-backend"] == "deepep_low_latency" and v["api-server-count"] == 2
    s = _cfg(_export("sglang", FEATS.replace(all2all_backend="deepep", load_balance="total_tokens")),
             "sglang-serve.yaml")
    assert (s["enable-eplb"], s["ep-num-redundant-experts"], s["enable-two-batch-overlap"]) == (True, 8, True)
    assert s["moe-a2a-backend"] == "deepep" and s["load-balance-method"] == "total_tokens"
    t = _export("trtllm", FEATS)
    cfg = _cfg(t, "trtllm-serve.yaml")
    assert cfg["moe_config"]["load_balancer"] == {"num_slots": 16}  # 8 experts + 8 redundant
    assert "TensorRT-LLM has no split a step into two micro-batches" in " ".join(t.notes)  # no DBO there
    for b in (t,):
        assert not [f for f in check_recipe(b.recipe) if f.severity == "error"]


def test_a_value_the_engine_lacks_is_refused_with_the_allowed_ones():
    with pytest.raises(StudioError, match="all2all_backend 'deepep' is not a vLLM value; allowed: naive, pplx"):
        _export("vllm", EngineFeatures(all2all_backend="deepep"))
    with pytest.raises(StudioError, match="load_balance 'hybrid' is not a SGLang value"):
        _export("sglang", EngineFeatures(load_balance="hybrid"))


def test_trtllm_load_balancer_slots_must_divide_among_the_ep_ranks():
    """TensorRT-LLM's MoeLoadBalancerConfig.setup refuses num_slots not divisible by the EP size at model
    load (found by running its own code on the export: 256 experts + 7 redundant over EP16)."""
    with pytest.raises(StudioError, match=r"physical experts \(8 experts \+ 3 redundant = 11\) evenly over the 8 "
                                          r"expert-parallel ranks.*plan 0 or 8 redundant experts.*"
                                          r"trtllm\.moe\.lb_slots_even: tensorrt_llm/llmapi/llm_args\.py:1534"):
        _export("trtllm", EngineFeatures(eplb=True, redundant_experts=3))
    assert _cfg(_export("trtllm", EngineFeatures(eplb=True, redundant_experts=8)),
                "trtllm-serve.yaml")["moe_config"]["load_balancer"] == {"num_slots": 16}


def test_features_go_only_to_versions_that_accept_them():
    proj = project(MIXTRAL, 1, Layout(tp=4, dp=2, ep=8), serving=ServingConfig(
        features=EngineFeatures(all2all_backend="deepep", load_balance="round_robin")))
    cfg: dict[str, object] = {}
    notes = apply_features("sglang", "SGLang", "0.5.20", proj, cfg, experts_parallel=True, attention_dp=False)
    assert cfg == {} and len(notes) == 2 and "SGLang 0.5.20 does not accept moe-a2a-backend" in notes[0]
    notes = apply_features("sglang", "SGLang", "0.5.23", proj, cfg, experts_parallel=True, attention_dp=False)
    assert cfg == {"moe-a2a-backend": "deepep", "load-balance-method": "round_robin"} and not notes


def test_eplb_without_expert_parallelism_is_not_written_and_the_check_refuses_it():
    b = _export("vllm", FEATS, layout=Layout(tp=8))
    assert "enable-eplb" not in b.recipe.config and any("no expert parallelism" in n for n in b.notes)
    forced = dataclasses.replace(b.recipe, config={**b.recipe.config, "enable-eplb": True})
    assert [f.key for f in check_recipe(forced) if "vllm.eplb.needs_ep" in f.source] == ["enable-eplb"]


def test_api_servers_stay_on_the_head_node_of_a_multi_node_server():
    proj = project(MIXTRAL, 2, Layout(tp=8, pp=2), serving=ServingConfig(features=EngineFeatures(api_servers=4)))
    b = export_plan(proj, plan(proj), engine="vllm", fmt="command")
    text = b.files["vllm-commands.sh"].split("=== Ray backend")[0]
    head, other = text.split("--node-rank 1")
    assert "--api-server-count 4" in head and "--api-server-count" not in other
    assert not [f for f in check_recipe(b.recipe) if f.severity == "error"]
    old = dataclasses.replace(b.recipe, config={**b.recipe.config, "api-server-count": 4})
    assert [f.key for f in check_recipe(old) if f.severity == "error"] == ["api-server-count"]


def test_cli_flags_reach_the_project_and_the_export(capsys):
    argv = ["export", "--model", "mixtral-8x7b", "--gpu", "h100-sxm", "--tp", "4", "--dp", "2", "--ep", "8"]
    assert main([*argv, "--eplb", "8", "--dbo", "--engine", "sglang"]) == 0
    out = capsys.readouterr().out
    assert "--enable-eplb" in out and "--ep-num-redundant-experts 8" in out and "--enable-two-batch-overlap" in out
    assert main([*argv, "--all2all-backend", "nope", "--engine", "vllm"]) == 2
    assert "--all2all-backend: serving.features.all2all_backend 'nope'" in capsys.readouterr().err


def test_attention_dp_balance_needs_attention_dp_and_ib_devices_reach_sglang_disaggregated_servers():
    bal = EngineFeatures(attention_dp_balance=True)
    t = _export("trtllm", bal, layout=Layout(tp=1, dp=8, ep=8))
    assert _cfg(t, "trtllm-serve.yaml")["attention_dp_config"] == {"enable_balance": True}
    plain = _export("trtllm", bal, layout=Layout(tp=8, ep=8))
    assert "attention_dp_config" not in plain.recipe.config and any("has none" in n for n in plain.notes)
    from studio.core.serving_mode import parse_pools
    from studio.engine.disagg.evaluate import evaluate_disaggregated
    from studio.io.export.checks.disagg_check import check_disaggregated
    from studio.io.export.disaggregated.disagg import export_disaggregated
    from tests.engine import fixtures as fx

    proj = fx.project(fx.cluster(fx.HGX_H200, 1, fx.H200), fx.MIXTRAL,
                      serving=ServingConfig(features=EngineFeatures(ib_device="mlx5_0,mlx5_1")))
    res = evaluate_disaggregated(proj, parse_pools("1P:tp4,1D:tp4"))
    _, recipe = export_disaggregated(proj, res, engine="sglang")
    assert {s.args["--disaggregation-ib-device"] for s in recipe.servers} == {"mlx5_0,mlx5_1"}
    assert check_disaggregated(recipe).ok
    with pytest.raises(ValueError, match="string_pattern_mismatch|should match pattern"):
        EngineFeatures(ib_device="mlx5_0:1")


def test_explain_says_how_the_features_enter_the_figures(capsys):
    argv = ["plan", "--model", "mixtral-8x7b", "--gpu", "h100-sxm", "--tp", "4", "--dp", "2", "--ep", "8", "--explain"]
    assert main(argv) == 0
    assert "engine features" not in capsys.readouterr().out
    assert main([*argv, "--eplb", "4", "--dbo"]) == 0
    out = capsys.readouterr().out
    # the step model now costs both: EPLB's redundant experts take weight memory (no skew set, so no
    # speed-up), and DBO's halves hide the all-to-all at the price of a second weight read
    assert "EPLB redundant experts: 4 per MoE layer  (+50.0% expert weights per GPU)" in out
    assert "moe_imbalance_factor used: 1 ×" in out and "no routing skew set" in out
    assert "exposed all-to-all with DBO: 0 ms" in out and "compute of the two halves − whole" in out


def _offload_project(features, host_gib):
    from studio.core.settings.reuse import KVTiers

    tiers = KVTiers(prefix_cache=True, host_gib=host_gib) if host_gib else KVTiers()
    return project(MIXTRAL, 1, MOE_LAYOUT, serving=ServingConfig(kv_dtype="fp8", features=features, kv_tiers=tiers))


def test_kv_offloading_size_has_one_source_the_host_tier():
    """``features.kv_offload_gib`` (issue 30) and ``kv_tiers.host_gib`` (issue 36) both write vLLM's
    kv-offloading-size: the tier is the source; the same size from both is written once, different
    sizes are refused naming both fields, the older field alone is written with a note."""
    from studio.io.export.prefix_cache import apply_prefix_cache

    # 8 GPUs per node, TP 4: 80 GiB per node = 10 GiB per GPU = 40 GiB for one vLLM server
    same = _offload_project(EngineFeatures(kv_offload_gib=40.0), 80.0)
    cfg: dict[str, object] = {}
    notes = apply_features("vllm", "vLLM", "0.33.0", same, cfg, experts_parallel=True, attention_dp=False)
    notes += apply_prefix_cache("vllm", "vLLM", "0.33.0", same, cfg)
    assert cfg["kv-offloading-size"] == 40.0 and not [n for n in notes if "kv_offload_gib" in n]
    clash = _offload_project(EngineFeatures(kv_offload_gib=12.0), 80.0)
    with pytest.raises(StudioError, match=r"kv_offload_gib \(12 GiB\) and serving.kv_tiers.host_gib \(80 GiB per "
                       r"node, 40 GiB for this vLLM server\) both set vLLM kv-offloading-size and differ"):
        export_plan(clash, plan(clash), engine="vllm", fmt="yaml")
    alone = _offload_project(EngineFeatures(kv_offload_gib=12.0), 0.0)
    cfg = {}
    notes = apply_features("vllm", "vLLM", "0.33.0", alone, cfg, experts_parallel=True, attention_dp=False)
    assert cfg["kv-offloading-size"] == 12.0 and "set the host KV tier (serving.kv_tiers.host_gib" in " ".join(notes)


def test_front_end_processes_reach_sglang_as_tokenizer_workers_only_where_accepted():
    cfg = _cfg(_export("sglang", EngineFeatures(api_servers=3)), "sglang-serve.yaml")
    assert cfg["tokenizer-worker-num"] == 3
    proj = project(MIXTRAL, 1, MOE_LAYOUT, serving=ServingConfig(features=EngineFeatures(api_servers=3)))
    out: dict[str, object] = {}
    notes = apply_features("sglang", "SGLang", "0.5.20", proj, out, experts_parallel=True, attention_dp=False)
    assert out == {} and "SGLang 0.5.20 does not accept tokenizer-worker-num (versions >=0.5.23)" in notes[0]


def test_routing_skew_is_a_plan_knob_the_export_does_not_write(capsys):
    argv = ["plan", "--model", "mixtral-8x7b", "--gpu", "h100-sxm", "--tp", "1", "--dp", "8", "--ep", "8"]
    assert main([*argv, "--routing-skew", "0.5"]) == 2
    assert "--routing-skew: expected a number from 1 to 1024, got 0.5" in capsys.readouterr().err
    assert main([*argv, "--routing-skew", "3", "--explain"]) == 0
    out = capsys.readouterr().out
    assert "routing skew (hottest expert / mean expert): 3 ×" in out
    assert "most loaded EP rank / mean, experts placed by id: 3 ×" in out  # one expert per rank
    exp = ["export", *argv[1:], "--routing-skew", "3", "--engine", "vllm"]
    assert main(exp) == 0 and "skew" not in capsys.readouterr().out


def test_hybrid_load_balancing_is_left_out_of_a_one_node_server():
    """vLLM 0.33 refuses --data-parallel-hybrid-lb without --data-parallel-size-local (found by its
    own create_engine_config on the exported DP4 × TP2 recipe); a one-node server does not take it."""
    from dataclasses import replace

    bundle = _export("vllm", EngineFeatures(load_balance="hybrid"))
    cfg = _cfg(bundle, "vllm-serve.yaml")
    assert "data-parallel-hybrid-lb" not in cfg
    assert any("load_balance 'hybrid' is not exported" in n and "vllm.dp.hybrid_lb_local" in n for n in bundle.notes)
    before = replace(bundle.recipe, config=bundle.recipe.config | {"data-parallel-hybrid-lb": True})
    (f,) = [f for f in check_recipe(before) if f.key == "data-parallel-hybrid-lb"]
    assert f.severity == "error" and "needs data-parallel-size-local" in f.message
    external = _export("vllm", EngineFeatures(load_balance="external"))
    without_rank = {k: v for k, v in external.recipe.config.items() if k != "data-parallel-rank"}
    before = replace(external.recipe, config=without_rank)
    assert [f.key for f in check_recipe(before)] == ["data-parallel-external-lb"]


def test_vllm_external_load_balancing_runs_one_process_per_data_parallel_rank():
    """External DP load balancing (an MoE server's DP ranks): before, the export dropped it; now each rank
    is its own `vllm serve` with --data-parallel-rank, its GPUs and its port, rank 0's address and RPC
    port (vLLM 0.33's create_engine_config accepted the first rank's line, docs/export.md). A dense
    model's DP ranks cannot run it (vllm.dp.external_lb_moe): left out with the reason."""
    proj = project(MIXTRAL, 1, MOE_LAYOUT, serving=ServingConfig(features=EngineFeatures(load_balance="external")))
    b = export_plan(proj, plan(proj), engine="vllm", fmt="command")
    text = b.files["vllm-commands.sh"]
    assert text.count("vllm serve") == 2
    for rank, (devices, port) in enumerate((("0,1,2,3", 8000), ("4,5,6,7", 8001))):
        line = text.split("vllm serve")[rank + 1]
        assert f"--data-parallel-rank {rank}" in line and f"--port {port}" in line
        assert "--data-parallel-external-lb" in line and "--data-parallel-rpc-port 29550" in line
        assert f"CUDA_VISIBLE_DEVICES={devices}" in text.split("vllm serve")[rank]
    assert b.recipe.config["data-parallel-rank"] == 0 and not [f for f in check_recipe(b.recipe)
                                                               if f.severity == "error"]
    assert any("'external': each of the 2 data-parallel ranks starts as its own vLLM process" in n for n in b.notes)
    dense = project(LLAMA_70B, 1, Layout(tp=2, dp=4), serving=ServingConfig(
        features=EngineFeatures(load_balance="external")))
    d = export_plan(dense, plan(dense), engine="vllm", fmt="yaml")
    assert "data-parallel-external-lb" not in _cfg(d, "vllm-serve.yaml")
    assert any("'external' is not exported" in n and "vllm.dp.external_lb_moe" in n for n in d.notes)
    forced = replace(d.recipe, config=d.recipe.config | {"data-parallel-external-lb": True, "data-parallel-rank": 0})
    assert [f.source.split(":")[0] for f in check_recipe(forced) if f.severity == "error"] == ["vllm.dp.external_lb_moe"]


def test_vllm_hybrid_load_balancing_starts_an_api_server_on_every_node():
    """Hybrid DP load balancing over 2 nodes: before, node 1 started --headless, which vLLM 0.33 refuses
    with --data-parallel-hybrid-lb (serve.py run_headless); now every node serves its own ranks
    (--data-parallel-size-local, --data-parallel-start-rank), no Ray recipe, and the check flags a
    headless node by rule vllm.dp.hybrid_lb_headless."""
    proj = project(LLAMA_70B, 2, Layout(tp=4, dp=4), serving=ServingConfig(
        features=EngineFeatures(load_balance="hybrid")))
    b = export_plan(proj, plan(proj), engine="vllm", fmt="command")
    text = b.files["vllm-commands.sh"]
    assert "--headless" not in text and "ray start" not in text
    assert "--data-parallel-start-rank 2" in text and text.count("--data-parallel-size-local 2") == 2
    assert b.recipe.headless_nodes == 0 and not [f for f in check_recipe(b.recipe) if f.severity == "error"]
    before = replace(b.recipe, headless_nodes=1)
    (f,) = [f for f in check_recipe(before) if f.severity == "error"]
    assert "vllm.dp.hybrid_lb_headless" in f.source and "serve.py:196" in f.source


def test_trtllm_wideep_runs_only_up_to_the_release_before_it_was_dropped():
    """WIDEEP left TensorRT-LLM after 1.3.0rc23 (deprecated at model load by PR #17119, then removed from
    MoeConfig.backend by PR #17797): the export refuses it for later versions with that reason and
    writes it for 1.3.0rc23; export --check flags a hand-edited WIDEEP config without the engine."""
    with pytest.raises(StudioError, match=r"'WIDEEP': TensorRT-LLM 1\.4\.0rc0 refuses it .*runs on "
                                          r"TensorRT-LLM 1\.3\.0rc23 and earlier only.*trtllm\.moe\.wideep_removed.*llm_args\.py:1605"):
        _export("trtllm", EngineFeatures(all2all_backend="WIDEEP"))
    proj = project(MIXTRAL, 1, MOE_LAYOUT, serving=ServingConfig(features=EngineFeatures(all2all_backend="WIDEEP")))
    for version in ("1.3.0rc24", "1.4.0rc0"):
        with pytest.raises(StudioError, match=f"TensorRT-LLM {version} refuses it"):
            apply_features("trtllm", "TensorRT-LLM", version, proj, {}, experts_parallel=True, attention_dp=False)
    cfg: dict[str, object] = {}
    assert not apply_features("trtllm", "TensorRT-LLM", "1.3.0rc23", proj, cfg, experts_parallel=True,
                              attention_dp=False)
    assert cfg == {"moe_config": {"backend": "WIDEEP"}}
    b = _export("trtllm", EngineFeatures(all2all_backend="CUTEDSL"))
    edited = dataclasses.replace(b.recipe, config={**b.recipe.config, "moe_config": {"backend": "WIDEEP"}})
    (f,) = [f for f in check_recipe(edited) if "trtllm.moe.wideep_removed" in f.source]
    assert f.key == "moe_config.backend" and f.severity == "error" and "runs up to 1.3.0rc23" in f.message
    old = dataclasses.replace(edited, version="1.3.0rc23")
    assert not [f for f in check_recipe(old) if "trtllm.moe.wideep_removed" in f.source]


@pytest.mark.parametrize(("engine", "key"), [("vllm", "eplb-config"), ("sglang", "ep-num-redundant-experts"),
                                             ("trtllm", "moe_config.load_balancer.num_slots")])
def test_redundant_experts_must_divide_among_the_ep_ranks_in_every_engine(engine, key):
    """vLLM (fused-MoE layer with EPLB), SGLang (expert location metadata at model load) and TensorRT-LLM
    (MoeLoadBalancerConfig.setup) each refuse physical experts that do not divide among the EP ranks:
    the export refuses 8 experts + 3 redundant over EP8 and names the counts that fit; export --check
    flags an edited config by the same rule, without the engine installed."""
    rid = {"vllm": "vllm.eplb.even_experts", "sglang": "sglang.eplb.even_experts",
           "trtllm": "trtllm.moe.lb_slots_even"}[engine]
    with pytest.raises(StudioError, match=rf"= 11\) evenly over the 8 expert-parallel ranks.*plan 0 or 8 .*{rid}"):
        _export(engine, EngineFeatures(eplb=True, redundant_experts=3))
    ok = _export(engine, EngineFeatures(eplb=True, redundant_experts=8))
    assert not [f for f in check_recipe(ok.recipe) if rid in f.source]
    bad = {"vllm": {"eplb-config": json.dumps({"num_redundant_experts": 3})},
           "sglang": {"ep-num-redundant-experts": 3},
           "trtllm": {"moe_config": {"load_balancer": {"num_slots": 11}}}}[engine]
    edited = dataclasses.replace(ok.recipe, config={**ok.recipe.config, **bad})
    (f,) = [f for f in check_recipe(edited) if rid in f.source]
    assert f.key == key and f.severity == "error" and "11 physical experts do not divide among the 8" in f.message


def test_trtllm_nvme_kv_tier_writes_the_directory_and_the_manager_it_needs():
    """TensorRT-LLM's disk KV tier: before, the export wrote disk_cache_size alone, which TensorRT-LLM's
    KvCacheConfig validator refuses ("disk_cache_path must be set when disk_cache_size is positive",
    found by running its own code) and which the v1 KV cache manager ignores; now the path, a mkdir -p
    step on the node and use_kv_cache_manager_v2 are written, and the check flags a config without them
    (rule trtllm.kv.disk_tier) without the engine installed."""
    from studio.core.settings.reuse import KVTiers

    proj = project(LLAMA_70B, 1, Layout(tp=8), serving=ServingConfig(
        kv_tiers=KVTiers(prefix_cache=True, host_gib=256, disk_gib=1000)))
    for fmt, name in (("yaml", "trtllm-commands.sh"), ("script", "trtllm-launch.sh")):
        b = export_plan(proj, plan(proj), engine="trtllm", fmt=fmt)
        text = b.files[name]
        assert "mkdir -p /mnt/nvme/trtllm-kv-cache" in text
        assert text.index("mkdir -p /mnt/nvme/trtllm-kv-cache") < text.index("trtllm-serve meta")
    kv = b.recipe.config["kv_cache_config"]
    assert isinstance(kv, dict)
    assert kv["disk_cache_size"] == int(1000 / 8 * 2**30) and kv["disk_cache_path"] == "/mnt/nvme/trtllm-kv-cache"
    assert kv["use_kv_cache_manager_v2"] is True
    assert not [f for f in check_recipe(b.recipe) if f.severity == "error"]
    assert any("NVMe KV tier" in n and "trtllm.kv.disk_tier" in n and "llm_args.py:4570" in n for n in b.notes)
    bare = {k: v for k, v in kv.items() if k not in ("disk_cache_path", "use_kv_cache_manager_v2")}
    before = replace(b.recipe, config=b.recipe.config | {"kv_cache_config": bare})
    assert sorted(f.key for f in check_recipe(before) if "trtllm.kv.disk_tier" in f.source) == [
        "kv_cache_config.disk_cache_path", "kv_cache_config.use_kv_cache_manager_v2"]


def test_vllm_offloading_size_covers_every_worker_of_a_pipelined_server():
    """vLLM splits kv-offloading-size over its TP × PP workers (the CPU offloading spec divides by
    parallel_config.world_size; the help text's "summed across all TP ranks" holds at PP 1 only), so a
    TP4×PP2 server on a node of 8 GPUs with 80 GiB of host tier gets 80 GiB, not the 40 GiB a TP-only
    sum wrote, which left each GPU half its share."""
    from studio.core.settings.reuse import KVTiers
    from studio.io.export.prefix_cache import apply_prefix_cache

    proj = project(LLAMA_70B, 1, Layout(tp=4, pp=2), serving=ServingConfig(
        kv_tiers=KVTiers(prefix_cache=True, host_gib=80)))
    cfg: dict[str, object] = {}
    apply_prefix_cache("vllm", "vLLM", "0.33.0", proj, cfg)
    assert cfg["kv-offloading-size"] == 80.0 and cfg["kv-offloading-backend"] == "native"
