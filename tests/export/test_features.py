"""Engine features of a plan (serving.features; --eplb, --dbo, --all2all-backend, ...) in each
engine's own keys, only where the engine version accepts them, and checked by export --check."""

from __future__ import annotations

import dataclasses
import json

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

from .conftest import MIXTRAL, plan, project

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
    assert main([*argv, "--eplb", "4", "--dbo", "--engine", "sglang"]) == 0
    out = capsys.readouterr().out
    assert "--enable-eplb" in out and "--ep-num-redundant-experts 4" in out and "--enable-two-batch-overlap" in out
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
    assert "engine features = 2 features set" in out and "moe_imbalance_factor 1" in out
    assert "no overlap credited" in out


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
    assert "data-parallel-external-lb" not in _cfg(external, "vllm-serve.yaml")
    assert any("'external' is not exported" in n and "vllm.dp.external_lb_rank" in n for n in external.notes)
    before = replace(external.recipe, config=external.recipe.config | {"data-parallel-external-lb": True})
    assert [f.key for f in check_recipe(before)] == ["data-parallel-external-lb"]
