"""Context parallelism in the exports: the engines' own flags where they exist (checked against the
engines' field lists), one server per prefill-CP group, and a refusal naming the reason where an
engine cannot run the plan's CP."""

from __future__ import annotations

import dataclasses

import pytest
import yaml

from studio.core.errors import StudioError
from studio.core.layout import Layout
from studio.core.workload import ServingConfig, Workload
from studio.engine import evaluate
from studio.io.export import export_plan
from studio.io.export.checks.check import check_recipe
from tests.engine.fixtures import DGX_H100, H100, H200, HGX_H200, LLAMA_70B, cluster, project
from tests.engine.test_context_parallel import DSV3
from tests.export import fields

FP8 = ServingConfig(weight_dtype="fp8", kv_dtype="fp8")
LONG = Workload(isl=100_000, osl=2_000, batch="auto", max_batch=64)


def _bundle(model, layout, engine, fmt="yaml", nodes=1, template=HGX_H200, spec=H200):
    proj = project(cluster(template, nodes, spec), model, layout, LONG, FP8)
    return export_plan(proj, evaluate(proj), engine=engine, fmt=fmt)


def _yaml(bundle, name):
    text = bundle.files[name]
    return yaml.safe_load("\n".join(line for line in text.splitlines() if not line.startswith("#")))


def test_vllm_decode_cp_flag():
    b = _bundle(DSV3, Layout(tp=8, cp=8), "vllm")
    cfg = _yaml(b, "vllm-serve.yaml")
    assert cfg["decode-context-parallel-size"] == 8 and cfg["tensor-parallel-size"] == 8
    assert "prefill-context-parallel-size" not in cfg
    assert set(cfg) <= fields.vllm().yaml_keys
    assert not [f for f in check_recipe(b.recipe) if f.severity == "error"]


def test_vllm_prefill_cp_runs_one_server_per_cp_group_without_the_refused_decode_cp():
    # issue 30: the recipe also wrote --decode-context-parallel-size 2, which vLLM refuses for a GQA
    # model whose TP (8) is not above its KV heads (8); now PCP alone, with the KV copy noted
    b = _bundle(
        LLAMA_70B,
        Layout(tp=8, dp=4, cp=2, cp_mode="prefill"),
        "vllm",
        fmt="command",
        nodes=4,
        template=DGX_H100,
        spec=H100,
    )
    text = b.files["vllm-commands.sh"]
    mp = text.split("=== Ray backend")[0]
    # 4 replicas, 2 per CP group: 2 servers of 16 GPUs, each over two nodes
    assert mp.count("--node-rank 0") == 2 and mp.count("--nnodes 2") == 4
    assert mp.count("    --prefill-context-parallel-size 2") == 4
    assert "    --decode-context-parallel-size" not in mp  # (only the note names it)
    assert "--data-parallel-size 1" in text
    assert any("one server per CP group of 16 GPUs" in n for n in b.notes)
    assert any("whole copy of the KV cache" in n and "vllm/config/model.py:1578" in n for n in b.notes)
    assert b.nearest_layout is None
    assert not [f for f in check_recipe(b.recipe) if f.severity == "error"]
    before = dataclasses.replace(b.recipe, config={**b.recipe.config, "decode-context-parallel-size": 2})
    refused = [f for f in check_recipe(before) if f.severity == "error"]
    assert [f.key for f in refused] == ["decode-context-parallel-size"]
    assert "above the model's 8 KV heads" in refused[0].message and "vllm.cp.dcp_gqa" in refused[0].source


def test_vllm_prefill_cp_keeps_the_kv_split_where_vllm_allows_it():
    b = _bundle(DSV3, Layout(tp=8, dp=2, cp=2, cp_mode="prefill"), "vllm", nodes=2)
    cfg = _yaml(b, "vllm-serve.yaml")
    assert cfg["prefill-context-parallel-size"] == 2 and cfg["decode-context-parallel-size"] == 2
    assert not [f for f in check_recipe(b.recipe) if f.severity == "error"]
    bad = dataclasses.replace(b.recipe, config={**cfg, "decode-context-parallel-size": 4})
    assert [f.key for f in check_recipe(bad) if "dcp_with_pcp" in f.source] == ["decode-context-parallel-size"]


def test_sglang_decode_cp_for_mla_and_refusals():
    b = _bundle(DSV3, Layout(tp=8, cp=4), "sglang")
    cfg = _yaml(b, "sglang-serve.yaml") if "sglang-serve.yaml" in b.files else None
    text = "\n".join(b.files.values())
    assert "dcp-size: 4" in text or "--dcp-size 4" in text
    if cfg is not None:
        assert set(cfg) <= fields.sglang().yaml_keys
    two_kv = LLAMA_70B.replace(num_kv_heads=2, id="gqa2", name="GQA-2")
    with pytest.raises(
        StudioError,
        match=r"SGLang export of CP=4 \(decode\): SGLang runs it for MLA attention only",
    ):
        _bundle(two_kv, Layout(tp=8, cp=4), "sglang")
    with pytest.raises(
        StudioError, match="SGLang export of CP=2 \\(prefill\\).*all-gathers the KV cache"
    ):
        _bundle(LLAMA_70B, Layout(tp=4, dp=2, cp=2, cp_mode="prefill"), "sglang")


def test_trtllm_helix_is_refused_outside_disaggregated_generation_servers_with_the_reason():
    # issue 30: the YAML wrote HELIX without cp_config.tokens_per_block (KeyError at the first
    # request) for an aggregated server on Hopper; Helix runs on Blackwell in disaggregated
    # generation servers only
    with pytest.raises(StudioError) as err:
        _bundle(DSV3, Layout(tp=8, ep=8, cp=4), "trtllm")
    text = str(err.value)
    assert "generation servers of disaggregated serving only" in text and "Blackwell" in text
    assert "trtllm.cp.helix_disagg_generation" in text and "export decode CP to vLLM" in text
    with pytest.raises(StudioError, match="TensorRT-LLM runs it for MLA attention only"):
        _bundle(LLAMA_70B.replace(num_kv_heads=2, id="g2", name="G2"), Layout(tp=8, cp=2), "trtllm")


def _trt_recipe(config, role="aggregated", blackwell=False):
    from studio.io.export.bundle import EngineRecipe

    return EngineRecipe(engine="trtllm", model="m", config=config, env={}, host="0.0.0.0", model_dtype="bfloat16",
                        mla=True, num_layers=61, pp=1, sequences_per_rank=8, role=role, blackwell=blackwell)


def test_the_check_refuses_every_helix_config_the_old_export_wrote_and_accepts_a_runnable_one():
    old = {"tensor_parallel_size": 2, "context_parallel_size": 4, "moe_tensor_parallel_size": 1,
           "moe_expert_parallel_size": 8, "cp_config": {"cp_type": "HELIX"}}
    rules = sorted(f.source.split(":")[0] for f in check_recipe(_trt_recipe(old)) if f.severity == "error")
    assert rules == ["trtllm.cp.helix_blackwell", "trtllm.cp.helix_disagg_generation",
                     "trtllm.cp.helix_tokens_per_block"]
    good = {**old, "cp_config": {"cp_type": "HELIX", "tokens_per_block": 32},
            "kv_cache_config": {"tokens_per_block": 32}}
    assert not [f for f in check_recipe(_trt_recipe(good, "decode", blackwell=True)) if f.severity == "error"]


def test_trtllm_prefill_cp_ring_is_refused_and_the_check_catches_ring_and_its_moe_world():
    # issue 30: RING is not implemented in the PyTorch backend, and with a DeepSeek MoE the old
    # export wrote moe_tp x moe_ep = TP although the MoE world is TP x CP
    with pytest.raises(StudioError, match=r"RING.*PyTorch backend does not run.*trtllm.cp.pytorch_types"):
        _bundle(LLAMA_70B, Layout(tp=4, dp=2, cp=2, cp_mode="prefill"), "trtllm")
    with pytest.raises(StudioError, match="RING"):
        _bundle(DSV3, Layout(tp=8, ep=8, dp=2, cp=2, cp_mode="prefill"), "trtllm", nodes=2)
    old = {"tensor_parallel_size": 8, "context_parallel_size": 2, "moe_tensor_parallel_size": 1,
           "moe_expert_parallel_size": 8, "cp_config": {"cp_type": "RING"}}
    keys = {f.source.split(":")[0]: f.message for f in check_recipe(_trt_recipe(old)) if f.severity == "error"}
    assert set(keys) == {"trtllm.cp.pytorch_types", "trtllm.moe.mapping"}
    assert "MoE world size TP x CP = 16" in keys["trtllm.moe.mapping"]


def test_cli_refuses_a_bad_cp_with_the_rule(capsys):
    from studio.cli import main

    assert (
        main(["plan", "--model", "llama-3.1-70b", "--gpu", "h200-sxm", "--tp", "8", "--cp", "2"])
        == 2
    )
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "--cp 2" in err and "does not duplicate the 8 KV heads" in err
    assert (
        main(
            [
                "export",
                "--model",
                "llama-3.1-70b",
                "--gpu",
                "h200-sxm",
                "--tp",
                "4",
                "--cp",
                "2",
                "--cp-mode",
                "prefill",
                "--isl",
                "100000",
                "--osl",
                "1000",
                "--engine",
                "sglang",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "SGLang export of CP=2 (prefill)" in err


def test_cli_sweep_accepts_cp_sizes(capsys):
    from studio.cli import main

    assert (
        main(
            [
                "sweep",
                "--model",
                "deepseek-v3",
                "--gpu",
                "h200-sxm",
                "--weight-dtype",
                "fp8",
                "--isl",
                "100000",
                "--osl",
                "2000",
                "--cp",
                "1,8",
                "--cp-mode",
                "decode",
                "--top",
                "3",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "DCP8" in out and "PCP" not in out
