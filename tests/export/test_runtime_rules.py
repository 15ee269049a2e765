"""Issue 13: every recipe is one the engine accepts when it starts, not only by its field list.

One test per point of the issue; each fails on the exports written before the fix. The engines'
rules come from ``presets/engines/rules.json`` (version and source file per rule).
"""

from __future__ import annotations

import re

import pytest
import yaml

from studio.core.architecture import ModulePrecision
from studio.core.errors import StudioError
from studio.core.hardware import GpuSpec
from studio.core.layout import Layout
from studio.core.workload import ServingConfig
from studio.io.export import FORMATS, export_plan
from studio.io.export.checks.check import check_recipe
from studio.io.export.checks.rules import all_rules, rules_for
from studio.io.export.k8s import dns_name

from .conftest import GIB, LLAMA_70B, MIXTRAL, plan, project
from .test_engines import _commands


def _errors(bundle) -> list[str]:
    return [f.line() for f in check_recipe(bundle.recipe) if f.severity == "error"]


def _yaml(bundle, name: str) -> dict:
    return yaml.safe_load(bundle.files[name])


def test_rules_file_names_version_and_source_of_every_rule():
    for engine, rules in all_rules().items():
        assert rules.version.split()[0] in ("vLLM", "TensorRT-LLM", "SGLang"), engine
        for source in (rules.kv.source, rules.batch.source, rules.chunk.source, rules.listen.source,
                       rules.partition_source):
            assert re.search(r"[a-z_]+/[a-z_/]+\.py", source), (engine, source)
        assert "nvidia" in rules.vendors


# ---------------------------------------------------------------- 1. TensorRT-LLM KV-cache dtype
@pytest.mark.parametrize("kv,written", [("bf16", "auto"), ("fp16", "auto"), ("fp8", "fp8")])
def test_1_trtllm_kv_dtype_is_one_its_model_loader_accepts(kv, written):
    proj = project(LLAMA_70B, 1, Layout(tp=8), serving=ServingConfig(kv_dtype=kv))
    bundle = export_plan(proj, plan(proj), engine="trtllm", fmt="yaml")
    value = _yaml(bundle, "trtllm-serve.yaml")["kv_cache_config"]["dtype"]
    assert value == written and value in rules_for("trtllm").kv.allowed
    assert not _errors(bundle)
    broken = bundle.recipe.config | {"kv_cache_config": {"dtype": "bfloat16"}}
    from dataclasses import replace

    assert any("refused at model load" in f.message for f in check_recipe(replace(bundle.recipe, config=broken)))


# ---------------------------------------------------------------- 2. TensorRT-LLM chunked prefill
def test_2_trtllm_prompts_longer_than_max_num_tokens_are_chunked_not_refused():
    proj = project(LLAMA_70B, 1, Layout(tp=8))
    bundle = export_plan(proj, plan(proj), engine="trtllm", fmt="yaml")
    cfg = _yaml(bundle, "trtllm-serve.yaml")
    assert cfg["max_num_tokens"] == 2048 + 63 < cfg["max_seq_len"] == 131072
    assert cfg["enable_chunked_prefill"] is True
    assert any("enable_chunked_prefill is on" in n for n in bundle.notes)
    assert not _errors(bundle)
    from dataclasses import replace

    off = {k: v for k, v in bundle.recipe.config.items() if k != "enable_chunked_prefill"}
    (err,) = _errors(replace(bundle, recipe=replace(bundle.recipe, config=off)))
    assert "longer than 2111 tokens is refused" in err


# ---------------------------------------------------------------- 3. vLLM KV dtype vs model dtype
@pytest.mark.parametrize("engine,name,key", [("vllm", "vllm-serve.yaml", "kv-cache-dtype"),
                                             ("sglang", "sglang-serve.yaml", "kv-cache-dtype")])
def test_3_16_bit_kv_cache_is_the_model_dtype(engine, name, key):
    fp16_kv = project(LLAMA_70B, 1, Layout(tp=8), serving=ServingConfig(kv_dtype="fp16"))
    b = export_plan(fp16_kv, plan(fp16_kv), engine=engine, fmt="yaml")
    assert _yaml(b, name)[key] == "auto"
    assert any("model's dtype (bfloat16)" in n for n in b.notes)
    int4 = project(LLAMA_70B, 1, Layout(tp=8), serving=ServingConfig(kv_dtype="bf16", weight_dtype="int4"))
    b = export_plan(int4, plan(int4), engine=engine, fmt="yaml")
    assert _yaml(b, name)[key] == "auto" and b.recipe.model_dtype == "float16"
    assert any("model's dtype (float16)" in n for n in b.notes)
    assert not _errors(b)
    fp8 = project(LLAMA_70B, 1, Layout(tp=8), serving=ServingConfig(kv_dtype="fp8"))
    assert _yaml(export_plan(fp8, plan(fp8), engine=engine, fmt="yaml"), name)[key].startswith("fp8")


def test_3_check_refuses_a_16_bit_kv_cache_other_than_the_model_dtype():
    from dataclasses import replace

    proj = project(LLAMA_70B, 1, Layout(tp=8))
    recipe = export_plan(proj, plan(proj), engine="vllm", fmt="yaml").recipe
    bad = replace(recipe, config=recipe.config | {"kv-cache-dtype": "float16"})
    assert [f.key for f in check_recipe(bad) if f.severity == "error"] == ["kv-cache-dtype"]
    same = replace(recipe, config=recipe.config | {"kv-cache-dtype": "bfloat16"})
    assert not [f for f in check_recipe(same) if f.severity == "error"]


# ---------------------------------------------------------------- 4. SGLang attention DP batch
def test_4_sglang_attention_dp_keeps_the_planned_sequences_per_rank():
    proj = project(MIXTRAL, 2, Layout(tp=8, dp=2, ep=16))
    bundle = export_plan(proj, plan(proj, batch=233), engine="sglang", fmt="yaml")
    cfg = _yaml(bundle, "sglang-serve.yaml")
    assert cfg["attn-dp-size"] == 2
    assert cfg["max-running-requests"] // cfg["attn-dp-size"] == 233
    assert not _errors(bundle)
    from dataclasses import replace

    planned = replace(bundle.recipe, config=bundle.recipe.config | {"max-running-requests": 233})
    err, plan_err = [f.message for f in check_recipe(planned) if f.severity == "error"]
    assert "each rank runs 116 sequences, not the planned 233" in err
    assert "233 differs from the plan's 466" in plan_err


# ---------------------------------------------------------------- 5. SGLang uneven layer split
@pytest.mark.parametrize("fmt", ["command", "script", "k8s"])
def test_5_sglang_uneven_split_runs_through_its_partition_variable(fmt):
    proj = project(LLAMA_70B, 2, Layout(tp=8, pp=2, layers_per_stage=(41, 39)))
    bundle = export_plan(proj, plan(proj), engine="sglang", fmt=fmt, hosts=["a", "b"])
    assert bundle.nearest_layout is None
    text = "".join(bundle.files.values())
    assert "SGLANG_PP_LAYER_PARTITION=41,39 python -m sglang.launch_server" in text
    assert bundle.recipe.env == {"SGLANG_PP_LAYER_PARTITION": "41,39"} and not _errors(bundle)


# ---------------------------------------------------------------- 6. AMD GPUs
MI300X = GpuSpec(id="mi300x", name="AMD Instinct MI300X", vendor="amd", memory_gb=192,
                 hbm_bandwidth_gbps=5300, tflops_bf16=1307, tflops_fp16=1307, tflops_fp8=2615)


def _amd(nodes: int = 1):
    proj = project(LLAMA_70B, nodes, Layout(tp=8))
    cluster = proj.cluster
    nodes_ = tuple(n.replace(gpus=tuple(g.replace(type="mi300x") for g in n.gpus)) for n in cluster.nodes)
    return proj.replace(cluster=cluster.replace(nodes=nodes_, gpu_specs={"mi300x": MI300X}))


@pytest.mark.parametrize("fmt", ["command", "yaml", "script"])
def test_6_no_tensorrt_llm_recipe_for_amd_gpus(fmt):
    proj = _amd()
    with pytest.raises(StudioError, match="no recipe for amd GPUs.*export for vllm or sglang"):
        export_plan(proj, plan(proj), engine="trtllm", fmt=fmt)


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_6_amd_manifests_request_amd_gpus_with_rocm_images(engine):
    proj = _amd()
    bundle = export_plan(proj, plan(proj), engine=engine, fmt="k8s")
    lws = next(yaml.safe_load_all(bundle.files[f"{engine}-lws.yaml"]))
    box = lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]
    assert box["resources"]["limits"] == {"amd.com/gpu": 8}
    assert "rocm" in box["image"] and box["image"] == rules_for(engine).vendors["amd"].image


def test_6_cli_exits_2_with_the_reason(capsys):
    from studio.cli import main

    assert main(["export", "--gpu", "mi300x", "--engine", "trtllm"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "no recipe for amd GPUs" in err


# ---------------------------------------------------------------- 7. listening address
@pytest.mark.parametrize("engine,program", [("sglang", ("python", "-m", "sglang.launch_server")),
                                            ("trtllm", ("trtllm-serve",))])
@pytest.mark.parametrize("fmt", ["command", "yaml", "script"])
def test_7_servers_listen_on_every_interface(engine, program, fmt):
    proj = project(LLAMA_70B, 2, Layout(tp=8, dp=2))
    bundle = export_plan(proj, plan(proj), engine=engine, fmt=fmt, hosts=["a", "b"])
    text = next(t for n, t in bundle.files.items() if n.endswith(".sh"))
    cmds = _commands(text.replace("trtllm-llmapi-launch ", ""), program)
    assert len(cmds) == 2  # one server per replica, each reachable by the load balancer
    assert all(w[w.index("--host") + 1] == "0.0.0.0" for w in cmds)
    assert not check_recipe(bundle.recipe)
    from dataclasses import replace

    (warn,) = check_recipe(replace(bundle.recipe, host=None))
    assert warn.key == "--host" and "cannot reach it" in warn.message


# ---------------------------------------------------------------- 8. host names
DRAWN = ["DGX/HGX H100 (8× H100 SXM) #0", "DGX/HGX H100 (8× H100 SXM) #1"]


@pytest.mark.parametrize("engine", ["vllm", "trtllm", "sglang"])
@pytest.mark.parametrize("fmt", ["command", "yaml", "script"])
def test_8_drawing_names_never_become_addresses(engine, fmt):
    proj = project(MIXTRAL if engine == "vllm" else LLAMA_70B, 2, Layout(tp=8, pp=2), names=DRAWN)
    bundle = export_plan(proj, plan(proj), engine=engine, fmt=fmt)
    for text in bundle.files.values():
        for line in text.splitlines():
            code = line.split("  # ")[0]  # a script's HOST_i lines name their node in a comment
            if not code.lstrip().startswith("#"):
                assert "DGX" not in code, line
        if fmt == "script":
            assert 'HOST_0="${HOST_0:-}"' in text and "${HOST_0}" in text
    shell = next(t for n, t in bundle.files.items() if n.endswith(".sh"))
    assert ("<HOST_0>" in shell) != (fmt == "script")
    with_hosts = export_plan(proj, plan(proj), engine=engine, fmt=fmt, hosts=["10.0.0.1", "gpu-b.lan"])
    shell = next(t for n, t in with_hosts.files.items() if n.endswith(".sh"))
    assert "<HOST_" not in shell and "10.0.0.1" in shell


@pytest.mark.parametrize("hosts", [["-oProxyCommand=x,evil:99", "b"], ["a,b:99", "c"], ["a b", "c"], ["a", "-b"]])
def test_8_hosts_entries_must_be_host_names(hosts):
    proj = project(LLAMA_70B, 2, Layout(tp=8, pp=2))
    with pytest.raises(StudioError, match="is not a host name or IP address") as err:
        export_plan(proj, plan(proj), engine="trtllm", fmt="command", hosts=hosts)
    assert err.value.field == "hosts"  # the CLI shows it as --hosts (studio.commands.options.flags)


def test_8_a_long_bad_host_is_shown_by_its_start_and_length():
    proj = project(LLAMA_70B, 2, Layout(tp=8, pp=2))
    bad = "a_" * 150
    with pytest.raises(StudioError) as err:
        export_plan(proj, plan(proj), engine="trtllm", fmt="command", hosts=[bad, "b"])
    text = str(err.value)
    assert bad not in text and f"'{bad[:60]}…' (300 characters) is not a host name" in text
    assert len(text) < 300


def test_8_ipv6_hosts_are_bracketed_before_a_port():
    proj = project(LLAMA_70B, 2, Layout(tp=8, pp=2))
    bundle = export_plan(proj, plan(proj), engine="sglang", fmt="command", hosts=["fd00::1", "fd00::2"])
    assert "--dist-init-addr '[fd00::1]:20000'" in bundle.files["sglang-commands.sh"]


# ---------------------------------------------------------------- 9. contradicting notes, k8s names
def test_9_gb200_vllm_notes_name_one_layout():
    from studio.engine import evaluate
    from studio.io.presets import example_paths
    from studio.io.project_file import load_project

    proj = load_project(str(example_paths()["gb200-nvl72-deepseek-v3"]))
    p = evaluate(proj)
    bundle = export_plan(proj, p, engine="vllm", fmt="command")
    notes = " ".join(bundle.notes)
    runs = bundle.nearest_layout or p.layout
    assert f"EP={runs.tp * runs.dp}" not in notes or runs.ep == runs.tp * runs.dp
    assert notes.count("earest runnable layout") <= 1
    for ep in re.findall(r"EP=(?:TP=)?(\d+)", notes):
        assert int(ep) == runs.ep, notes


def test_9_long_kubernetes_names_do_not_collide():
    a = dns_name("Llama-3.1-405B-Instruct on 2x DGX H100 - production east", "x")
    b = dns_name("Llama-3.1-405B-Instruct on 2x DGX H100 - production west", "x")
    assert a != b and len(a) <= 40 and len(b) <= 40
    assert re.fullmatch(r"[a-z0-9]([a-z0-9-]*[a-z0-9])?", a)
    assert dns_name("short name", "x") == "short-name"


# ---------------------------------------------------------------- 10. memory the engine reserves
@pytest.mark.parametrize("engine,fraction", [("vllm", 0.9), ("sglang", None), ("trtllm", None)])
def test_10_header_states_what_the_engine_reserves_from_the_plans_figures(engine, fraction):
    proj = project(LLAMA_70B, 1, Layout(tp=8))
    cap = 80 * GIB  # the plan's device memory, whatever the preset's memory_gb says (80 GB)
    p = plan(proj, capacity=cap)
    bundle = export_plan(proj, p, engine=engine, fmt="yaml")
    text = next(iter(bundle.files.values()))
    (line,) = [ln for ln in text.splitlines() if ln.startswith("# Engine memory:")]
    m = p.peak_memory
    if engine == "vllm":
        assert "gpu-memory-utilization 0.9 x 80.0 GiB" in line and "= 72.0 GiB per GPU" in line
    elif engine == "sglang":
        f = _yaml(bundle, "sglang-serve.yaml")["mem-fraction-static"]
        assert f"{f:g} x 80.0 GiB" in line and f"= {f * cap / GIB:.1f} GiB" in line
    else:
        f = _yaml(bundle, "trtllm-serve.yaml")["kv_cache_config"]["free_gpu_memory_fraction"]
        left = m.capacity - m.weights - m.activations - m.overhead
        assert f"{f:g} x {left / GIB:.1f} GiB" in line
        assert abs(f * left - (m.usable - m.weights - m.activations - m.overhead)) <= 0.001 * left


# ---------------------------------------------------------------- the engine's own plans
@pytest.mark.parametrize("example", ["dgx-h100-2node-llama-405b", "gb200-nvl72-deepseek-v3",
                                     "h100-pcie-bridge-llama-70b", "l40s-8x-llama-70b-fp8"])
def test_example_plans_pass_the_run_time_rules(example):
    from studio.engine import evaluate
    from studio.io.presets import example_paths
    from studio.io.project_file import load_project

    proj = load_project(str(example_paths()[example]))
    p = evaluate(proj)
    for engine in ("vllm", "trtllm", "sglang"):
        for fmt in FORMATS:
            if engine == "trtllm" and fmt == "k8s":
                continue
            assert not _errors(export_plan(proj, p, engine=engine, fmt=fmt)), (engine, fmt)


def test_precision_of_an_fp16_checkpoint_is_its_model_dtype():
    fp16 = LLAMA_70B.replace(precision=ModulePrecision.uniform("fp16"))
    proj = project(fp16, 1, Layout(tp=8), serving=ServingConfig(kv_dtype="bf16"))
    b = export_plan(proj, plan(proj), engine="vllm", fmt="yaml")
    assert b.recipe.model_dtype == "float16" and _yaml(b, "vllm-serve.yaml")["kv-cache-dtype"] == "auto"


def test_a_broken_rules_file_names_the_missing_field():
    import json

    from studio.io.export.checks import rules
    from studio.io.presets import presets_root

    data = json.loads(presets_root().joinpath("engines", "rules.json").read_text(encoding="utf-8"))
    vllm = data["engines"]["vllm"]
    del vllm["kv_cache_dtype"]["allowed"]
    with pytest.raises(StudioError, match=r"field 'engines.vllm.kv_cache_dtype.allowed' is missing"):
        rules._parse("vllm", vllm)


# ---------------------------------------------------------------- token budget of the plan
@pytest.mark.parametrize("engine,name,key", [("trtllm", "trtllm-serve.yaml", "max_num_tokens"),
                                             ("vllm", "vllm-serve.yaml", "max-num-batched-tokens")])
def test_exported_token_budget_is_the_one_the_plan_was_costed_with(engine, name, key):
    """The engine's per-iteration token budget is the plan's (``plan.load.token_budget``), so it
    chunks prompts as the plan's TTFT and TPOT assume; a plan without a load keeps the old rule."""
    from dataclasses import replace

    from studio.engine.plan.results import LoadSummary

    proj = project(LLAMA_70B, 1, Layout(tp=8), serving=ServingConfig(kv_dtype="fp8", max_num_batched_tokens=4096))
    load = LoadSummary(mode="concurrency", definition="closed loop", users=64, running=64, decode_seqs=63.5,
                       prefill_tokens_per_iteration=254.0, iteration_ms=20.0, token_budget=4096,
                       budget_bound=False, request_rate_per_s=5.0, saturation_rate_per_s=5.0, saturated=False)
    cfg = _yaml(export_plan(proj, replace(plan(proj), load=load), engine=engine, fmt="yaml"), name)
    assert cfg[key] == 4096
    old = _yaml(export_plan(proj, plan(proj), engine=engine, fmt="yaml"), name)
    assert old[key] == 2048 + 63


def test_exported_token_budget_holds_a_decode_token_of_every_running_sequence():
    """vLLM refuses to start when max-num-batched-tokens < max-num-seqs: a plan costed with a
    budget below its batch exports the batch as the budget, and says so."""
    from dataclasses import replace

    from studio.engine.plan.results import LoadSummary

    proj = project(LLAMA_70B, 1, Layout(tp=8), serving=ServingConfig(kv_dtype="fp8", max_num_batched_tokens=32))
    load = LoadSummary(mode="concurrency", definition="closed loop", users=64, running=64, decode_seqs=31.0,
                       prefill_tokens_per_iteration=1.0, iteration_ms=20.0, token_budget=32,
                       budget_bound=True, request_rate_per_s=5.0, saturation_rate_per_s=5.0, saturated=False)
    for engine, name, key, batch_key in (("vllm", "vllm-serve.yaml", "max-num-batched-tokens", "max-num-seqs"),
                                         ("trtllm", "trtllm-serve.yaml", "max_num_tokens", "max_batch_size")):
        bundle = export_plan(proj, replace(plan(proj), load=load), engine=engine, fmt="yaml")
        cfg = _yaml(bundle, name)
        assert cfg[key] == cfg[batch_key] == 64
        assert any("raised to 64" in n for n in bundle.notes)
