"""The engines' start-up rules (``startup`` in presets/engines/rules.json): each failing recipe family
of issue 30 is built as the old export wrote it and refused by ``export --check`` with the rule's
reason and source, then built by today's export and accepted (or refused with the engine's reason
when the engine cannot run the layout)."""

from __future__ import annotations

import dataclasses
import json

import pytest

from studio.cli import main
from studio.core.errors import StudioError
from studio.core.layout import Layout
from studio.core.serving_mode import parse_pools
from studio.core.workload import ServingConfig, SpeculativeConfig, Workload
from studio.engine.disagg.evaluate import evaluate_disaggregated
from studio.io.export import export_plan
from studio.io.export.checks.check import check_recipe
from studio.io.export.checks.disagg_check import DISAGG_EVALUATORS, check_disaggregated
from studio.io.export.checks.startup import EVALUATORS
from studio.io.export.checks.startup_rules import rule, startup_rules, version_in
from studio.io.export.disaggregated.disagg import export_disaggregated
from tests.engine.fixtures import H200, HGX_H200, LLAMA_70B, cluster, project

from .conftest import LLAMA_70B as LLAMA_CONF
from .conftest import plan as conf_plan
from .conftest import project as conf_project


def _errors(findings, rule_id: str | None = None):
    return [f for f in findings if f.severity == "error" and (rule_id is None or f.source.startswith(rule_id))]


# ----------------------------------------------------------------------------- the data
def test_every_rule_is_evaluated_once_and_cites_the_engine_code():
    rules = startup_rules()
    evaluated = set(EVALUATORS) | set(DISAGG_EVALUATORS)
    assert set(rules) == evaluated and not set(EVALUATORS) & set(DISAGG_EVALUATORS)
    for r in rules.values():
        assert r.engine in ("vllm", "trtllm", "sglang") and r.says and r.source
        assert all(w.file and w.at for w in r.source)
        assert all(w.line or w.symbol or w.file.endswith(".md") for w in r.source), r.id
    # vLLM's and SGLang's rules were read in the released wheels: every one has a line
    for r in rules.values():
        if r.engine in ("vllm", "sglang") and "wheel" in r.source[0].at:
            assert r.source[0].line, r.id


def test_version_ranges():
    assert version_in("0.33.0", ">=0.13.0") and not version_in("0.12.0", ">=0.13.0")
    assert version_in("0.11.2", ">=0.10.1,<0.13.0") and version_in("1.4.0rc0", ">=1.0.0")
    assert not version_in("1.4.0rc0", ">=1.4.0") and version_in("1.4.0", ">1.4.0rc0")
    with pytest.raises(StudioError, match="not an engine version"):
        version_in("latest", ">=1.0")


# ----------------------------------------------------------------------------- 1. vLLM Mooncake
def _disagg(backend: str, spec: str = "2P:tp4,1D:tp8"):
    p = project(cluster(HGX_H200, 2, H200), LLAMA_70B, workload=Workload(isl=2048, osl=512))
    return p, evaluate_disaggregated(p, parse_pools(spec).replace(transfer_backend=backend))


def _old_mooncake(recipe):
    """The recipe as the previous export wrote it: the out-of-tree module, NIXL's side-channel
    variables and the NIXL toy proxy."""
    servers = []
    for s in recipe.servers:
        cfg = json.loads(str(s.args["--kv-transfer-config"]))
        cfg["kv_connector_module_path"] = "mooncake.mooncake_connector_v1"
        env = tuple(kv for kv in s.env if kv[0] == "CUDA_VISIBLE_DEVICES") + (
            ("VLLM_NIXL_SIDE_CHANNEL_PORT", str(s.side_port)),)
        servers.append(dataclasses.replace(s, args={**s.args, "--kv-transfer-config": json.dumps(cfg)}, env=env))
    router = {"script": "tests/v1/kv_connector/nixl_integration/toy_proxy_server.py", "--host": "0.0.0.0",
              "--port": 8000, "--prefiller-hosts": [s.host for s in servers if s.role == "prefill"],
              "--prefiller-ports": [s.port for s in servers if s.role == "prefill"],
              "--decoder-hosts": [s.host for s in servers if s.role == "decode"],
              "--decoder-ports": [s.port for s in servers if s.role == "decode"]}
    return dataclasses.replace(recipe, servers=tuple(servers), router=router)


def test_vllm_mooncake_old_recipe_is_refused_and_the_new_one_runs_in_tree():
    p, res = _disagg("mooncake")
    bundle, recipe = export_disaggregated(p, res, engine="vllm", hosts=["h0", "h1"])
    old = check_disaggregated(_old_mooncake(recipe))
    assert not old.ok
    assert len(_errors(old.findings, "vllm.mooncake.in_tree")) == 3
    (ports,) = _errors(old.findings, "vllm.mooncake.bootstrap_port")
    assert "prefill 0 (ports 8998..9001) and prefill 1 (from 8998)" in ports.message
    (proxy,) = _errors(old.findings, "vllm.mooncake.proxy")
    assert "mooncake_connector_proxy.py" in proxy.message and "vllm/envs.py:241" in ports.source
    new = check_disaggregated(recipe)
    assert new.ok, new.lines()
    for s in recipe.servers:
        cfg = json.loads(str(s.args["--kv-transfer-config"]))
        assert cfg["kv_connector"] == "MooncakeConnector" and "kv_connector_module_path" not in cfg
    pre = [s for s in recipe.servers if s.role == "prefill"]
    assert [dict(s.env)["VLLM_MOONCAKE_BOOTSTRAP_PORT"] for s in pre] == ["8998", "9098"]
    text = bundle.files["vllm-disagg-commands.sh"]
    assert "mooncake_connector_proxy.py" in text and "--prefill http://h0:8100 8998" in text
    assert "--decode http://h1:8200" in text and "VLLM_NIXL" not in text


def test_mooncake_rules_hold_from_vllm_0_13():
    p, res = _disagg("mooncake")
    _, recipe = export_disaggregated(p, res, engine="vllm")
    old = _old_mooncake(recipe)
    assert not _errors(check_disaggregated(dataclasses.replace(old, version="0.12.0")).findings,
                       "vllm.mooncake.in_tree")
    assert _errors(check_disaggregated(dataclasses.replace(old, version="0.13.0")).findings,
                   "vllm.mooncake.in_tree")


# ----------------------------------------------------------------------------- vLLM host KV tier, P/D
def _tiered(backend: str):
    from studio.core.settings.reuse import KVTiers

    p = project(cluster(HGX_H200, 2, H200), LLAMA_70B, workload=Workload(isl=2048, osl=512),
                serving=ServingConfig(kv_tiers=KVTiers(prefix_cache=True, host_gib=256)))
    return p, evaluate_disaggregated(p, parse_pools("2P:tp4,1D:tp8").replace(transfer_backend=backend))


def test_vllm_disagg_host_tier_keeps_the_pd_connector_through_multiconnector():
    """The plan counts the host tier on the prefill workers; before, the export dropped it. vLLM's
    --kv-offloading-size would set the connector to OffloadingConnector and drop NIXL, so a recipe
    with it is refused, and the export writes MultiConnector (NIXL first) on the prefill servers."""
    p, res = _tiered("nixl")
    bundle, recipe = export_disaggregated(p, res, engine="vllm", hosts=["h0", "h1"])
    gib = 256 / 8 * 4  # 32 GiB per GPU of the node, over a TP4 server's four workers
    for s in recipe.servers:
        cfg = json.loads(str(s.args["--kv-transfer-config"]))
        if s.role == "prefill":
            nixl, offload = cfg["kv_connector_extra_config"]["connectors"]
            assert cfg["kv_connector"] == "MultiConnector" and nixl == {"kv_connector": "NixlConnector",
                                                                        "kv_role": "kv_both"}
            assert offload["kv_connector"] == "OffloadingConnector"
            assert offload["kv_connector_extra_config"]["cpu_bytes_to_use"] == int(gib * 2**30)
        else:
            assert cfg == {"kv_connector": "NixlConnector", "kv_role": "kv_both"}
        assert "--kv-offloading-size" not in s.args
    assert check_disaggregated(recipe).ok
    assert any("host KV tier (32 GiB per GPU) through MultiConnector" in n for n in bundle.notes)
    # what a user gets by adding vLLM's own flag to the NIXL servers: refused with the engine's reason
    plain = json.dumps({"kv_connector": "NixlConnector", "kv_role": "kv_both"})
    old = dataclasses.replace(recipe, servers=tuple(
        dataclasses.replace(s, args={**s.args, "--kv-transfer-config": plain, "--kv-offloading-size": gib,
                                     "--kv-offloading-backend": "native"}) if s.role == "prefill" else s
        for s in recipe.servers))
    found = _errors(check_disaggregated(old).findings, "vllm.disagg.host_tier")
    assert len(found) == 2 and "drops NixlConnector and transfers no KV" in found[0].message
    assert "vllm/config/vllm.py:1167" in found[0].source
    # a MultiConnector whose offloading size is missing is refused too (vLLM's CPU spec raises)
    pre = recipe.servers[0]
    cfg = json.loads(str(pre.args["--kv-transfer-config"]))
    del cfg["kv_connector_extra_config"]["connectors"][1]["kv_connector_extra_config"]
    bad = dataclasses.replace(recipe, servers=(dataclasses.replace(
        pre, args={**pre.args, "--kv-transfer-config": json.dumps(cfg)}), *recipe.servers[1:]))
    (missing,) = _errors(check_disaggregated(bad).findings, "vllm.disagg.host_tier")
    assert "cpu_bytes_to_use above 0" in missing.message


def test_vllm_disagg_host_tier_is_not_exported_over_mooncake_and_the_notes_say_so():
    p, res = _tiered("mooncake")
    bundle, recipe = export_disaggregated(p, res, engine="vllm")
    assert all(json.loads(str(s.args["--kv-transfer-config"]))["kv_connector"] == "MooncakeConnector"
               for s in recipe.servers)
    assert any("host KV tier (32 GiB per GPU) the plan counts on the prefill workers is not exported" in n
               for n in bundle.notes)
    assert check_disaggregated(recipe).ok


def test_sglang_disagg_host_tier_is_the_prefill_servers_hicache():
    """Before, the disaggregated SGLang recipe dropped the host tier the plan counts on the prefill
    workers; now the prefill servers run HiCache at the aggregated export's size (GB per rank), the
    decode servers none (SGLang turns their radix cache off), and the check flags a decode HiCache."""
    p, res = _tiered("nixl")
    bundle, recipe = export_disaggregated(p, res, engine="sglang")
    for s in recipe.servers:
        if s.role == "prefill":
            assert s.args["--enable-hierarchical-cache"] is True
            assert s.args["--hicache-size"] == int(32 * 2**30 / 1e9)  # 32 GiB per GPU = 34 GB per rank
        else:
            assert "--enable-hierarchical-cache" not in s.args
    assert check_disaggregated(recipe).ok
    assert any("host KV tier as SGLang HiCache (34 GB per rank)" in n for n in bundle.notes)
    on_decode = dataclasses.replace(recipe, servers=tuple(
        dataclasses.replace(s, args={**s.args, "--enable-hierarchical-cache": True}) if s.role == "decode" else s
        for s in recipe.servers))
    (warn,) = [f for f in check_disaggregated(on_decode).findings if f.source.startswith("sglang.disagg.hicache")]
    assert warn.severity == "warning" and "holds nothing" in warn.message
    assert "pd_disaggregation_hook.py:125" in warn.source
    strict = dataclasses.replace(on_decode, servers=tuple(
        dataclasses.replace(s, args={**s.args, "--disaggregation-decode-allocation-policy": "prefill_complete"})
        for s in on_decode.servers))
    assert _errors(check_disaggregated(strict).findings, "sglang.disagg.hicache_prefill")


def test_trtllm_disagg_says_the_host_tier_is_not_exported():
    p, res = _tiered("ucx")
    bundle, recipe = export_disaggregated(p, res, engine="trtllm")
    assert any("host / NVMe KV tiers the plan counts on the prefill workers are not exported" in n for n in bundle.notes)
    assert all("host_cache_size" not in str(cfg) for cfg in recipe.configs.values())


# ----------------------------------------------------------------------------- TensorRT-LLM buffer
def test_trtllm_transfer_buffer_below_max_seq_len_is_refused_and_the_export_holds_a_whole_sequence():
    p, res = _disagg("nixl")
    _, recipe = export_disaggregated(p, res, engine="trtllm")
    configs = {k: dict(v) for k, v in recipe.configs.items()}
    for name in ("trtllm-prefill.yaml", "trtllm-decode.yaml"):
        configs[name]["cache_transceiver_config"] = {"backend": "NIXL", "max_tokens_in_buffer": 2048}
    old = check_disaggregated(dataclasses.replace(recipe, configs=configs))
    errs = _errors(old.findings, "trtllm.disagg.buffer")
    assert len(errs) == 2 and "2048 is below max_seq_len 2560" in errs[0].message
    assert check_disaggregated(recipe).ok
    assert recipe.configs["trtllm-decode.yaml"]["cache_transceiver_config"]["max_tokens_in_buffer"] == 2560


# ----------------------------------------------------------------------------- 2. TensorRT-LLM EAGLE
def _spec_bundle(engine: str, method: str):
    ckpt = "yuhuili/EAGLE-LLaMA3-Instruct-70B" if method == "eagle" else "yuhuili/EAGLE3-LLaMA3.1-Instruct-70B"
    proj = conf_project(LLAMA_CONF, 1, Layout(tp=8), serving=ServingConfig(
        kv_dtype="fp8", speculative=SpeculativeConfig(method=method, num_tokens=3, draft_checkpoint=ckpt)))
    return export_plan(proj, conf_plan(proj), engine=engine, fmt="yaml")


def test_trtllm_eagle1_is_refused_with_the_reason_and_the_check_catches_decoding_type_eagle():
    with pytest.raises(StudioError, match=r"EAGLE-1.*runs decoding_type Eagle as EAGLE-3.*trtllm.spec.eagle3_only"):
        _spec_bundle("trtllm", "eagle")
    b = _spec_bundle("trtllm", "eagle3")
    assert b.recipe.config["speculative_config"]["decoding_type"] == "Eagle3"
    assert not _errors(check_recipe(b.recipe))
    old = dataclasses.replace(b.recipe, config={**b.recipe.config, "speculative_config": {
        **b.recipe.config["speculative_config"], "decoding_type": "Eagle"}})
    (err,) = _errors(check_recipe(old))
    assert "an EAGLE-1 head cannot load" in err.message and "llm_args.py" in err.source
    assert _spec_bundle("vllm", "eagle").recipe is not None  # EAGLE-1 stays exportable where it runs


# ----------------------------------------------------------------------------- Slurm and multi-node YAML
def _trt_two_nodes(**kw):
    proj = conf_project(LLAMA_CONF, 2, Layout(tp=8, pp=2))
    return export_plan(proj, conf_plan(proj), engine="trtllm", fmt="command", **kw)


def test_srun_takes_slurm_node_names_only():
    before = _trt_two_nodes()
    assert before.recipe.srun_nodelist is None and " -w " not in before.files["trtllm-commands.sh"]
    old = dataclasses.replace(before.recipe, srun_nodelist=("<HOST_0>", "10.0.0.2"))
    assert len(_errors(check_recipe(old), "slurm.nodelist")) == 2
    after = _trt_two_nodes(hosts=["10.0.0.1", "10.0.0.2"], slurm_nodes=["gpu-a01", "gpu-a02"])
    assert "-w gpu-a01,gpu-a02" in after.files["trtllm-commands.sh"]
    assert after.recipe.srun_nodelist == ("gpu-a01", "gpu-a02") and not _errors(check_recipe(after.recipe))
    with pytest.raises(StudioError, match="IP address; srun -w takes Slurm node names"):
        _trt_two_nodes(slurm_nodes=["gpu-a01", "10.0.0.2"])


def test_multi_node_trtllm_writes_the_yaml_on_every_node():
    b = _trt_two_nodes()
    assert b.recipe.config_nodes == (0, 1) and not _errors(check_recipe(b.recipe))
    text = b.files["trtllm-commands.sh"].split("=== Slurm launch")[0]
    assert text.count("cat > trtllm-serve.yaml") == 2
    old = dataclasses.replace(b.recipe, config_nodes=(0,))
    (err,) = _errors(check_recipe(old), "trtllm.multinode.config_every_node")
    assert "node(s) 1 cannot read it" in err.message


def test_cli_export_slurm_nodes(capsys):
    argv = ["export", "--model", "llama-3.1-405b", "--gpu", "h100-sxm", "--nodes", "2", "--tp", "8", "--pp", "2",
            "--engine", "trtllm"]
    assert main([*argv, "--slurm-nodes", "gpu-a01,gpu-a02"]) == 0
    assert "-w gpu-a01,gpu-a02" in capsys.readouterr().out
    assert main([*argv, "--slurm-nodes", "gpu-a01"]) == 2
    assert "one Slurm node name per node" in capsys.readouterr().err


def test_rule_records_reach_the_notes():
    r = rule("vllm.cp.dcp_gqa")
    assert r.cite().startswith("vllm.cp.dcp_gqa: vllm/config/model.py:1578 @ vllm 0.33.0")
