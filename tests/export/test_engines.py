"""Engine exports: every emitted flag/key is one the engine accepts, scripts parse, YAML
round-trips, multi-node recipes have one command per node, and the layout mapping is right."""

from __future__ import annotations

import re
import shlex
import subprocess

import pytest
import yaml

from studio.core.errors import StudioError
from studio.core.layout import Layout
from studio.core.workload import ServingConfig
from studio.io.export import FORMATS, export_plan

from . import fields
from .conftest import LLAMA_70B, MIXTRAL, plan, project

SCENARIOS = {
    "llama-1node-tp8": (LLAMA_70B, 1, Layout(tp=8)),
    "llama-2node-tp8pp2-uneven": (LLAMA_70B, 2, Layout(tp=8, pp=2, layers_per_stage=(41, 39))),
    "llama-1node-tp4dp2": (LLAMA_70B, 1, Layout(tp=4, dp=2)),
    "mixtral-2node-tp8dp2-ep16": (MIXTRAL, 2, Layout(tp=8, dp=2, ep=16)),
    "mixtral-2node-tp4dp4-ep4": (MIXTRAL, 2, Layout(tp=4, dp=4, ep=4)),
}
CASES = [(s, e, f) for s in SCENARIOS for e in ("vllm", "trtllm", "sglang") for f in FORMATS
         if not (e == "trtllm" and f == "k8s")]


def _export(scenario: str, engine: str, fmt: str, **kw):
    model, nodes, layout = SCENARIOS[scenario]
    proj = project(model, nodes, layout)
    return proj, export_plan(proj, plan(proj), engine=engine, fmt=fmt, **kw)


def _commands(text: str, program: tuple[str, ...]) -> list[list[str]]:
    """Each command in shell text that starts with ``program`` (after env assignments), split
    into words the way bash would."""
    lines = [ln for ln in text.splitlines() if not ln.lstrip().startswith("#")]
    joined = "\n".join(lines).replace("\\\n", " ")
    out = []
    for ln in joined.split("\n"):
        words = shlex.split(ln.rstrip(" &"), comments=True) if ln.strip() else []
        while words and re.match(r"^[A-Z_]+=", words[0]):
            words = words[1:]
        if words and tuple(words[: len(program)]) == program:
            out.append(words)
    return out


def _flags(words: list[str]) -> list[str]:
    return [w for w in words if w.startswith("--")]


@pytest.mark.parametrize("scenario,engine,fmt", CASES)
def test_files_parse(scenario, engine, fmt):
    _, bundle = _export(scenario, engine, fmt)
    assert bundle.files
    for name, text in bundle.files.items():
        assert text.startswith("#"), f"{name} must start with the comment block"
        assert "Layout Studio export" in text.split("\n", 3)[0] + text.split("\n", 3)[1]
        if name.endswith(".sh"):
            r = subprocess.run(["bash", "-n"], input=text, text=True, capture_output=True)
            assert r.returncode == 0, r.stderr
        else:
            docs = list(yaml.safe_load_all(text))
            assert docs and all(isinstance(d, dict) for d in docs)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_vllm_flags_and_keys_are_accepted(scenario):
    acc = fields.vllm()
    for fmt in ("command", "script", "yaml"):
        _, bundle = _export(scenario, "vllm", fmt)
        for name, text in bundle.files.items():
            if name.endswith(".sh"):
                cmds = _commands(text, ("vllm", "serve"))
                assert cmds
                for words in cmds:
                    unknown = set(_flags(words)) - acc.flags
                    assert not unknown, unknown
            else:
                cfg = yaml.safe_load(text)
                for key, value in cfg.items():
                    assert "_" not in key, f"vLLM YAML keys must be dashed: {key}"
                    assert key in acc.yaml_keys, key
                    if value is False:
                        assert f"--no-{key}" in acc.flags


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_sglang_flags_and_keys_are_accepted(scenario):
    acc = fields.sglang()
    for fmt in ("command", "script", "yaml"):
        _, bundle = _export(scenario, "sglang", fmt)
        for name, text in bundle.files.items():
            if name.endswith(".sh"):
                cmds = _commands(text, ("python", "-m", "sglang.launch_server"))
                assert cmds
                for words in cmds:
                    assert not set(_flags(words)) - acc.flags
            else:
                for key, value in yaml.safe_load(text).items():
                    assert key in acc.yaml_keys and "_" not in key, key
                    assert not isinstance(value, (dict, list))


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_trtllm_fields_are_accepted(scenario):
    acc = fields.trtllm()
    model, _, layout = SCENARIOS[scenario]
    _, bundle = _export(scenario, "trtllm", "yaml")
    cfg = yaml.safe_load(bundle.files["trtllm-serve.yaml"])
    assert set(cfg) <= acc.yaml_keys, set(cfg) - acc.yaml_keys
    for sub, value in cfg.items():
        if isinstance(value, dict):
            assert set(value) <= acc.nested[sub], (sub, set(value) - acc.nested[sub])
    for words in _commands(bundle.files["trtllm-commands.sh"], ("trtllm-serve",)):
        assert not set(_flags(words)) - acc.flags
    if model.is_moe:  # the engine's rule: MoE TP x EP = TP
        assert cfg["moe_tensor_parallel_size"] * cfg["moe_expert_parallel_size"] == cfg["tensor_parallel_size"]
    assert cfg["kv_cache_config"]["dtype"] == "fp8"
    assert 0 < cfg["kv_cache_config"]["free_gpu_memory_fraction"] <= 1


def test_vllm_multi_node_has_one_command_per_node():
    _, bundle = _export("llama-2node-tp8pp2-uneven", "vllm", "command")
    text = bundle.files["vllm-commands.sh"]
    mp, ray = text.split("=== Ray backend")
    serves = _commands(mp, ("vllm", "serve"))
    assert [w[w.index("--node-rank") + 1] for w in serves] == ["0", "1"]
    assert ["--headless" in w for w in serves] == [False, True]
    assert len(_commands(ray, ("ray", "start"))) == 2
    ray_serves = _commands(ray, ("vllm", "serve"))
    assert len(ray_serves) == 1 and "--distributed-executor-backend" in ray_serves[0]
    assert text.count("VLLM_PP_LAYER_PARTITION=41,39 vllm serve") == 3


def test_vllm_data_parallel_over_nodes_uses_dp_flags():
    _, bundle = _export("mixtral-2node-tp8dp2-ep16", "vllm", "command")
    mp = bundle.files["vllm-commands.sh"].split("=== Ray backend")[0]
    serves = _commands(mp, ("vllm", "serve"))
    assert len(serves) == 2
    for w in serves:
        assert w[w.index("--data-parallel-size") + 1] == "2"
        assert w[w.index("--data-parallel-size-local") + 1] == "1"
        assert "--enable-expert-parallel" in w
    assert serves[1][serves[1].index("--data-parallel-start-rank") + 1] == "1"
    assert bundle.nearest_layout is None  # EP 16 = TP 8 x DP 2 is what vLLM runs


def test_vllm_ep_not_tp_times_dp_gives_nearest_layout():
    proj = project(MIXTRAL, 1, Layout(tp=2, dp=4, ep=4))
    bundle = export_plan(proj, plan(proj), engine="vllm", fmt="yaml")
    assert bundle.nearest_layout is not None and bundle.nearest_layout.ep == 8
    assert any("TP x DP = 8" in n for n in bundle.notes)
    assert "TP x DP = 8" in bundle.files["vllm-serve.yaml"]
    assert yaml.safe_load(bundle.files["vllm-serve.yaml"])["enable-expert-parallel"] is True


def test_vllm_moe_without_ep_writes_false_dashed_and_separate_servers():
    _, bundle = _export("mixtral-2node-tp4dp4-ep4", "vllm", "yaml")
    cfg = yaml.safe_load(bundle.files["vllm-serve.yaml"])
    assert cfg["enable-expert-parallel"] is True and cfg["data-parallel-size"] == 4
    assert bundle.nearest_layout == Layout(tp=4, dp=4, ep=16)
    proj = project(MIXTRAL, 1, Layout(tp=4, dp=2))
    b = export_plan(proj, plan(proj), engine="vllm", fmt="yaml")
    assert "enable-expert-parallel: false" in b.files["vllm-serve.yaml"]
    serves = _commands(b.files["vllm-commands.sh"], ("vllm", "serve"))
    assert len(serves) == 2  # two servers on one node, on their own GPUs and ports
    assert "CUDA_VISIBLE_DEVICES=0,1,2,3 vllm" in b.files["vllm-commands.sh"]
    assert "CUDA_VISIBLE_DEVICES=4,5,6,7 vllm" in b.files["vllm-commands.sh"]
    assert serves[1][serves[1].index("--port") + 1] == "8001"


def test_trtllm_data_parallel_is_explained():
    _, bundle = _export("llama-1node-tp4dp2", "trtllm", "yaml")
    assert any("no engine-level data parallelism" in n for n in bundle.notes)
    assert len(_commands(bundle.files["trtllm-commands.sh"], ("trtllm-serve",))) == 2
    _, moe = _export("mixtral-2node-tp8dp2-ep16", "trtllm", "yaml")
    cfg = yaml.safe_load(moe.files["trtllm-serve.yaml"])
    assert cfg["enable_attention_dp"] is True and cfg["tensor_parallel_size"] == 16
    assert moe.nearest_layout == Layout(tp=1, dp=16, ep=16)


def test_trtllm_multi_node_uses_mpi_launch():
    _, bundle = _export("llama-2node-tp8pp2-uneven", "trtllm", "command")
    text = bundle.files["trtllm-commands.sh"]
    mpi = _commands(text, ("mpirun",))
    assert len(mpi) == 1 and mpi[0][mpi[0].index("-H") + 1] == "<HOST_0>:8,<HOST_1>:8"
    assert mpi[0][mpi[0].index("-np") + 1] == "16" and "trtllm-llmapi-launch" in mpi[0]
    assert len(_commands(text, ("srun",))) == 1
    assert "pp_partition:\n  - 41\n  - 39" in text


def test_sglang_multi_node_and_uneven_split():
    _, bundle = _export("llama-2node-tp8pp2-uneven", "sglang", "command")
    cmds = _commands(bundle.files["sglang-commands.sh"], ("python", "-m", "sglang.launch_server"))
    assert [w[w.index("--node-rank") + 1] for w in cmds] == ["0", "1"]
    assert all(w[w.index("--dist-init-addr") + 1] == "<HOST_0>:20000" for w in cmds)
    assert bundle.nearest_layout is None  # the uneven split runs through SGLANG_PP_LAYER_PARTITION
    assert bundle.files["sglang-commands.sh"].count("SGLANG_PP_LAYER_PARTITION=41,39 python") == 2
    _, moe = _export("mixtral-2node-tp8dp2-ep16", "sglang", "yaml")
    cfg = yaml.safe_load(moe.files["sglang-serve.yaml"])
    assert (cfg["tp-size"], cfg["attn-dp-size"], cfg["ep-size"]) == (16, 2, 16)


def test_memory_fractions_follow_the_plan():
    proj = project(LLAMA_70B, 1, Layout(tp=8))
    p = plan(proj)
    s = yaml.safe_load(export_plan(proj, p, engine="sglang", fmt="yaml").files["sglang-serve.yaml"])
    t = yaml.safe_load(export_plan(proj, p, engine="trtllm", fmt="yaml").files["trtllm-serve.yaml"])
    m = p.memory[0]
    pool = m.usable - m.weights - m.activations - m.overhead
    assert s["mem-fraction-static"] == pytest.approx((m.weights + pool) / m.capacity, abs=1e-3)
    left = m.capacity - m.weights - m.activations - m.overhead
    assert t["kv_cache_config"]["free_gpu_memory_fraction"] == pytest.approx(pool / left, abs=1e-3)
    assert t["max_batch_size"] == 64 and t["max_num_tokens"] == 2048 + 63


def test_quantisation_flag_when_weights_narrower_than_checkpoint():
    proj = project(LLAMA_70B, 1, Layout(tp=8), serving=ServingConfig(weight_dtype="fp8"))
    cfg = yaml.safe_load(export_plan(proj, plan(proj), engine="vllm", fmt="yaml").files["vllm-serve.yaml"])
    assert cfg["quantization"] == "fp8"
    proj = project(LLAMA_70B, 1, Layout(tp=8), serving=ServingConfig(weight_dtype="int4"))
    b = export_plan(proj, plan(proj), engine="vllm", fmt="yaml")
    assert "quantization" not in yaml.safe_load(b.files["vllm-serve.yaml"])
    assert any("int4 checkpoint" in n for n in b.notes)


def test_k8s_manifest_gpus_per_pod_and_group_size():
    _, bundle = _export("llama-2node-tp8pp2-uneven", "vllm", "k8s")
    lws, svc = list(yaml.safe_load_all(bundle.files["vllm-lws.yaml"]))
    assert lws["kind"] == "LeaderWorkerSet" and svc["kind"] == "Service"
    t = lws["spec"]["leaderWorkerTemplate"]
    assert t["size"] == 2 and lws["spec"]["replicas"] == 1
    for role in ("leaderTemplate", "workerTemplate"):
        box = t[role]["spec"]["containers"][0]
        assert box["resources"]["limits"]["nvidia.com/gpu"] == 8
        script = box["command"][2]
        assert subprocess.run(["bash", "-n", "-c", script]).returncode == 0
    assert "--headless" in t["workerTemplate"]["spec"]["containers"][0]["command"][2]
    _, sg = _export("llama-1node-tp4dp2", "sglang", "k8s")
    lws = next(yaml.safe_load_all(sg.files["sglang-lws.yaml"]))
    assert lws["spec"]["leaderWorkerTemplate"]["size"] == 1


@pytest.mark.parametrize("kwargs,match", [
    ({"engine": "ollama", "fmt": "command"}, "allowed: vllm, trtllm, sglang"),
    ({"engine": "vllm", "fmt": "helm"}, "allowed: command, yaml, script, k8s"),
    ({"engine": "trtllm", "fmt": "k8s"}, "vllm and sglang"),
    ({"engine": "vllm", "fmt": "command", "hosts": ["a"]}, "one host name per node"),
    ({"engine": "vllm", "fmt": "command", "model_path": "  "}, "the model path is empty"),
])
def test_bad_arguments_are_clear_errors(kwargs, match):
    proj = project(LLAMA_70B, 2, Layout(tp=8, pp=2))
    with pytest.raises(StudioError, match=match):
        export_plan(proj, plan(proj), **kwargs)


def test_layout_larger_than_cluster_is_an_error():
    proj = project(LLAMA_70B, 1, Layout(tp=8, pp=2))
    with pytest.raises(StudioError, match="needs 16 GPUs"):
        export_plan(proj, plan(proj), engine="vllm", fmt="command")
