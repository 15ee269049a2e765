"""SGLang 0.5.23 export: ``python -m sglang.launch_server`` flags, the ``--config`` YAML (dashed
keys) and the per-node multi-node commands (``--dist-init-addr/--nnodes/--node-rank``).

Mapping rules: ``tp-size``/``pp-size``/``dp-size``/``ep-size`` as planned; an MoE plan whose EP
reaches across replicas (EP > TP) runs in SGLang's attention-data-parallel form (``tp-size`` =
TP × DP, ``attn-dp-size`` = DP), where ``max-running-requests`` is divided among the attention-DP
ranks; an uneven layer split goes to ``SGLANG_PP_LAYER_PARTITION``; the server listens on every
interface (``--host 0.0.0.0``; SGLang's default is 127.0.0.1). The run-time rules come from
:mod:`.rules`.
"""

from __future__ import annotations

from collections.abc import Sequence

from studio.core.layout import Layout
from studio.core.project import Project
from studio.engine.plan.results import PlanResult
from studio.io.export import common as c
from studio.io.export.checks.rules import rules_for
from studio.io.export.cp.context_parallel import cp_export
from studio.io.export.k8s import LwsSpec, lws_manifest

DIST_PORT = 20000  # rendezvous port on the head node (any free port works)
SERVE_PORT = 30000  # SGLang's --port default
GRAPH_KEY = "cuda-graph-max-bs-decode"  # ServerArgs.cuda_graph_max_bs_decode (SGLang 0.5.23 field list)
LISTEN = "0.0.0.0"  # every interface, so a load balancer or router can reach the server
_QUANT = {"fp8": "fp8"}


def _mapping(project: Project, plan: PlanResult, dep: c.Deployment):
    lay, notes = c.served_layout(project, plan)
    cfg: dict[str, object] = {}
    moe = project.model.is_moe
    attn_dp = moe and lay.ep > lay.tp
    if attn_dp:
        cfg["tp-size"] = lay.tp * lay.dp
        cfg["pp-size"] = lay.pp
        cfg["attn-dp-size"] = lay.dp
        cfg["ep-size"] = lay.ep
        moe_tp = lay.tp * lay.dp // lay.ep
        notes.append(
            f"EP={lay.ep} reaches across the {lay.dp} replicas: SGLang runs this as one server with "
            f"attention data parallel (tp-size {lay.tp * lay.dp}, attn-dp-size {lay.dp}, ep-size "
            f"{lay.ep})"
            + (f"; each expert is tensor-parallel over {moe_tp} GPUs where the plan replicates it."
               if moe_tp > 1 else ".")
        )
        mode = "one"
    else:
        cfg["tp-size"] = lay.tp
        cfg["pp-size"] = lay.pp
        mode = "one"
        if lay.dp > 1 and dep.multi_node:
            mode = "replicas"
            notes.append(
                f"The {lay.dp} replicas run as separate servers (one per replica; put a load "
                "balancer such as sglang-router in front)."
            )
        cfg["dp-size"] = lay.dp if mode == "one" else 1
        if moe and lay.ep > 1:
            cfg["ep-size"] = lay.ep
    cpx = cp_export("sglang", project, plan)
    if cpx is not None:
        cfg.update(cpx.config)
        notes += list(cpx.notes)
    return lay, mode, cfg, notes


def _config(project: Project, plan: PlanResult, cfg: dict[str, object]) -> list[str]:
    notes: list[str] = []
    rules = rules_for("sglang")
    static, _ = c.kv_memory_fractions(plan)
    if static <= 0:
        static = project.serving.gpu_memory_utilization
    cfg["mem-fraction-static"] = static
    cfg["context-length"] = c.max_model_len(project, plan)
    kv, kv_notes = c.kv_cache_value(project, rules.kv.emit, "SGLang")
    cfg[rules.kv.key] = kv
    notes += kv_notes
    quant, qnotes = c.quantized_to(project)
    notes += qnotes
    if quant is not None:
        if quant.value in _QUANT:
            cfg["quantization"] = _QUANT[quant.value]
        else:
            notes.append(
                f"SGLang does not quantise to {quant.value} at load time here; point the model path "
                f"at a {quant.value} checkpoint and SGLang reads its quantization config."
            )
    cfg[rules.chunk.tokens_key] = c.batched_tokens(project, plan)
    if (graphs := c.graph_capture_max("sglang", project, plan.layout.tp, plan.layout.pp)) is not None:
        cfg[GRAPH_KEY] = graphs  # the capture sizes the plan's decode steps were padded to
    if (note := c.budget_note(project, plan)) is not None:
        notes.append(note)
    per_rank = c.sequences_per_rank(plan)
    divisor = int(cfg.get(rules.batch.divided_by, 1)) if rules.batch.divided_by else 1  # type: ignore[call-overload]  # an int set by _mapping
    cfg[rules.batch.key] = per_rank * divisor
    if divisor > 1:
        notes.append(
            f"SGLang divides {rules.batch.key} among the {divisor} attention data-parallel ranks; "
            f"{per_rank * divisor} gives each rank the plan's {per_rank} sequences."
        )
    from studio.io.export.speculative import spec

    notes += spec.apply("sglang", project, cfg)
    from studio.io.export.features import apply_features
    from studio.io.export.prefix_cache import apply_prefix_cache

    notes += apply_prefix_cache("sglang", "SGLang", rules.release, project, cfg)
    notes += apply_features("sglang", "SGLang", rules.release, project, cfg,
                            experts_parallel=int(cfg.get("ep-size", 1)) > 1,  # type: ignore[call-overload]  # ints set by _mapping
                            attention_dp=int(cfg.get("attn-dp-size", 1)) > 1)  # type: ignore[call-overload]
    return notes


def _launch(model: str, base: Sequence[tuple[str, object]], extra: Sequence[tuple[str, object]], env: list) -> str:
    groups: list[list[c.Word]] = [["python", "-m", "sglang.launch_server"], ["--model-path", model]]
    return c.shell_command(groups + c.flag_groups([*base, *extra]), env)


def build(
    project: Project, plan: PlanResult, fmt: str, model: str, dep: c.Deployment, notes: list[str]
) -> c.ExportBundle:
    """The SGLang files of one plan in format ``fmt``."""
    lay, mode, cfg, map_notes = _mapping(project, plan, dep)
    notes = notes + map_notes + _config(project, plan, cfg)
    groups = c.replica_groups(dep, lay) if mode == "replicas" else c.one_group(dep)
    rules = rules_for("sglang")
    env: list[tuple[str, c.Word]] = list(c.partition_env(project, plan, rules.partition_env))
    if any(len(g.nodes) > 1 for g in groups) and fmt != "k8s":
        notes += c.address_notes(dep)
    reserve = c.Reserve("mem-fraction-static", float(cfg["mem-fraction-static"]), "capacity",
                        "weights and the KV-cache pool")
    yaml_name = "sglang-serve.yaml"
    flags: list[tuple[str, object]] = [(f"--{k}", v) for k, v in cfg.items()]
    base: list[tuple[str, object]] = [("--config", yaml_name)] if fmt == "yaml" else flags
    listen: list[tuple[str, object]] = [(rules.listen.flag, LISTEN)]
    files: dict[str, str] = {}
    head = c.header(project, plan, "sglang", model, notes, reserve)
    if fmt == "k8s":
        size = len(groups[0].nodes)
        extra: list[tuple[str, object]] = list(listen)
        if size > 1:
            extra += [
                ("--dist-init-addr", c.Raw(f'"$LWS_LEADER_ADDRESS:{DIST_PORT}"')),
                ("--nnodes", c.Raw('"$LWS_GROUP_SIZE"')),
                ("--node-rank", c.Raw('"$LWS_WORKER_INDEX"')),
            ]
        command = _launch(model, flags, extra, env)
        vendor = rules.vendor(dep.vendor)
        assert vendor is not None  # export_plan refuses a vendor without a Kubernetes recipe
        spec = LwsSpec(engine="sglang", image=vendor.image, resource=vendor.resource, groups=groups,
                       leader_command=command, worker_command=command if size > 1 else None,
                       port=SERVE_PORT)
        text, k_notes = lws_manifest(project, spec)
        notes += k_notes
        files["sglang-lws.yaml"] = c.comment(c.header(project, plan, "sglang", model, notes, reserve)) + text
    else:
        steps = []
        for g in groups:
            port: list[tuple[str, object]] = [("--port", SERVE_PORT + g.port_offset)] if g.port_offset else []
            for pos in range(len(g.nodes)):
                extra = listen + port
                if len(g.nodes) > 1:
                    extra += [
                        ("--dist-init-addr", c.host_word(dep, g.head.node, DIST_PORT)),
                        ("--nnodes", len(g.nodes)),
                        ("--node-rank", pos),
                    ]
                steps.append(
                    c.Step(node=c.group_node_index(dep, g, pos),
                           text=_launch(model, base, extra, env + c.devices_env(g, pos)))
                )
        title = "One command per node (the same server on every node)" if dep.multi_node else "One command"
        recipes = [c.Recipe(key="native", title=title, steps=tuple(steps))]
        if fmt == "yaml":
            files[yaml_name] = c.comment(head) + c.dump_yaml(cfg)
            files["sglang-commands.sh"] = c.render_commands(head, dep, recipes)
        elif fmt == "script":
            files["sglang-launch.sh"] = c.render_script(head, dep, recipes)
        else:
            files["sglang-commands.sh"] = c.render_commands(head, dep, recipes)
    nearest: Layout | None = lay if lay != plan.layout else None
    plan_values = {k: cfg[k] for k in (rules.batch.key, rules.chunk.tokens_key, "mem-fraction-static", GRAPH_KEY)
                   if k in cfg}
    recipe = c.engine_recipe(
        "sglang", project, plan, model, cfg, {k: str(v) for k, v in env}, LISTEN, lay.pp,
        gpus_per_node=max(n.gpus for n in dep.nodes), nodes=max(len(g.nodes) for g in groups), plan_values=plan_values,
    )
    return c.ExportBundle(files=files, notes=tuple(notes), nearest_layout=nearest, recipe=recipe)
