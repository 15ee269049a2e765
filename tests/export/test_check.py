"""``export --check``: the run-time rules, the installed engine's own classes (stand-ins injected
into ``sys.modules``: the engines are not installed here), config files and the command line."""

from __future__ import annotations

import argparse
import json
import sys
import types
from dataclasses import replace

import pytest

from studio.cli import main
from studio.core.errors import StudioError
from studio.core.layout import Layout
from studio.io.export import export_plan
from studio.io.export.checks.check import check, check_with_engine, recipe_with_config_file

from .conftest import LLAMA_70B, MIXTRAL, plan, project


def _recipe(engine: str, model=LLAMA_70B, layout: Layout | None = None, nodes: int = 1):
    proj = project(model, nodes, layout or Layout(tp=8))
    return export_plan(proj, plan(proj), engine=engine, fmt="yaml").recipe


def _install(monkeypatch, dotted: str, **attrs) -> types.ModuleType:
    """Put a stand-in module (and its parent packages) into ``sys.modules``."""
    parts = dotted.split(".")
    for i in range(1, len(parts)):
        monkeypatch.setitem(sys.modules, ".".join(parts[:i]), types.ModuleType(".".join(parts[:i])))
    module = types.ModuleType(dotted)
    for k, v in attrs.items():
        setattr(module, k, v)
    monkeypatch.setitem(sys.modules, dotted, module)
    return module


class FakeEngineArgs:
    """vLLM's EngineArgs as far as the check uses it: add_cli_args + from_cli_args."""

    seen: list[argparse.Namespace] = []

    @staticmethod
    def add_cli_args(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
        parser.add_argument("--model")
        for flag in ("--tensor-parallel-size", "--pipeline-parallel-size", "--data-parallel-size",
                     "--max-model-len", "--gpu-memory-utilization", "--max-num-seqs", "--max-num-batched-tokens",
                     "--max-cudagraph-capture-size"):
            parser.add_argument(flag, type=float if "utilization" in flag else int)
        parser.add_argument("--kv-cache-dtype", choices=["auto", "fp8", "bfloat16", "float16"])
        parser.add_argument("--enable-expert-parallel", action=argparse.BooleanOptionalAction)
        return parser

    @classmethod
    def from_cli_args(cls, ns: argparse.Namespace) -> FakeEngineArgs:
        cls.seen.append(ns)
        if ns.gpu_memory_utilization > 0.95:
            raise ValueError("gpu_memory_utilization must be at most 0.95 here")
        return cls()


def test_no_engine_installed_is_reported_not_required():
    report = check(_recipe("vllm"))
    assert report.ok and report.engine_checked is None
    assert "vllm.engine.arg_utils is not installed here" in report.lines()[-1]


def test_installed_vllm_parses_the_recipe(monkeypatch):
    FakeEngineArgs.seen = []
    _install(monkeypatch, "vllm.engine.arg_utils", EngineArgs=FakeEngineArgs)
    report = check(_recipe("vllm"))
    assert report.ok and report.engine_checked == "vllm.engine.arg_utils.EngineArgs"
    (ns,) = FakeEngineArgs.seen
    assert ns.model == "meta-llama/Llama-3.1-70B" and ns.tensor_parallel_size == 8 and ns.kv_cache_dtype == "fp8"


def test_installed_vllm_refusals_are_findings(monkeypatch):
    _install(monkeypatch, "vllm.engine.arg_utils", EngineArgs=FakeEngineArgs)
    recipe = _recipe("vllm")
    bad_value = replace(recipe, config=recipe.config | {"gpu-memory-utilization": 0.99})
    # the edited fraction also differs from the plan's 0.9 (issue 29: the check holds the recipe to the plan)
    plan_f, f = check(bad_value).findings
    assert plan_f.key == "gpu-memory-utilization" and "differs from the plan's 0.9" in plan_f.message
    assert f.severity == "error" and "at most 0.95" in f.message and f.source.startswith("installed vllm")
    unknown = replace(recipe, config=recipe.config | {"no-such-flag": 3})
    (f,) = check(unknown).findings
    assert "unrecognized arguments: --no-such-flag 3" in f.message


def test_mappings_reach_the_engine_parser_as_json(monkeypatch):
    FakeEngineArgs.seen = []

    class WithDict(FakeEngineArgs):
        @staticmethod
        def add_cli_args(parser):
            FakeEngineArgs.add_cli_args(parser)
            parser.add_argument("--compilation-config", type=json.loads)
            return parser

    _install(monkeypatch, "vllm.engine.arg_utils", EngineArgs=WithDict)
    recipe = _recipe("vllm")
    report = check(replace(recipe, config=recipe.config | {"compilation-config": {"mode": 3}}))
    assert report.ok and FakeEngineArgs.seen[-1].compilation_config == {"mode": 3}


def test_installed_trtllm_config_class_gets_the_yaml_keys(monkeypatch):
    got = {}

    class TorchLlmArgs:
        def __init__(self, **kw):
            got.update(kw)
            if kw.get("tensor_parallel_size", 1) > 4:
                raise ValueError("1 validation error for TorchLlmArgs\ntensor_parallel_size\n  too large")

    _install(monkeypatch, "tensorrt_llm.llmapi.llm_args", TorchLlmArgs=TorchLlmArgs)
    report = check(_recipe("trtllm"))
    assert got["model"] == "meta-llama/Llama-3.1-70B" and got["kv_cache_config"]["dtype"] == "fp8"
    (f,) = report.findings
    assert not report.ok and "\\n" in f.message and "\n" not in f.line()  # one printable line


def test_an_engine_that_fails_to_import_is_reported(monkeypatch):
    def boom(name, *a, **k):
        if name.startswith("sglang"):
            raise RuntimeError("CUDA driver not found")
        return real(name, *a, **k)

    import importlib

    real = importlib.import_module
    monkeypatch.setattr(importlib, "import_module", boom)
    findings, checked, missing = check_with_engine(_recipe("sglang"))
    assert findings == [] and checked is None and "CUDA driver not found" in missing


def test_an_engine_version_without_the_class_is_reported(monkeypatch):
    _install(monkeypatch, "sglang.srt.server_args")
    _, checked, missing = check_with_engine(_recipe("sglang"))
    assert checked is None and "has no ServerArgs" in missing


def test_config_file_replaces_the_recipe_config(tmp_path):
    f = tmp_path / "sglang-serve.yaml"
    f.write_text("tp_size: 16\nattn-dp-size: 2\nmax-running-requests: 64\n")
    recipe = recipe_with_config_file(_recipe("sglang", MIXTRAL, Layout(tp=8, dp=2, ep=16), 2), str(f))
    assert recipe.config == {"tp-size": 16, "attn-dp-size": 2, "max-running-requests": 64}
    err, plan_err = [x for x in check(recipe, with_engine=False).findings if x.severity == "error"]
    assert err.key == "max-running-requests" and "each rank runs 32 sequences, not the planned 64" in err.message
    assert plan_err.key == "max-running-requests" and plan_err.source.endswith("the plan")


@pytest.mark.parametrize(
    "text,match",
    [
        ("a: [1\n", "not valid YAML: .* at line 2"),
        ("a: " + "[" * 5000 + "]" * 5000, "levels are accepted"),
        ("- 1\n- 2\n", "must be a mapping"),
    ],
    ids=["unclosed-list", "5000-nested-lists", "not-a-mapping"],  # readable in --durations
)
def test_bad_config_files_are_one_line_errors(tmp_path, text, match):
    f = tmp_path / "c.yaml"
    f.write_text(text)
    with pytest.raises(StudioError, match=match):
        recipe_with_config_file(_recipe("vllm"), str(f))


# ---------------------------------------------------------------- command line
def test_cli_check_passes_for_the_generated_recipe(capsys):
    assert main(["export", "--engine", "trtllm", "--check"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].endswith("the recipe passes the engine's run-time rules")
    assert out[-1].startswith("not checked with the engine itself")


def test_cli_check_of_an_edited_config_says_what_would_fail(tmp_path, capsys):
    f = tmp_path / "trtllm-serve.yaml"
    f.write_text("tensor_parallel_size: 8\nmax_num_tokens: 2048\nmax_seq_len: 8192\n"
                 "kv_cache_config:\n  dtype: bfloat16\n")
    assert main(["export", "--engine", "trtllm", "--check", str(f)]) == 2
    out = capsys.readouterr().out
    assert "3 problem(s)" in out  # the third: max_num_tokens 2048 is not the plan's 8192 (issue 29)
    assert "max_num_tokens: 2048 differs from the plan's 8192" in out
    assert "kv_cache_config.dtype: 'bfloat16' is refused at model load" in out
    assert "tensorrt_llm/_torch/pyexecutor/model_loader.py" in out  # the rule's source
    assert "enable_chunked_prefill" in out


def test_cli_check_of_a_missing_file_is_one_line(tmp_path, capsys):
    assert main(["export", "--engine", "vllm", "--check", str(tmp_path / "nope.yaml")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "nope.yaml" in err


# ----------------------------------------------------------------------------- vLLM without a GPU
def _gpu_less_vllm(monkeypatch):
    """vLLM as it behaves on a machine without a GPU (issue 30): its platform has no device type,
    add_cli_args raises 'Failed to infer device type' (DeviceConfig('auto') in VllmConfig's
    defaults), and ParallelConfig refuses a world larger than the GPUs the platform reports."""
    import dataclasses as dc

    class PlatformEnum:
        CUDA = "cuda"
        UNSPECIFIED = "unspecified"

    class Platform:
        _enum = PlatformEnum.UNSPECIFIED
        device_type = ""

        @classmethod
        def device_count(cls) -> int:
            return 0

    _install(monkeypatch, "vllm.platforms.interface", Platform=Platform, PlatformEnum=PlatformEnum)
    platforms = _install(monkeypatch, "vllm.platforms", current_platform=Platform(), _current_platform=None)
    platforms.interface = sys.modules["vllm.platforms.interface"]

    @dc.dataclass
    class ParallelConfig:
        tensor_parallel_size: int = 1
        nnodes: int = 1

        def __post_init__(self):
            gpus = platforms._current_platform.device_count()
            if self.tensor_parallel_size > gpus * self.nnodes:
                raise ValueError(f"World size ({self.tensor_parallel_size}) is larger than the number of "
                                 f"available GPUs ({gpus}) in this node.")

    _install(monkeypatch, "vllm.config", ParallelConfig=ParallelConfig)

    class GpuLessEngineArgs(FakeEngineArgs):
        @staticmethod
        def add_cli_args(parser):
            current = platforms._current_platform or platforms.current_platform
            if not current.device_type:
                raise RuntimeError("Failed to infer device type, please set the environment variable "
                                   "`VLLM_LOGGING_LEVEL=DEBUG` to turn on verbose logging")
            return FakeEngineArgs.add_cli_args(parser)

        @classmethod
        def from_cli_args(cls, ns):
            FakeEngineArgs.from_cli_args(ns)
            return ns

    _install(monkeypatch, "vllm.engine.arg_utils", EngineArgs=GpuLessEngineArgs)
    return platforms


def test_gpu_less_vllm_validates_with_its_own_classes_and_no_device(monkeypatch):
    platforms = _gpu_less_vllm(monkeypatch)
    report = check(_recipe("vllm"))
    assert report.ok, report.lines()
    assert report.engine_checked == "vllm.engine.arg_utils.EngineArgs"
    assert platforms._current_platform is None  # the stand-in is gone after the check
    too_wide = replace(_recipe("vllm"), config=_recipe("vllm").config | {"tensor-parallel-size": 16})
    (f,) = [x for x in check(too_wide).findings if x.source.startswith("installed")]
    assert "World size (16) is larger than the number of available GPUs (8)" in f.message
    two_nodes = replace(too_wide, nodes=2)
    assert not [x for x in check(two_nodes).findings if x.source.startswith("installed")]


def test_cli_export_defaults_to_the_project_runtime_and_says_when_it_replans(capsys):
    assert main(["export", "--check"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("vLLM 0.33.0") and not any("re-plans" in ln for ln in out)
    assert main(["export", "--engine", "sglang", "--check"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("SGLang 0.5.23") and "re-plans the layout with SGLang 0.5.23" in out[1]
    assert main(["export", "--engine", "sglang"]) == 0
    assert "re-plans the layout with SGLang" in capsys.readouterr().out  # in the files' notes


# ------------------------------------------------------- the plan's engine values (issue 30)
@pytest.mark.parametrize(
    "engine,yaml_name,key,edited",
    [
        ("vllm", "vllm-serve.yaml", "max-cudagraph-capture-size", 32),
        ("sglang", "sglang-serve.yaml", "cuda-graph-max-bs-decode", 32),
        ("trtllm", "trtllm-serve.yaml", "cuda_graph_config.max_batch_size", 32),
        ("vllm", "vllm-serve.yaml", "max-num-seqs", 7),
        ("trtllm", "trtllm-serve.yaml", "kv_cache_config.free_gpu_memory_fraction", 0.5),
    ],
)
def test_check_of_a_written_recipe_fails_when_a_plan_value_was_edited(tmp_path, capsys, engine, yaml_name, key,
                                                                         edited):
    import yaml

    assert main(["export", "--engine", engine, "--format", "yaml", "-o", str(tmp_path)]) == 0
    capsys.readouterr()
    path = tmp_path / yaml_name
    assert main(["export", "--engine", engine, "--check", str(path)]) == 0  # as written: the plan's values
    capsys.readouterr()
    cfg = yaml.safe_load(path.read_text())
    *parents, last = key.split(".")
    node = cfg
    for part in parents:
        node = node[part]
    planned = node[last]
    assert planned != edited
    node[last] = edited
    path.write_text(yaml.safe_dump(cfg))
    assert main(["export", "--engine", engine, "--check", str(path)]) == 2
    out = capsys.readouterr().out
    assert f"{key}: {edited} differs from the plan's {planned}" in out
