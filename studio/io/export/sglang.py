"""SGLang 0.5.23 export: ``python -m sglang.launch_server`` flags, the ``--config`` YAML (dashed
keys) and the per-node multi-node commands (``--dist-init-addr/--nnodes/--node-rank``).

Mapping rules: ``tp-size``/``pp-size``/``dp-size``/``ep-size`` as planned; an MoE plan whose EP
reaches across replicas (EP > TP) runs in SGLang's attention-data-parallel form (``tp-size`` =
TP × DP, ``attn-dp-size`` = DP); SGLang splits layers evenly, so an uneven split is dropped.
"""

from __future__ import annotations

from studio.core.layout import Layout
from studio.core.project import Project
from studio.engine.results import PlanResult
from studio.io.export import common as c
from studio.io.export.k8s import LwsSpec, lws_manifest

DIST_PORT = 20000  # rendezvous port on the head node (any free port works)
SERVE_PORT = 30000  # SGLang's --port default
IMAGE = "lmsysorg/sglang:v0.5.23"
_KV = {"bf16": "bf16", "fp8": "fp8_e4m3"}
_QUANT = {"fp8": "fp8"}


def _mapping(project: Project, plan: PlanResult, dep: c.Deployment):
    lay, notes = c.served_layout(project, plan)
    cfg: dict[str, object] = {}
    moe = project.model.is_moe
    if c.uneven_split(project, plan):
        notes.append(
            "SGLang splits layers evenly over the pipeline stages; the planned uneven split "
            f"{','.join(str(n) for n in lay.stage_layers(project.model.num_layers))} is not used. "
            "Nearest runnable layout: the even split."
        )
        lay = lay.replace(layers_per_stage=None)
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
    return lay, mode, cfg, notes


def _config(project: Project, plan: PlanResult, cfg: dict[str, object]) -> list[str]:
    notes: list[str] = []
    static, _ = c.kv_memory_fractions(plan)
    if static <= 0:
        static = project.serving.gpu_memory_utilization
    cfg["mem-fraction-static"] = static
    cfg["context-length"] = c.max_model_len(project, plan)
    kv = c.kv_dtype(project).value
    if kv in _KV:
        cfg["kv-cache-dtype"] = _KV[kv]
    else:
        cfg["kv-cache-dtype"] = "auto"
        notes.append("SGLang has no fp16 KV-cache option; 'auto' stores the KV cache in the model's dtype.")
    quant, qnotes = c.quantized_to(project)
    notes += qnotes
    if quant is not None:
        if quant.value in _QUANT:
            cfg["quantization"] = _QUANT[quant.value]
        else:
            notes.append(
                f"SGLang does not quantise to {quant.value} at load time here; point --model-path "
                f"at a {quant.value} checkpoint and SGLang reads its quantization config."
            )
    cfg["max-running-requests"] = plan.batch
    return notes


def _launch(model: str, base: list[tuple[str, object]], extra: list[tuple[str, object]], env: list) -> str:
    groups: list[list[c.Word]] = [["python", "-m", "sglang.launch_server"], ["--model-path", model]]
    return c.shell_command(groups + c.flag_groups(base + extra), env)


def build(
    project: Project, plan: PlanResult, fmt: str, model: str, dep: c.Deployment, notes: list[str]
) -> c.ExportBundle:
    """The SGLang files of one plan in format ``fmt``."""
    lay, mode, cfg, map_notes = _mapping(project, plan, dep)
    notes = notes + map_notes + _config(project, plan, cfg)
    groups = c.replica_groups(dep, lay) if mode == "replicas" else c.one_group(dep)
    if dep.multi_node and not dep.hosts_given and fmt != "k8s":
        notes.append(
            "Addresses are the node names of the drawing; pass hosts (--hosts) with the real host "
            "names or IPs of the nodes."
        )
    yaml_name = "sglang-serve.yaml"
    flags = [(f"--{k}", v) for k, v in cfg.items()]
    base = [("--config", yaml_name)] if fmt == "yaml" else flags
    files: dict[str, str] = {}
    head = c.header(project, plan, "sglang", model, notes)
    if fmt == "k8s":
        size = len(groups[0].nodes)
        extra: list[tuple[str, object]] = [("--host", "0.0.0.0")]
        if size > 1:
            extra += [
                ("--dist-init-addr", c.Raw(f'"$LWS_LEADER_ADDRESS:{DIST_PORT}"')),
                ("--nnodes", c.Raw('"$LWS_GROUP_SIZE"')),
                ("--node-rank", c.Raw('"$LWS_WORKER_INDEX"')),
            ]
        command = _launch(model, flags, extra, [])
        spec = LwsSpec(engine="sglang", image=IMAGE, groups=groups, leader_command=command,
                       worker_command=command if size > 1 else None, port=SERVE_PORT)
        text, k_notes = lws_manifest(project, spec)
        notes += k_notes
        files["sglang-lws.yaml"] = c.comment(c.header(project, plan, "sglang", model, notes)) + text
    else:
        steps = []
        for g in groups:
            port = [("--port", SERVE_PORT + g.port_offset)] if g.port_offset else []
            for pos in range(len(g.nodes)):
                extra = list(port)
                if len(g.nodes) > 1:
                    extra += [
                        ("--dist-init-addr", f"{g.head.host}:{DIST_PORT}"),
                        ("--nnodes", len(g.nodes)),
                        ("--node-rank", pos),
                    ]
                steps.append(
                    c.Step(node=c.group_node_index(dep, g, pos),
                           text=_launch(model, base, extra, c.devices_env(g, pos)))
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
    return c.ExportBundle(files=files, notes=tuple(notes), nearest_layout=nearest)
