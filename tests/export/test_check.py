"""``export --check``: the run-time rules, config files and the command line (the engine's own
validation: test_engine_check.py)."""

from __future__ import annotations

import pytest

from studio.cli import main
from studio.core.errors import StudioError
from studio.core.layout import Layout
from studio.io.export import export_plan
from studio.io.export.checks.check import check, recipe_with_config_file

from .conftest import LLAMA_70B, MIXTRAL, plan, project


def _recipe(engine: str, model=LLAMA_70B, layout: Layout | None = None, nodes: int = 1):
    proj = project(model, nodes, layout or Layout(tp=8))
    return export_plan(proj, plan(proj), engine=engine, fmt="yaml").recipe


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
def test_cli_check_passes_for_the_generated_recipe(capsys, monkeypatch):
    monkeypatch.delenv("LAYOUT_STUDIO_ENGINE_PYTHON", raising=False)  # no engine interpreter named
    assert main(["export", "--engine", "trtllm", "--check"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].endswith("the recipe passes the engine's run-time rules")
    assert out[-2].startswith("the engine's own validation was not run: tensorrt_llm is not installed")
    assert "--engine-python PATH" in out[-1]  # how to run it


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
