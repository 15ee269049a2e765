"""TensorRT-LLM 1.4 export: ``trtllm-serve MODEL --config trtllm-serve.yaml`` with the exact
LLM-API (``TorchLlmArgs``) field names, launched by ``mpirun`` or ``srun`` with
``trtllm-llmapi-launch`` when the server spans nodes.

Mapping rules: world = TP × PP MPI ranks; MoE ``moe_tensor_parallel_size`` ×
``moe_expert_parallel_size`` = ``tensor_parallel_size``. TensorRT-LLM has no engine-level data
parallelism: replicas run as separate servers, except an MoE plan whose EP reaches across the
replicas (EP > TP), which runs as one server with attention data parallelism.

Run-time rules (:mod:`.rules`): the model loader accepts only ``auto``/``fp8``/``nvfp4`` as
``kv_cache_config.dtype`` (a 16-bit KV cache is ``auto``); a prompt longer than ``max_num_tokens``
is refused unless ``enable_chunked_prefill`` is on; ``trtllm-serve`` listens on localhost unless
``--host`` is given.
"""

from __future__ import annotations

from studio.core.layout import Layout
from studio.core.project import Project
from studio.engine.plan.results import PlanResult
from studio.io.export import common as c
from studio.io.export.checks.rules import rules_for
from studio.io.export.cp.context_parallel import CpExport, cp_export

SERVE_PORT = 8000  # trtllm-serve --port default
YAML_NAME = "trtllm-serve.yaml"
GRAPH_KEY = "cuda_graph_config.max_batch_size"  # CudaGraphConfig.max_batch_size (llm_args.py)
LISTEN = "0.0.0.0"  # every interface (trtllm-serve's default is localhost)


def _mapping(project: Project, plan: PlanResult):
    lay, notes = c.served_layout(project, plan)
    cpx = cp_export("trtllm", project, plan)
    if cpx is not None:
        return _cp_mapping(project, plan, lay, notes, cpx)
    moe = project.model.is_moe
    cfg: dict[str, object] = {}
    attn_dp = moe and lay.ep > lay.tp
    if attn_dp:
        world_tp = lay.tp * lay.dp
        cfg["tensor_parallel_size"] = world_tp
        cfg["pipeline_parallel_size"] = lay.pp
        cfg["moe_tensor_parallel_size"] = world_tp // lay.ep
        cfg["moe_expert_parallel_size"] = lay.ep
        cfg["enable_attention_dp"] = True
        if lay.tp > 1:
            notes.append(
                f"TensorRT-LLM has no engine-level data parallelism. EP={lay.ep} reaches across the "
                f"{lay.dp} replicas, so this runs as one server over {world_tp} GPUs per stage with "
                "attention data parallelism, where attention is not tensor-parallel. Nearest runnable "
                f"layout: TP1 x DP{world_tp} x EP{lay.ep}."
            )
            lay = lay.replace(tp=1, dp=world_tp)
        else:
            notes.append(
                "TensorRT-LLM has no engine-level data parallelism; the replicas run as attention "
                f"data-parallel ranks of one server (enable_attention_dp, EP={lay.ep})."
            )
        mode = "one"
    else:
        cfg["tensor_parallel_size"] = lay.tp
        cfg["pipeline_parallel_size"] = lay.pp
        if moe:
            cfg["moe_tensor_parallel_size"] = lay.tp // lay.ep
            cfg["moe_expert_parallel_size"] = lay.ep
            cfg["enable_attention_dp"] = False
        mode = "replicas" if lay.dp > 1 else "one"
        if mode == "replicas":
            notes.append(
                f"TensorRT-LLM has no engine-level data parallelism; the {lay.dp} replicas run as "
                f"{lay.dp} separate trtllm-serve instances (put a load balancer in front)."
            )
    split = c.uneven_split(project, plan)
    if split:
        cfg["pp_partition"] = list(split)
    return lay, mode, cfg, notes


def _cp_mapping(
    project: Project, plan: PlanResult, lay: Layout, notes: list[str], cpx: CpExport
) -> tuple[Layout, str, dict[str, object], list[str]]:
    """Context parallelism: Helix (TP / CP attention heads x CP KV shards) or one ring-CP server per
    CP group; the returned grouping layout puts each server's GPUs together."""
    tp = cpx.tensor_parallel or lay.tp
    cfg: dict[str, object] = {"tensor_parallel_size": tp, "pipeline_parallel_size": lay.pp}
    if project.model.is_moe:
        cfg["moe_tensor_parallel_size"] = lay.tp // lay.ep
        cfg["moe_expert_parallel_size"] = lay.ep
        cfg["enable_attention_dp"] = False
    cfg.update(cpx.config)
    notes = notes + list(cpx.notes)
    servers = cpx.server_layout if cpx.server_layout is not None else lay
    replicas = servers.dp
    if replicas > 1:
        notes.append(f"TensorRT-LLM has no engine-level data parallelism; the {replicas} replicas run as "
                     f"{replicas} separate trtllm-serve instances (put a load balancer in front).")
    split = c.uneven_split(project, plan)
    if split:
        cfg["pp_partition"] = list(split)
    return servers, "replicas" if replicas > 1 else "one", cfg, notes


def _config(project: Project, plan: PlanResult, cfg: dict[str, object]) -> list[str]:
    notes: list[str] = []
    rules = rules_for("trtllm")
    cfg[rules.batch.key] = c.sequences_per_rank(plan)
    tokens = c.batched_tokens(project, plan)
    seq = c.max_model_len(project, plan)
    cfg[rules.chunk.tokens_key] = tokens
    cfg[rules.chunk.context_key] = seq
    if (note := c.budget_note(project, plan)) is not None:
        notes.append(note)
    if tokens < seq and rules.chunk.switch_key:
        cfg[rules.chunk.switch_key] = True
        what = ("the token budget the plan's steps were costed with" if plan.load is not None else
                f"one prompt of {project.workload.isl} tokens next to a decode token of every other sequence")
        notes.append(
            f"{rules.chunk.tokens_key} {tokens} ({what}) is below {rules.chunk.context_key} {seq}: "
            f"{rules.chunk.switch_key} is on, so longer prompts are prefilled in chunks instead of "
            "refused."
        )
    _, free = c.kv_memory_fractions(plan)
    if free <= 0:
        free = 0.9
        notes.append(
            "The plan leaves no memory for the KV cache; free_gpu_memory_fraction is left at "
            "TensorRT-LLM's default 0.9."
        )
    kv, kv_notes = c.kv_cache_value(project, rules.kv.emit, "TensorRT-LLM")
    notes += kv_notes
    cfg["kv_cache_config"] = {"free_gpu_memory_fraction": free, "dtype": kv}
    if (graphs := c.graph_capture_max("trtllm", project, plan.layout.tp, plan.layout.pp)) is not None:
        cfg["cuda_graph_config"] = {"max_batch_size": graphs}  # the capture sizes the plan assumed
    quant, qnotes = c.quantized_to(project)
    notes += qnotes
    if quant is not None:
        notes.append(
            f"TensorRT-LLM takes the weight format from the checkpoint: point MODEL at a "
            f"{quant.value} checkpoint (e.g. quantised with NVIDIA ModelOpt)."
        )
    from studio.io.export.speculative import spec

    notes += spec.apply("trtllm", project, cfg)
    from studio.io.export.features import apply_features
    from studio.io.export.prefix_cache import apply_prefix_cache

    notes += apply_prefix_cache("trtllm", "TensorRT-LLM", rules.release, project, cfg)
    notes += apply_features("trtllm", "TensorRT-LLM", rules.release, project, cfg,
                            experts_parallel=int(cfg.get("moe_expert_parallel_size", 1)) > 1,  # type: ignore[call-overload]  # ints set by _mapping
                            attention_dp=cfg.get("enable_attention_dp") is True)
    return notes


def _serve(model: str, extra: list[tuple[str, object]]) -> list[list[c.Word]]:
    groups: list[list[c.Word]] = [["trtllm-serve", model]]
    return groups + c.flag_groups([("--config", YAML_NAME), ("--host", LISTEN), *extra])


def _steps(dep: c.Deployment, groups: tuple[c.Group, ...], model: str, recipe: str) -> tuple[c.Step, ...]:
    steps = []
    for g in groups:
        extra: list[tuple[str, object]] = []
        if g.port_offset:
            extra.append(("--port", SERVE_PORT + g.port_offset))
        head = c.group_node_index(dep, g, 0)
        world = sum(n.gpus for n in g.nodes)
        if len(g.nodes) == 1:
            steps.append(c.Step(node=head, text=c.shell_command(_serve(model, extra), c.devices_env(g, 0))))
            continue
        if recipe == "mpirun":
            hosts = c.hosts_word(dep, [(n.node, n.gpus) for n in g.nodes], ",")
            launcher: list[list[c.Word]] = [["mpirun", "-H", hosts, "-np", world, "--allow-run-as-root"],
                                            ["trtllm-llmapi-launch"]]
            note = "starts the ranks on every node of this server over MPI (ssh between the nodes)"
        else:
            srun: list[c.Word] = ["srun", "-N", len(g.nodes), "--ntasks-per-node", g.nodes[0].gpus, "--mpi=pmix"]
            if dep.slurm_nodes is not None:  # Slurm's names, never the drawing's or an address
                srun += ["-w", ",".join(dep.slurm_nodes[n.node] for n in g.nodes)]
                note = "inside a Slurm allocation holding these nodes"
            else:
                note = ("inside a Slurm allocation of exactly these nodes (give their Slurm names to "
                        "export to pin them with srun -w)")
            launcher = [srun, ["trtllm-llmapi-launch"]]
        first, *rest = _serve(model, extra)
        text = c.shell_command(launcher[:-1] + [launcher[-1] + first] + rest)
        steps.append(c.Step(node=head, text=text, note=note))
    return tuple(steps)


def _heredoc(yaml_text: str) -> str:
    return f"cat > {YAML_NAME} <<'TRTLLM_YAML_END'\n{yaml_text}TRTLLM_YAML_END\n"


def build(
    project: Project, plan: PlanResult, fmt: str, model: str, dep: c.Deployment, notes: list[str]
) -> c.ExportBundle:
    """The TensorRT-LLM files of one plan in format ``fmt`` (``k8s`` is refused by the caller)."""
    lay, mode, cfg, map_notes = _mapping(project, plan)
    notes = notes + map_notes + _config(project, plan, cfg)
    groups = c.replica_groups(dep, lay) if mode == "replicas" else c.one_group(dep)
    multi = any(len(g.nodes) > 1 for g in groups)
    if multi:
        notes += c.address_notes(dep)
    kv_cfg = cfg["kv_cache_config"]
    assert isinstance(kv_cfg, dict)
    reserve = c.Reserve("kv_cache_config.free_gpu_memory_fraction", float(kv_cfg["free_gpu_memory_fraction"]),
                        "free", "the KV cache")
    head = c.header(project, plan, "trtllm", model, notes, reserve)
    yaml_text = c.dump_yaml(cfg)
    recipes = [c.Recipe(key="mpirun", title="MPI launch" if multi else "One command",
                        steps=_steps(dep, groups, model, "mpirun"))]
    if multi:
        recipes.append(c.Recipe(key="slurm", title="Slurm launch", steps=_steps(dep, groups, model, "slurm")))
    files: dict[str, str] = {}
    # every node of a multi-node server reads --config from its own disk (startup rule
    # trtllm.multinode.config_every_node): the config is written on each of them
    config_nodes = sorted({c.group_node_index(dep, g, i) for g in groups for i in range(len(g.nodes))})
    from studio.io.export.prefix_cache import disk_dir

    if (disk := disk_dir(cfg, "trtllm")) is not None:  # must exist at start (startup rule trtllm.kv.disk_tier)
        mkdir = tuple(c.Step(node=i, text=c.shell_command([["mkdir", "-p", disk]]), blocking=False,
                             note="the NVMe KV tier's directory (kv_cache_config.disk_cache_path)")
                      for i in config_nodes)
        recipes = [c.Recipe(key=r.key, title=r.title, steps=(*mkdir, *r.steps)) for r in recipes]
    if fmt == "yaml" and not multi:
        files[YAML_NAME] = c.comment(head) + yaml_text
        files["trtllm-commands.sh"] = c.render_commands(head, dep, recipes)
    else:
        if multi:
            setup = tuple(c.Step(node=i, text=_heredoc(yaml_text), blocking=False,
                                 note=f"writes {YAML_NAME} on this node (every node of the server reads it)")
                          for i in config_nodes)
        else:
            setup = (c.Step(node=None, text=_heredoc(yaml_text), blocking=False,
                            note=f"writes {YAML_NAME} (run it in the folder you launch from)"),)
        recipes = [c.Recipe(key=r.key, title=r.title, steps=(*setup, *r.steps)) for r in recipes]
        if fmt == "yaml":
            files[YAML_NAME] = c.comment(head) + yaml_text
            files["trtllm-commands.sh"] = c.render_commands(head, dep, recipes)
        elif fmt == "script":
            files["trtllm-launch.sh"] = c.render_script(head, dep, recipes)
        else:
            files["trtllm-commands.sh"] = c.render_commands(head, dep, recipes)
    # with CP, ``lay`` only groups the GPUs into servers; the plan runs as planned
    nearest: Layout | None = lay if lay != plan.layout and plan.layout.cp <= 1 else None
    rules = rules_for("trtllm")
    plan_values = {rules.batch.key: cfg[rules.batch.key], rules.chunk.tokens_key: cfg[rules.chunk.tokens_key],
                   "kv_cache_config.free_gpu_memory_fraction": kv_cfg["free_gpu_memory_fraction"]}
    if isinstance(graph_cfg := cfg.get("cuda_graph_config"), dict) and "max_batch_size" in graph_cfg:
        plan_values[GRAPH_KEY] = graph_cfg["max_batch_size"]
    srun = (tuple(dep.slurm_nodes[n.node] for g in groups for n in g.nodes)
            if multi and dep.slurm_nodes is not None else None)
    recipe = c.engine_recipe(
        "trtllm", project, plan, model, cfg, {}, LISTEN, lay.pp, gpus_per_node=max(n.gpus for n in dep.nodes),
        nodes=max(len(g.nodes) for g in groups), config_nodes=tuple(config_nodes) if multi else (),
        srun_nodelist=srun, plan_values=plan_values,
    )
    return c.ExportBundle(files=files, notes=tuple(notes), nearest_layout=nearest, recipe=recipe)
