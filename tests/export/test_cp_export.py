"""Context parallelism in the exports: the engines' own flags where they exist (checked against the
engines' field lists), one server per prefill-CP group, and a refusal naming the reason where an
engine cannot run the plan's CP."""

from __future__ import annotations

import pytest
import yaml

from studio.core.errors import StudioError
from studio.core.layout import Layout
from studio.core.workload import ServingConfig, Workload
from studio.engine import evaluate
from studio.io.export import export_plan
from studio.io.export.check import check_recipe
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


def test_vllm_prefill_cp_runs_one_server_per_cp_group():
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
    assert mp.count("    --decode-context-parallel-size 2") == 4
    assert "--data-parallel-size 1" in text
    assert any("one server per CP group of 16 GPUs" in n for n in b.notes)
    assert b.nearest_layout is None


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


def test_trtllm_helix_splits_tp_into_attention_tp_and_cp():
    b = _bundle(DSV3, Layout(tp=8, ep=8, cp=4), "trtllm")
    cfg = _yaml(b, "trtllm-serve.yaml")
    assert cfg["tensor_parallel_size"] == 2 and cfg["context_parallel_size"] == 4
    assert cfg["cp_config"] == {"cp_type": "HELIX"}
    # the FFN / MoE use every TP x CP rank
    assert cfg["moe_tensor_parallel_size"] * cfg["moe_expert_parallel_size"] == 8
    acc = fields.trtllm()
    assert set(cfg) <= acc.yaml_keys
    section = (
        (fields.DATA / "trtllm-llmargs-fields.txt")
        .read_text()
        .split("## cp_config (CpConfig)\n", 1)[1]
    )
    cp_fields = {part.split(":")[0].strip() for part in section.splitlines()[0].split("|")}
    assert "cp_type" in cp_fields and set(cfg["cp_config"]) <= cp_fields
    assert any("not Blackwell" in n for n in b.notes)
    with pytest.raises(StudioError, match="TensorRT-LLM runs it for MLA attention only"):
        _bundle(LLAMA_70B.replace(num_kv_heads=2, id="g2", name="G2"), Layout(tp=8, cp=2), "trtllm")


def test_trtllm_prefill_cp_is_ring():
    b = _bundle(LLAMA_70B, Layout(tp=4, dp=2, cp=2, cp_mode="prefill"), "trtllm")
    cfg = _yaml(b, "trtllm-serve.yaml")
    assert (cfg["tensor_parallel_size"], cfg["context_parallel_size"]) == (4, 2)
    assert cfg["cp_config"] == {"cp_type": "RING"}


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
