"""Disaggregated exports: one server per worker, the KV-transfer settings and the router, checked
against the engines' disaggregated rules (presets/engines/rules.json)."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess

import pytest
import yaml

from studio.core.errors import StudioError
from studio.core.serving_mode import parse_pools
from studio.core.workload import Workload
from studio.engine.disagg.evaluate import evaluate_disaggregated
from studio.io.export.checks.disagg_check import check_disaggregated
from studio.io.export.disaggregated.disagg import export_disaggregated
from tests.engine.fixtures import H200, HGX_H200, LLAMA_70B, MIXTRAL, cluster, project

WL = Workload(isl=2048, osl=256)


def _plan(spec: str = "2P:tp4,1D:tp8", nodes: int = 2, model=LLAMA_70B, backend: str | None = None):
    p = project(cluster(HGX_H200, nodes, H200), model, workload=WL)
    mode = parse_pools(spec)
    if backend:
        mode = mode.replace(transfer_backend=backend)
    return p, evaluate_disaggregated(p, mode)


def _commands(bundle, engine: str) -> str:
    return bundle.files[f"{engine}-disagg-commands.sh"]


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_every_worker_gets_one_server_on_its_own_gpus_and_the_recipe_passes(engine):
    p, res = _plan()
    bundle, recipe = export_disaggregated(p, res, engine=engine, model_path="/models/llama-70b")
    assert [s.role for s in recipe.servers] == ["prefill", "prefill", "decode"]
    assert [s.slots for s in recipe.servers] == [(0, 1, 2, 3), (4, 5, 6, 7), tuple(range(8))]
    assert recipe.servers[0].host == recipe.servers[1].host != recipe.servers[2].host
    assert recipe.servers[0].port != recipe.servers[1].port  # two servers on one host
    text = _commands(bundle, engine)
    assert text.count("CUDA_VISIBLE_DEVICES=") == 3 and "/models/llama-70b" in text
    report = check_disaggregated(recipe)
    assert report.ok, report.lines()


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_the_commands_are_valid_shell(engine, tmp_path):
    p, res = _plan()
    bundle, _ = export_disaggregated(p, res, engine=engine, hosts=["10.0.0.1", "10.0.0.2"])
    f = tmp_path / "run.sh"
    f.write_text(_commands(bundle, engine))
    assert subprocess.run(["bash", "-n", str(f)], capture_output=True).returncode == 0


def test_vllm_servers_carry_a_nixl_kv_transfer_config_and_distinct_side_channels():
    p, res = _plan()
    _, recipe = export_disaggregated(p, res, engine="vllm", hosts=["h0", "h1"])
    for s in recipe.servers:
        cfg = json.loads(s.args["--kv-transfer-config"])
        assert cfg == {"kv_connector": "NixlConnector", "kv_role": "kv_both"}
        assert dict(s.env)["VLLM_NIXL_SIDE_CHANNEL_HOST"] == s.host
    pre = [s for s in recipe.servers if s.role == "prefill"]
    assert pre[1].side_port - pre[0].side_port >= 4  # a TP4 server takes four side-channel ports
    r = recipe.router
    assert r["--prefiller-hosts"] == ["h0", "h0"] and r["--prefiller-ports"] == [8100, 8101]
    assert r["--decoder-hosts"] == ["h1"] and r["--decoder-ports"] == [8200]


def test_vllm_mooncake_uses_producer_and_consumer_roles():
    p, res = _plan(backend="mooncake")
    _, recipe = export_disaggregated(p, res, engine="vllm")
    roles = {s.role: json.loads(s.args["--kv-transfer-config"])["kv_role"] for s in recipe.servers}
    assert roles == {"prefill": "kv_producer", "decode": "kv_consumer"}
    assert check_disaggregated(recipe).ok


def test_sglang_prefill_servers_get_modes_bootstrap_ports_and_the_router_lists_them():
    p, res = _plan()
    bundle, recipe = export_disaggregated(p, res, engine="sglang", hosts=["h0", "h1"])
    pre = [s for s in recipe.servers if s.role == "prefill"]
    assert [s.args["--disaggregation-mode"] for s in recipe.servers] == [
        "prefill",
        "prefill",
        "decode",
    ]
    assert {s.args["--disaggregation-bootstrap-port"] for s in pre} == {8998, 8999}
    assert "--disaggregation-bootstrap-port" not in recipe.servers[2].args
    text = _commands(bundle, "sglang")
    assert "--prefill http://h0:8100 8998" in text and "--decode http://h1:8200" in text
    assert "--pd-disaggregation" in text


def test_sglang_refuses_a_transfer_backend_it_lacks():
    p, res = _plan(backend="ucx")
    with pytest.raises(StudioError, match="not an SGLang disaggregation backend"):
        export_disaggregated(p, res, engine="sglang")


def test_trtllm_configs_name_context_and_generation_servers():
    p, res = _plan()
    bundle, recipe = export_disaggregated(p, res, engine="trtllm", hosts=["h0", "h1"])
    dis = yaml.safe_load(bundle.files["disagg-config.yaml"])
    assert dis["context_servers"] == {"num_instances": 2, "urls": ["h0:8100", "h0:8101"]}
    assert dis["generation_servers"] == {"num_instances": 1, "urls": ["h1:8200"]}
    ctx = yaml.safe_load(bundle.files["trtllm-prefill.yaml"])
    gen = yaml.safe_load(bundle.files["trtllm-decode.yaml"])
    assert ctx["disable_overlap_scheduler"] is True and "disable_overlap_scheduler" not in gen
    # the buffer holds a whole sequence (max_seq_len = 2048 + 256), not only the prompt (issue 30)
    assert ctx["cache_transceiver_config"] == {"backend": "NIXL", "max_tokens_in_buffer": 2304}
    assert (ctx["tensor_parallel_size"], gen["tensor_parallel_size"]) == (4, 8)
    assert "trtllm-serve disaggregated -c disagg-config.yaml" in _commands(bundle, "trtllm")


def test_moe_pools_write_expert_parallel_settings():
    p, res = _plan("1P:tp4ep4,1D:tp4", nodes=1, model=MIXTRAL)
    _, v = export_disaggregated(p, res, engine="vllm")
    assert [s.args["--enable-expert-parallel"] for s in v.servers] == [True, False]
    _, t = export_disaggregated(p, res, engine="trtllm")
    assert t.configs["trtllm-prefill.yaml"]["moe_expert_parallel_size"] == 4
    assert t.configs["trtllm-prefill.yaml"]["moe_tensor_parallel_size"] == 1


# ----------------------------------------------------------------------------- the checks can fail
def _broken(recipe, i: int, **args):
    servers = list(recipe.servers)
    servers[i] = dataclasses.replace(servers[i], args={**servers[i].args, **args})
    return dataclasses.replace(recipe, servers=tuple(servers))


def test_check_refuses_what_the_engines_refuse():
    p, res = _plan()
    _, v = export_disaggregated(p, res, engine="vllm")
    bad = _broken(
        v, 0, **{"--kv-transfer-config": '{"kv_connector":"NixlConnector","kv_role":"both"}'}
    )
    assert not check_disaggregated(bad).ok
    assert any("kv_role 'both'" in f.message for f in check_disaggregated(bad).findings)
    _, s = export_disaggregated(p, res, engine="sglang")
    bad = _broken(s, 1, **{"--disaggregation-bootstrap-port": 8998})
    assert any("bootstrap port 8998" in f.message for f in check_disaggregated(bad).findings)
    _, t = export_disaggregated(p, res, engine="trtllm")
    cfgs = {
        **t.configs,
        "disagg-config.yaml": {
            **t.configs["disagg-config.yaml"],
            "context_servers": {"num_instances": 3, "urls": ["a:1", "a:1"]},
        },
    }
    report = check_disaggregated(dataclasses.replace(t, configs=cfgs))
    assert {"2 urls for num_instances 3 (ValueError at start)", "a:1 is listed twice"} <= {
        f.message for f in report.findings
    }
    servers = list(v.servers)
    servers[1] = dataclasses.replace(servers[1], port=servers[0].port)
    assert any(
        "both listen on port" in f.message
        for f in check_disaggregated(dataclasses.replace(v, servers=tuple(servers))).findings
    )


def test_workers_spanning_nodes_and_wrong_host_counts_are_refused():
    p, res = _plan("1P:tp16,1D:tp8", nodes=3)
    with pytest.raises(StudioError, match="spans nodes"):
        export_disaggregated(p, res, engine="vllm")
    p, res = _plan()
    with pytest.raises(StudioError, match="1 host name given; the pools use 2 nodes"):
        export_disaggregated(p, res, engine="vllm", hosts=["h0"])


def test_cli_export_disagg_checks_and_refuses_scripts(capsys):
    from studio.cli import main

    base = [
        "export",
        "--model",
        "llama-3.1-70b",
        "--gpu",
        "h200-sxm",
        "--nodes",
        "2",
        "--disagg",
        "2P:tp4,1D:tp8",
    ]
    assert main(base + ["--engine", "sglang", "--check"]) == 0
    assert "passes" in capsys.readouterr().out
    assert main(base + ["--engine", "vllm", "--format", "script"]) == 2
    assert "--format command or yaml" in capsys.readouterr().err
    assert main(base + ["--engine", "trtllm"]) == 0
    out = capsys.readouterr().out
    assert "# ===== disagg-config.yaml =====" in out and "context_servers" in out


def test_each_pool_writes_the_cuda_graph_capture_size_its_plan_assumed():
    from studio.engine.runtime import engine_setup

    p, res = _plan()
    _, t = export_disaggregated(p, res, engine="trtllm", hosts=["h0", "h1"])
    for engine, key in (("vllm", "--max-cudagraph-capture-size"), ("sglang", "--cuda-graph-max-bs-decode")):
        moved = p.replace(serving=p.serving.replace(runtime=engine, runtime_version=None))
        _, r = export_disaggregated(p, res, engine=engine)
        for s, tp in zip(r.servers, (4, 4, 8), strict=True):
            assert s.args[key] == engine_setup(moved, tp, 1).graph_sizes[-1]
    moved = p.replace(serving=p.serving.replace(runtime="trtllm", runtime_version=None))
    for role, tp in (("prefill", 4), ("decode", 8)):
        assert t.configs[f"trtllm-{role}.yaml"]["cuda_graph_config"] == {
            "max_batch_size": engine_setup(moved, tp, 1).graph_sizes[-1]}
