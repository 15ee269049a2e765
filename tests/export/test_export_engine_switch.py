"""Exporting to another engine than the project's re-plans with that engine's defaults."""

from studio.commands.export import engine_project
from studio.commands.options.project_args import load_base_project
from studio.engine.runtime import engine_setup
from studio.service.project_edits.engine_choice import with_engine


def test_a_fraction_at_the_old_engines_default_follows_the_new_engine():
    vllm = with_engine(load_base_project(None), "vllm", None)  # fraction = vLLM's default here
    moved, said = engine_project(vllm, "sglang")
    sglang_default = engine_setup(with_engine(vllm, "sglang", None)).default_fraction
    assert moved.serving.runtime == "sglang" and moved.serving.runtime_version is None
    assert moved.serving.gpu_memory_utilization == sglang_default != vllm.serving.gpu_memory_utilization
    assert said is not None and f"memory fraction {sglang_default:g} is that engine's default" in said


def test_a_fraction_the_user_chose_is_kept():
    base = load_base_project(None)
    own = base.replace(serving=base.serving.replace(gpu_memory_utilization=0.77))
    moved, said = engine_project(own, "sglang")
    assert moved.serving.gpu_memory_utilization == 0.77
    assert said is not None and "memory fraction 0.77 is kept" in said
