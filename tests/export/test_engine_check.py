"""``export --check``'s second layer: the engine's own parser and config classes, run in a separate
Python process (issue 30). The engines are not installed in CI, so stand-in packages written to a
temporary ``PYTHONPATH`` (tests/export/fake_engines.py) expose the same entry points and refuse
values with known messages; the last test runs the real vLLM when the test's Python has it."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from dataclasses import replace

import pytest

from studio.cli import main
from studio.core.layout import Layout
from studio.io.export import export_plan
from studio.io.export.checks.check import check, check_with_engine
from studio.io.export.checks.engine_run import ENGINE_PYTHON_ENV, choose_python

from . import fake_engines
from .conftest import LLAMA_70B, plan, project


def _recipe(engine: str, layout: Layout | None = None, nodes: int = 1):
    proj = project(LLAMA_70B, nodes, layout or Layout(tp=8))
    return export_plan(proj, plan(proj), engine=engine, fmt="yaml").recipe


@pytest.fixture
def engines(tmp_path, monkeypatch):
    """Install stand-in packages on the PYTHONPATH the check's engine process sees; returns the
    function that installs one (``engines(fake_engines.VLLM)``)."""
    monkeypatch.delenv(ENGINE_PYTHON_ENV, raising=False)
    root = tmp_path / "site"

    def install(files: dict[str, str]) -> None:
        fake_engines.write_package(root, files)
        monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]))
        monkeypatch.syspath_prepend(str(root))  # so this Python finds the engine and runs the check with it

    return install


@pytest.fixture
def no_engine(monkeypatch):
    """No engine interpreter named; the check decides from this Python alone."""
    monkeypatch.delenv(ENGINE_PYTHON_ENV, raising=False)


def test_without_the_engine_the_rules_run_and_the_report_says_the_engine_did_not(no_engine):
    report = check(_recipe("vllm"))
    assert report.ok and report.engine_checked is None
    assert report.lines()[-1] == ("the engine's own validation was not run: vllm is not installed in this Python "
                                  "environment, and no engine interpreter was named; only the rules were applied")


def test_cli_without_the_engine_says_how_to_run_it(no_engine, capsys):
    assert main(["export", "--engine", "vllm", "--check"]) == 0  # the rules pass
    out = capsys.readouterr().out.splitlines()
    assert out[-2].startswith("the engine's own validation was not run")
    assert "--engine-python PATH" in out[-1] and ENGINE_PYTHON_ENV in out[-1]


def test_gpu_less_vllm_accepts_the_recipe_under_the_platform_stand_in(engines):
    """The stand-in's add_cli_args raises 'Failed to infer device type' without a platform, as
    vLLM does on a machine without a GPU: the check puts a CUDA platform stand-in in its place."""
    engines(fake_engines.VLLM)
    assert choose_python("vllm") == sys.executable
    report = check(_recipe("vllm"))
    assert report.ok, report.lines()
    assert report.engine_checked is not None
    assert report.engine_checked.startswith("vllm 0.33.0: a CUDA platform stand-in with 8 GPU(s) per node")
    assert "EngineArgs.from_cli_args; ParallelConfig" in report.engine_checked
    assert report.lines()[-1].startswith("checked with the engine itself: vllm 0.33.0")
    assert not any("engine log line" in ln for ln in report.lines())  # the engine's own output is kept away


def test_the_engine_parses_the_recipe_words(engines, monkeypatch):
    engines(fake_engines.VLLM)
    monkeypatch.setenv("FAKE_ENGINE_ECHO", "1")
    (f,) = check_with_engine(_recipe("vllm"))[0]
    parsed = json.loads(f.message.split("parsed ", 1)[1])
    assert parsed["model"] == "meta-llama/Llama-3.1-70B"
    assert parsed["tensor_parallel_size"] == 8 and parsed["kv_cache_dtype"] == "fp8"


def test_the_engines_refusal_is_reported_verbatim_and_the_check_fails(engines, capsys):
    engines(fake_engines.VLLM)
    recipe = _recipe("vllm")
    too_wide = replace(recipe, config=recipe.config | {"tensor-parallel-size": 16})
    report = check(too_wide)
    (f,) = [x for x in report.findings if x.source.startswith("installed")]
    assert not report.ok and f.severity == "error"
    assert "World size (16) is larger than the number of available GPUs (8) in this node." in f.message
    assert f.source == "installed vllm.engine.arg_utils.EngineArgs (vllm 0.33.0)"
    assert not [x for x in check(replace(too_wide, nodes=2)).findings if x.source.startswith("installed")]
    unknown = replace(recipe, config=recipe.config | {"no-such-flag": 3})
    (f,) = check(unknown).findings
    assert "unrecognized arguments: --no-such-flag 3" in f.message
    assert "Traceback" not in " ".join(check(unknown).lines())


def test_cli_exit_code_follows_the_engine(engines, tmp_path, capsys):
    engines(fake_engines.VLLM)
    assert main(["export", "--engine", "vllm", "--check"]) == 0
    assert "checked with the engine itself: vllm 0.33.0" in capsys.readouterr().out
    edited = tmp_path / "vllm-serve.yaml"
    edited.write_text("tensor-parallel-size: 8\nkv-cache-dtype: fp8\ngpu-memory-utilization: 0.99\n")
    assert main(["export", "--engine", "vllm", "--check", str(edited)]) == 2
    out = capsys.readouterr().out
    assert "the engine refuses the recipe: gpu_memory_utilization must be at most 0.95 here" in out


def test_a_named_interpreter_runs_the_engine(tmp_path, monkeypatch, capsys):
    """``--engine-python`` (here this Python, with the stand-in only on the child's PYTHONPATH, so
    this process cannot import it)."""
    monkeypatch.delenv(ENGINE_PYTHON_ENV, raising=False)
    root = fake_engines.write_package(tmp_path / "site", fake_engines.SGLANG)
    monkeypatch.setenv("PYTHONPATH", str(root))
    assert choose_python("sglang") is None
    assert main(["export", "--engine", "sglang", "--check", "--engine-python", sys.executable]) == 2
    out = capsys.readouterr().out
    assert "the engine refuses the recipe: tp_size > 4 is not supported by this stand-in" in out
    monkeypatch.setenv(ENGINE_PYTHON_ENV, sys.executable)
    assert choose_python("sglang") == sys.executable


def test_a_named_interpreter_that_cannot_run_fails_the_check(no_engine, tmp_path, capsys):
    missing = tmp_path / "no-python"
    assert main(["export", "--engine", "vllm", "--check", "--engine-python", str(missing)]) == 2
    out = capsys.readouterr().out
    assert f"cannot start the engine interpreter {missing}" in out


def test_trtllm_pydantic_class_gets_the_yaml_keys(engines):
    engines(fake_engines.TRTLLM)
    (f,) = check(_recipe("trtllm")).findings
    assert "too large" in f.message and "\n" not in f.line()  # one printable line


def test_trtllm_args_are_built_as_trtllm_serve_builds_them(engines, monkeypatch):
    """With ``update_llm_args_with_extra_dict`` in the engine, the check merges the config file into
    the command line's arguments as ``trtllm-serve MODEL --config FILE`` does: the model, the PyTorch
    backend and, without a GPU, the recipe's GPUs per node."""
    engines(fake_engines.TRTLLM_SERVE)
    monkeypatch.setenv("FAKE_ENGINE_ECHO", "1")
    (f,) = check(_recipe("trtllm")).findings
    built = json.loads(f.message.split("built ", 1)[1].rsplit(" via ", 1)[0])
    assert built["model"] == "meta-llama/Llama-3.1-70B" and built["backend"] == "pytorch"
    assert built["gpus_per_node"] == 8 and built["tensor_parallel_size"] == 8
    assert f.message.endswith("via ['trtllm-serve.yaml']")


def test_trtllm_mapping_is_built_and_its_refusal_reported(engines):
    engines(fake_engines.TRTLLM_SERVE)
    recipe = _recipe("trtllm")
    report = check(recipe)
    assert report.ok and report.engine_checked
    assert "update_llm_args_with_extra_dict" in report.engine_checked and "Mapping" in report.engine_checked
    assert report.engine_checked.startswith("tensorrt_llm source @test")  # the package's own version
    bad = replace(recipe, config=recipe.config | {"moe_expert_parallel_size": 3})
    (f,) = [x for x in check(bad).findings if x.source.startswith("installed")]
    assert "moe_tp_size * moe_ep_size * moe_cluster_size must equal to moe_world_size" in f.message
    # the load balancer's slots are set up over the EP ranks, as the model load does with EP
    lb = recipe.config | {"moe_expert_parallel_size": 4, "moe_config": {"load_balancer": {"num_slots": 10}}}
    (f,) = [x for x in check(replace(recipe, config=lb)).findings if x.source.startswith("installed")]
    assert "`num_slots` (10) must be divisible by `ep_size` (4)." in f.message
    even = check(replace(recipe, config=lb | {"moe_config": {"load_balancer": {"num_slots": 12}}}))
    assert even.ok and "MoeLoadBalancerConfig.setup" in (even.engine_checked or "")


def test_trtllm_disaggregated_router_file_is_parsed_by_the_engine(engines):
    """The first prefill server's check also parses disagg-config.yaml as ``trtllm-serve
    disaggregated -c`` does (``parse_disagg_config_file``); its refusal names the file."""
    from studio.core.serving_mode import parse_pools
    from studio.core.workload import Workload
    from studio.engine.disagg.evaluate import evaluate_disaggregated
    from studio.io.export.checks.disagg_check import check_disaggregated
    from studio.io.export.disaggregated.disagg import export_disaggregated
    from tests.engine.fixtures import H200, HGX_H200
    from tests.engine.fixtures import LLAMA_70B as LLAMA
    from tests.engine.fixtures import cluster as hgx
    from tests.engine.fixtures import project as proj

    engines(fake_engines.TRTLLM_SERVE)
    p = proj(hgx(HGX_H200, 2, H200), LLAMA, workload=Workload(isl=2048, osl=256))
    _, recipe = export_disaggregated(p, evaluate_disaggregated(p, parse_pools("2P:tp4,1D:tp8")), engine="trtllm")
    report = check_disaggregated(recipe)
    assert report.ok and "parse_disagg_config_file" in (report.engine_checked or "")
    router = recipe.configs["disagg-config.yaml"]
    bad = {**router, "context_servers": {**router["context_servers"], "num_instances": 3}}
    report = check_disaggregated(replace(recipe, configs={**recipe.configs, "disagg-config.yaml": bad}))
    assert any("disagg-config.yaml: Number of hostnames (2) should be equal to the number of instances (3)"
               in f.message for f in report.findings)


def test_an_engine_that_fails_to_import_is_reported_not_required(engines):
    engines(fake_engines.BROKEN_VLLM)
    report = check(_recipe("vllm"))
    assert report.ok and report.engine_checked is None
    assert "importing vllm.engine.arg_utils failed (RuntimeError: libcuda.so.1" in report.engine_missing


def test_an_engine_version_without_the_class_is_reported(engines):
    engines({"sglang/__init__.py": "", "sglang/srt/__init__.py": "", "sglang/srt/server_args.py": ""})
    _, checked, missing = check_with_engine(_recipe("sglang"))
    assert checked is None and "has no ServerArgs" in missing


def test_an_engine_that_hangs_is_stopped(engines):
    engines(fake_engines.SLOW_SGLANG)
    _, checked, missing = check_with_engine(_recipe("sglang"), timeout_s=2)
    assert checked is None and missing == "the engine's validation did not finish within 2 s"


@pytest.mark.skipif(importlib.util.find_spec("vllm") is None and not os.environ.get(ENGINE_PYTHON_ENV),
                    reason="vLLM is not installed in this Python and LAYOUT_STUDIO_ENGINE_PYTHON is unset "
                    "(CI cannot install it)")
def test_real_vllm_accepts_the_recipe_and_refuses_eplb_without_ep():
    """Runs only where vLLM itself is installed (this Python, or the interpreter named by
    LAYOUT_STUDIO_ENGINE_PYTHON); skipped otherwise, e.g. in CI."""
    recipe = _recipe("vllm")
    report = check(recipe)
    assert report.ok and report.engine_checked and report.engine_checked.startswith("vllm 0.")
    eplb = replace(recipe, config=recipe.config | {"enable-eplb": True})
    (f,) = [x for x in check(eplb).findings if x.source.startswith("installed")]
    assert "enable_expert_parallel must be True to use EPLB" in f.message
    # issue 30, family 4: decode CP 2 next to prefill CP 2 with TP4 on Llama-3.1-70B (8 KV heads)
    pcp = _recipe("vllm", Layout(tp=4, dp=2))
    assert pcp.hf_config is not None  # the preset's config.json: vLLM builds its ModelConfig too
    one_group = pcp.config | {"data-parallel-size": 1, "prefill-context-parallel-size": 2}  # TP4 × PCP2 = 8 GPUs
    dcp = replace(pcp, config=one_group | {"decode-context-parallel-size": 2})
    (f,) = [x for x in check(dcp).findings if x.source.startswith("installed")]
    assert "Decode context parallelism for GQA/MQA requires `--tensor-parallel-size` (4)" in f.message
    assert check(replace(dcp, config=one_group)).ok  # the recipe the export writes now: PCP alone


def test_the_reports_launch_commands_carry_the_engines_verdict(engines):
    """The report's appendix starts each engine's commands with the check's lines, the engine's own
    validation included where it is installed (here the vLLM stand-in only)."""
    from studio.service.report.report_content import _exports

    engines(fake_engines.VLLM)
    proj = project(LLAMA_70B, 1, Layout(tp=8))
    out = dict(_exports(proj, plan(proj)))
    vllm_head = [ln for ln in out["vLLM"].splitlines() if ln.startswith("# ")]
    assert any(ln.startswith("# checked with the engine itself: vllm 0.33.0") for ln in vllm_head)
    assert not any("start-up rules only" in ln for ln in vllm_head)
    sglang_head = out["SGLang"].splitlines()[:4]
    assert any("the engine's own validation was not run: sglang is not installed" in ln for ln in sglang_head)


def test_vllm_builds_its_whole_config_from_the_models_config_json(engines, monkeypatch):
    """With the preset's config.json the check runs create_engine_config on a folder holding only
    that file (no weights): what only the model config knows — decode CP on a GQA model, issue 30
    family 4 — is refused with the engine's message, which names the model, not the folder."""
    engines(fake_engines.VLLM_FULL)
    recipe = _recipe("vllm", Layout(tp=4, dp=2))
    assert recipe.hf_config is not None and recipe.hf_config["num_key_value_heads"] == 8
    ok = check(recipe)
    assert ok.ok and "create_engine_config (every config class" in (ok.engine_checked or "")
    dcp = replace(recipe, config=recipe.config | {"decode-context-parallel-size": 2})
    (f,) = [x for x in check(dcp).findings if x.source.startswith("installed")]
    assert "requires `--tensor-parallel-size` (4) to be greater than the model's total number of KV heads (8)" in f.message
    monkeypatch.setenv("FAKE_KERNELS_MISSING", "1")  # a kernel that does not load here is not a refusal
    report = check(recipe)
    assert report.ok and "create_engine_config stopped at an import of GPU kernels" in (report.engine_checked or "")
    assert "ParallelConfig" in (report.engine_checked or "")
