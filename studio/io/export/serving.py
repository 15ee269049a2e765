"""Serving settings every engine derives from the plan in the same way: the model argument, the
served layout and weight format, context length, tokens per step, memory fractions, layer split,
the model's dtype and the KV-cache value the engine's rules allow."""

from __future__ import annotations

import math

from studio.core.layout import Layout
from studio.core.precision import DType
from studio.core.project import Project
from studio.engine.plan.results import PlanResult
from studio.io.export.bundle import EngineRecipe
from studio.io.export.checks.safety import check_model_argument


def model_path(project: Project, given: str | None) -> tuple[str, list[str]]:
    """The model argument of the launch line and a note when it had to be guessed.

    Raises
    ------
    StudioError
        ``given`` (or the model's Hugging Face id) is empty, starts with ``-`` or holds control,
        format or bidirectional characters (see :func:`.safety.check_model_argument`).
    """
    if given is not None:
        return check_model_argument(given, "the model path", field="model_path"), []
    if project.model.hf_model_id:
        return check_model_argument(project.model.hf_model_id, "model.hf_model_id"), []
    return check_model_argument(project.model.id, "model.id"), [
        f"The model '{project.model.name}' has no Hugging Face id; the launch lines use its preset id "
        f"'{project.model.id}'. Give the model path (the checkpoint folder or the Hugging Face id) to export with it."
    ]


def kv_dtype(project: Project) -> DType:
    return DType(project.serving.kv_dtype)


def quantized_to(project: Project) -> tuple[DType | None, list[str]]:
    """The weight format served when it is narrower than the checkpoint's, else ``None``.

    Returns the format and notes (e.g. when the plan asks for wider weights than the checkpoint,
    which no engine does).
    """
    ckpt = project.model.precision
    served = project.serving.effective_precision(ckpt)
    if served == ckpt:
        return None, []
    key = "experts" if project.model.is_moe else "mlp"
    target = DType(getattr(served, key))
    source = DType(getattr(ckpt, key))
    if target.bytes >= source.bytes:
        return None, [
            f"The plan serves {key} weights as {target.value}; the checkpoint stores "
            f"{source.value}. Engines serve the checkpoint's own format, so point the model path at "
            f"a {target.value} checkpoint to match the plan's memory figures."
        ]
    return target, []


def served_layout(project: Project, plan: PlanResult) -> tuple[Layout, list[str]]:
    """The plan's layout as an engine serves it: expert parallelism dropped (with a note) for a
    dense model, where EP has nothing to split."""
    lay = plan.layout
    if project.model.is_moe or lay.ep <= 1:
        return lay, []
    note = f"{project.model.name} is a dense model; EP={lay.ep} has no effect and is dropped."
    return lay.replace(ep=1), [note]


def max_model_len(project: Project, plan: PlanResult) -> int:
    """Context length to configure: the model's full context when one sequence of it fits the
    plan's KV cache per replica, else ``isl + osl`` (what the plan was sized for)."""
    need = project.workload.isl + project.workload.osl
    full = project.model.max_context
    if plan.kv_capacity_tokens >= full >= need:
        return full
    return need


def batched_tokens(project: Project, plan: PlanResult) -> int:
    """Tokens per engine step: the token budget the plan's iterations were costed with
    (``serving.max_num_batched_tokens`` or the engine default, ``plan.load.token_budget``), so the
    engine chunks prompts as the plan's TTFT and TPOT assume. A plan without a load summary
    (older results) gets one whole prompt next to a decode token of every other running sequence."""
    if plan.load is not None:
        # an iteration must hold one decode token of every running sequence: vLLM refuses to
        # start when max_num_batched_tokens < max_num_seqs (SchedulerConfig's check)
        return max(int(plan.load.token_budget), sequences_per_rank(plan))
    return project.workload.isl + max(plan.batch - 1, 0)


def budget_note(project: Project, plan: PlanResult) -> str | None:
    """Why the exported token budget differs from the plan's, when it does."""
    if plan.load is None or batched_tokens(project, plan) == plan.load.token_budget:
        return None
    return (f"The plan's token budget ({plan.load.token_budget:,}) is below its {sequences_per_rank(plan):,} "
            "running sequences; the engine needs room for one decode token of each per step, so the budget "
            f"is raised to {batched_tokens(project, plan):,}.")


def kv_memory_fractions(plan: PlanResult) -> tuple[float, float]:
    """``(static, free)`` memory fractions for the busiest GPU, rounded down to 3 digits.

    ``static`` = (weights + KV pool) / capacity (SGLang's ``mem-fraction-static``); ``free`` = KV
    pool / memory left after weights, activations and overhead (TensorRT-LLM's
    ``free_gpu_memory_fraction``). The KV pool is the plan's usable memory minus everything else.
    """
    statics, frees = [], []
    for m in plan.memory:
        pool = m.usable - m.weights - m.activations - m.overhead
        statics.append((m.weights + max(pool, 0.0)) / m.capacity)
        left = m.capacity - m.weights - m.activations - m.overhead
        frees.append(max(pool, 0.0) / left if left > 0 else 0.0)
    if not statics:
        return 0.0, 0.0
    return math.floor(min(statics) * 1000) / 1000, math.floor(min(frees) * 1000) / 1000


def uneven_split(project: Project, plan: PlanResult) -> tuple[int, ...] | None:
    """Layers per stage when they are not all equal, else ``None``."""
    split = plan.layout.stage_layers(project.model.num_layers)
    return tuple(split) if len(set(split)) > 1 else None


def partition_env(project: Project, plan: PlanResult, env_name: str | None) -> list[tuple[str, str]]:
    """``[(env_name, "30,33,...")]`` for an uneven layer split when the engine reads one from the
    environment (vLLM ``VLLM_PP_LAYER_PARTITION``, SGLang ``SGLANG_PP_LAYER_PARTITION``), else ``[]``."""
    split = uneven_split(project, plan)
    if not (split and env_name):
        return []
    return [(env_name, ",".join(str(n) for n in split))]


_TORCH_NAMES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}


def model_dtype(project: Project) -> str:
    """The dtype the engine runs the model in: ``float16`` for int4 (AWQ/GPTQ) weights, whose
    checkpoints are float16, else the dtype of the unquantised modules (``bfloat16`` for almost
    every current checkpoint)."""
    prec = project.serving.effective_precision(project.model.precision)
    if DType.INT4 in (prec.attention, prec.mlp, prec.experts):
        return "float16"
    return _TORCH_NAMES.get(DType(prec.embeddings).value, "bfloat16")


def kv_cache_value(project: Project, emit: dict[str, str], engine_name: str) -> tuple[str, list[str]]:
    """The KV-cache dtype to write (from the engine's rules) and a note when ``auto`` stores the
    cache in a 16-bit dtype other than the plan's (same bytes per value, so the memory figures
    hold)."""
    planned = kv_dtype(project).value
    value = emit[planned]
    notes: list[str] = []
    if value == "auto" and planned in _TORCH_NAMES:
        runs = model_dtype(project)
        if _TORCH_NAMES[planned] != runs:
            notes.append(
                f"The plan stores the KV cache as {planned}; {engine_name} keeps a 16-bit KV cache in "
                f"the model's dtype ({runs}), written as 'auto' (same 2 bytes per value)."
            )
    return value, notes


def sequences_per_rank(plan: PlanResult) -> int:
    """Concurrent sequences the plan gives each replica (the engines' batch limit per rank)."""
    return plan.batch


#: NVIDIA Blackwell product names (B200, B300, GB200, GB300, RTX PRO 6000 Blackwell; NVIDIA's
#: data-centre and workstation line-ups).
_BLACKWELL = ("B200", "B300", "GB200", "GB300", "BLACKWELL")


def is_blackwell(project: Project, gpu_types: tuple[str, ...] | None = None) -> bool:
    """Whether every GPU the plan uses (``gpu_types``, default all the cluster's) is an NVIDIA
    Blackwell: by product name, or an NVIDIA spec with FP4 tensor cores (Blackwell's first)."""
    specs = [s for s in project.cluster.gpu_specs.values() if gpu_types is None or s.id in gpu_types]
    return bool(specs) and all(
        s.vendor == "nvidia" and (any(k in s.name.upper() for k in _BLACKWELL) or s.tflops_fp4 is not None)
        for s in specs
    )


def preset_config_json(project: Project) -> dict[str, object] | None:
    """The Hugging Face ``config.json`` of the project's model when it is a bundled preset whose
    shape the project has not changed (``presets/models/<id>.json`` ``config``); else ``None``."""
    import json

    from studio.io.presets import presets_root

    m = project.model
    entry = presets_root() / "models" / f"{m.id}.json"
    try:
        data = json.loads(entry.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    cfg = data.get("config") if isinstance(data, dict) else None
    if not isinstance(cfg, dict):
        return None
    inner = cfg.get("text_config")
    text: dict = inner if isinstance(inner, dict) else cfg
    same = (text.get("num_hidden_layers") == m.num_layers and text.get("num_attention_heads") == m.num_attention_heads
            and text.get("hidden_size") == m.hidden_size)
    return cfg if same else None


def engine_recipe(engine: str, project: Project, plan: PlanResult, model: str, config: dict[str, object],
                  env: dict[str, str], host: str | None, pp: int, plan_values: dict[str, object] | None = None,
                  **more: object) -> EngineRecipe:
    """The :class:`EngineRecipe` of one export: the engine arguments and what its checks read of
    the model, the GPUs and the plan (``more``: nodes, config nodes, ``srun -w`` list, plan values)."""
    from studio.io.export.checks.rules import rules_for

    m = project.model
    return EngineRecipe(
        engine=engine, model=model, config=dict(config), env=dict(env), host=host,
        model_dtype=model_dtype(project), mla=m.mla is not None, num_layers=m.num_layers, pp=pp,
        sequences_per_rank=sequences_per_rank(plan), version=rules_for(engine).release,
        blackwell=is_blackwell(project), kv_heads=m.num_kv_heads, attention_heads=m.num_attention_heads,
        experts=m.moe.num_experts if m.moe is not None else 0,
        plan=dict(plan_values or {}), hf_config=preset_config_json(project), **more,  # type: ignore[arg-type]  # the EngineRecipe fields named by the exporters
    )


def graph_capture_max(engine: str, project: Project, tp: int, pp: int) -> int | None:
    """The largest CUDA-graph batch the plan assumed for ``engine`` (the engine profile's capture
    sizes for a TP×PP server on the cluster's smallest GPU), or ``None`` when it captures none.

    Written as vLLM ``max_cudagraph_capture_size``, SGLang ``cuda_graph_max_bs_decode`` and
    TensorRT-LLM ``cuda_graph_config.max_batch_size``: each engine derives the same capture list
    from that maximum as the profile's ranges (``defaults.cuda_graphs`` of presets/engines/*.json).
    """
    from studio.engine.runtime import engine_setup

    sv = project.serving
    if sv.runtime != engine:
        project = project.replace(serving=sv.replace(runtime=engine, runtime_version=None))
    sizes = engine_setup(project, tp, pp).graph_sizes
    return int(sizes[-1]) if sizes else None
