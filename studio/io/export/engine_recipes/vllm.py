"""vLLM 0.33 export: ``vllm serve`` flags, the ``--config`` YAML (dashed keys) and the multi-node
recipes (multiprocessing with ``--nnodes/--node-rank``, and Ray).

Mapping rules (from ``docs/export.md``, the vLLM field list in ``tests/data/engines`` and the
run-time rules in :mod:`.rules`):

* vLLM has no expert-parallel size: ``enable-expert-parallel`` makes the MoE layers
  expert-parallel over TP × DP. A plan whose EP is neither 1 nor TP × DP runs as EP = TP × DP.
* ``data-parallel-size`` on an MoE model without expert parallelism makes the MoE layers
  tensor-parallel over TP × DP; the plan's EP = 1 replicas therefore run as separate servers.
* An uneven layer split goes to ``VLLM_PP_LAYER_PARTITION``.
* A 16-bit KV cache is written as ``auto`` (the model's dtype): vLLM refuses a 16-bit
  ``kv-cache-dtype`` other than the model dtype.
* A data-parallel rank that spans nodes cannot start; such replicas run as separate servers,
  each with EP = TP.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import replace as dc_replace

from studio.core.layout import Layout
from studio.core.project import Project
from studio.engine.plan.results import PlanResult
from studio.io.export import common as c
from studio.io.export.checks.rules import rules_for
from studio.io.export.cp.context_parallel import CpExport, cp_export
from studio.io.export.k8s import LwsSpec, lws_manifest

MASTER_PORT = 29501  # vLLM's --master-port default
DP_RPC_PORT = 29550  # vLLM's data_parallel_rpc_port default
RAY_PORT = 6379  # Ray's default GCS port
GRAPH_KEY = "max-cudagraph-capture-size"  # EngineArgs.max_cudagraph_capture_size (vLLM 0.33 field list)
SERVE_PORT = 8000  # vLLM's --port default

_QUANT = {"fp8": "fp8"}  # formats vLLM quantises online from a wider checkpoint


@dataclass(frozen=True)
class _Mapping:
    layout: Layout
    mode: str  # "one": one server; "dp": one server with data-parallel-size; "replicas"
    expert_parallel: bool | None  # None for dense models (flag not written)
    notes: tuple[str, ...]
    cp: CpExport | None = None  # context parallelism (flags and, for prefill CP, the server split)


def _mapping(project: Project, plan: PlanResult, dep: c.Deployment) -> _Mapping:
    """How vLLM runs the plan's layout; at most one note says what changes, and the layout it
    names is the one the files run."""
    cpx = cp_export("vllm", project, plan)
    if cpx is not None and cpx.server_layout is not None:  # prefill CP: one server per CP group
        lay, notes = c.served_layout(project, plan)
        expert = (lay.ep > 1) if project.model.is_moe else None
        return _Mapping(layout=lay, mode="one" if lay.replicas == 1 else "replicas", expert_parallel=expert,
                        notes=tuple(notes) + cpx.notes, cp=cpx)
    m = _plain_mapping(project, plan, dep)
    return m if cpx is None else dc_replace(m, notes=m.notes + cpx.notes, cp=cpx)


def _plain_mapping(project: Project, plan: PlanResult, dep: c.Deployment) -> _Mapping:
    lay, notes = c.served_layout(project, plan)
    moe = project.model.is_moe
    expert: bool | None = None
    mode = "dp" if lay.dp > 1 else "one"
    spans = mode == "dp" and not dep.replicas_within_nodes(lay)
    if not moe:
        if spans:
            mode = "replicas"
            notes.append(
                f"Each replica spans nodes; the {lay.dp} replicas run as separate servers (put a load "
                "balancer in front)."
            )
        return _Mapping(layout=lay, mode=mode, expert_parallel=None, notes=tuple(notes))
    expert = lay.ep > 1
    if lay.ep == 1 and lay.dp > 1:
        mode = "replicas"
        notes.append(
            "vLLM's data-parallel-size would make the MoE layers tensor-parallel over TP x DP; "
            f"the plan's {lay.dp} replicas with EP=1 run as {lay.dp} separate servers instead "
            "(put a load balancer in front)."
        )
    elif spans:
        mode = "replicas"
        if lay.ep > 1 and lay.ep != lay.tp:
            notes.append(
                "A data-parallel rank of this layout spans nodes, which vLLM's multi-node data "
                "parallelism does not start, and a single vLLM server's expert-parallel size is its "
                f"TP; nearest runnable layout: {lay.dp} separate servers with EP=TP={lay.tp} each."
            )
            lay = lay.replace(ep=lay.tp)
        else:
            notes.append(
                f"Each replica spans nodes, which vLLM's multi-node data parallelism does not start; "
                f"the {lay.dp} replicas run as separate servers"
                + (f" with EP=TP={lay.tp} each, as planned" if lay.ep > 1 else "")
                + " (put a load balancer in front)."
            )
    elif lay.ep > 1:
        full = lay.tp * lay.dp
        if lay.ep != full:
            notes.append(
                f"vLLM's expert-parallel size is TP x DP = {full}; it cannot run EP={lay.ep}. "
                f"Nearest runnable layout: EP={full} (experts spread over all {full} GPUs of a stage)."
            )
            lay = lay.replace(ep=full)
    return _Mapping(layout=lay, mode=mode, expert_parallel=expert, notes=tuple(notes))


def _config(project: Project, plan: PlanResult, m: _Mapping) -> tuple[dict[str, object], list[str]]:
    """Engine arguments shared by every node, in YAML key order (dashed names)."""
    notes: list[str] = []
    rules = rules_for("vllm")
    lay = m.layout
    cfg: dict[str, object] = {
        "tensor-parallel-size": lay.tp,
        "pipeline-parallel-size": lay.pp,
        "data-parallel-size": lay.dp if m.mode == "dp" else 1,
    }
    if m.cp is not None:
        cfg.update(m.cp.config)
    if m.expert_parallel is not None:
        cfg["enable-expert-parallel"] = m.expert_parallel
    cfg["max-model-len"] = c.max_model_len(project, plan)
    cfg["gpu-memory-utilization"] = project.serving.gpu_memory_utilization
    kv, kv_notes = c.kv_cache_value(project, rules.kv.emit, "vLLM")
    cfg[rules.kv.key] = kv
    notes += kv_notes
    quant, qnotes = c.quantized_to(project)
    notes += qnotes
    if quant is not None:
        if quant.value in _QUANT:
            cfg["quantization"] = _QUANT[quant.value]
        else:
            notes.append(
                f"vLLM does not quantise to {quant.value} at load time; point the model path at a "
                f"{quant.value} checkpoint (AWQ/GPTQ/ModelOpt) and vLLM reads its method from it."
            )
    cfg[rules.batch.key] = c.sequences_per_rank(plan)
    cfg[rules.chunk.tokens_key] = c.batched_tokens(project, plan)
    if (graphs := c.graph_capture_max("vllm", project, plan.layout.tp, plan.layout.pp)) is not None:
        cfg[GRAPH_KEY] = graphs  # the capture sizes the plan's decode steps were padded to
    if (note := c.budget_note(project, plan)) is not None:
        notes.append(note)
    from studio.io.export.speculative import spec

    notes += spec.apply("vllm", project, cfg)
    from studio.io.export.features import apply_features
    from studio.io.export.prefix_cache import apply_prefix_cache

    notes += apply_prefix_cache("vllm", "vLLM", rules.release, project, cfg)
    notes += apply_features("vllm", "vLLM", rules.release, project, cfg,
                            experts_parallel=bool(m.expert_parallel), attention_dp=False)
    notes += _hybrid_lb_on_one_node(project, m, cfg)
    notes += _external_lb(project, m, cfg)
    return cfg, notes


def _external_lb(project: Project, m: _Mapping, cfg: dict[str, object]) -> list[str]:
    """Keep ``data-parallel-external-lb`` where vLLM runs it: an MoE server with data-parallel ranks
    (start-up rule ``vllm.dp.external_lb_moe``), launched as one process per rank with its
    ``--data-parallel-rank`` (rule ``vllm.dp.external_lb_rank``, :func:`_recipes`); elsewhere drop it
    with a note."""
    if not cfg.get("data-parallel-external-lb"):
        return []
    from studio.io.export.checks.startup_rules import startup_rules

    if m.mode == "dp" and project.model.is_moe:
        lay = m.layout
        rule = startup_rules()["vllm.dp.external_lb_rank"]
        return [f"serving.features.load_balance 'external': each of the {lay.dp} data-parallel ranks starts as its own "
                f"vLLM process with --data-parallel-rank, its own GPUs and its own API port ({rule.cite()}); the ranks "
                "share one expert-parallel engine, and your load balancer spreads requests over their ports."]
    del cfg["data-parallel-external-lb"]
    if m.mode != "dp":
        return ["serving.features.load_balance 'external' is not exported: this layout runs as separate vLLM "
                "servers (no data-parallel ranks in one server); put your load balancer in front of them."]
    rule = startup_rules()["vllm.dp.external_lb_moe"]
    return [f"serving.features.load_balance 'external' is not exported: {rule.says} ({rule.cite()}); this dense "
            "model's data-parallel ranks stay in one server (internal load balancing)."]


def _hybrid_lb_on_one_node(project: Project, m: _Mapping, cfg: dict[str, object]) -> list[str]:
    """Drop ``data-parallel-hybrid-lb`` from a server whose data-parallel ranks all sit on one node
    (start-up rule ``vllm.dp.hybrid_lb_local``): vLLM refuses it without
    ``--data-parallel-size-local``, which only the per-node lines of a multi-node recipe carry, and
    turns it off when that equals the data-parallel size."""
    if not cfg.get("data-parallel-hybrid-lb"):
        return []
    lay = m.layout
    per_node = max((len(n.gpus) for n in project.cluster.nodes), default=0)
    dp = int(cfg.get("data-parallel-size", 1))  # type: ignore[call-overload]  # an int set above
    from studio.io.export.checks.startup_rules import startup_rules

    if dp > 1 and dp * lay.tp * lay.pp > per_node:
        rule = startup_rules()["vllm.dp.hybrid_lb_headless"]
        return [f"serving.features.load_balance 'hybrid': every node of this server starts its own API server for "
                f"its local data-parallel ranks (--data-parallel-size-local, --data-parallel-start-rank; no node is "
                f"headless: {rule.cite()}); your load balancer spreads requests over the nodes' ports. Only the "
                "multiprocessing recipe is written (a Ray serve command has one API server)."]
    del cfg["data-parallel-hybrid-lb"]

    rule = startup_rules()["vllm.dp.hybrid_lb_local"]
    return [f"serving.features.load_balance 'hybrid' is not exported: this server runs its {dp} data-parallel "
            f"rank(s) on one node, where vLLM has no hybrid load balancing ({rule.says}; {rule.cite()})."]


def _as_flags(cfg: dict[str, object]) -> list[tuple[str, object]]:
    out: list[tuple[str, object]] = []
    for key, value in cfg.items():
        if value is False:
            out.append((f"--no-{key}", True))
        else:
            out.append((f"--{key}", value))
    return out


def _serve(
    model: str, base: Sequence[tuple[str, object]], extra: Sequence[tuple[str, object]], env: list
) -> str:
    groups: list[list[c.Word]] = [["vllm", "serve", model]]
    groups += c.flag_groups([*base, *extra])
    return c.shell_command(groups, env)


def _recipes(
    dep: c.Deployment,
    groups: tuple[c.Group, ...],
    m: _Mapping,
    model: str,
    base: Sequence[tuple[str, object]],
    env: list[tuple[str, c.Word]],
    api: Sequence[tuple[str, object]] = (),
    *,
    hybrid: bool = False,
    external: bool = False,
) -> list[c.Recipe]:
    """The launch recipes; ``api`` (``--api-server-count``) goes on the head node of a multi-node
    server only: a headless node starts no API server (startup rule vllm.api_server_count.headless).
    With ``hybrid`` load balancing no node is headless (each serves its local ranks); with
    ``external`` each data-parallel rank (one group each) is its own process."""
    api = list(api)
    lay = m.layout
    per_replica = lay.tp * lay.pp
    if external:
        return [_external_recipe(dep, groups, model, base, env, api)]
    mp_steps: list[c.Step] = []
    ray_steps: list[c.Step] = []
    for g in groups:
        head = c.host_word(dep, g.head.node)
        port: list[tuple[str, object]] = [("--port", SERVE_PORT + g.port_offset)] if g.port_offset else []
        start = 0
        for pos, node in enumerate(g.nodes):
            idx = c.group_node_index(dep, g, pos)
            node_env = env + c.devices_env(g, pos)
            if len(g.nodes) == 1:
                extra: list[tuple[str, object]] = list(port)
            elif m.mode == "dp":
                local = node.gpus // per_replica
                extra = [("--data-parallel-size-local", local)]
                if pos:
                    # hybrid load balancing: every node serves its own ranks (rule vllm.dp.hybrid_lb_headless)
                    extra += [("--data-parallel-start-rank", start)] + (api if hybrid else [("--headless", True)])
                else:
                    extra += api
                extra += [("--data-parallel-address", head), ("--data-parallel-rpc-port", DP_RPC_PORT)]
                start += local
            else:
                extra = [
                    ("--nnodes", len(g.nodes)),
                    ("--node-rank", pos),
                    ("--master-addr", head),
                    ("--master-port", MASTER_PORT),
                    *([("--headless", True)] if pos else port + api),
                ]
            mp_steps.append(c.Step(node=idx, text=_serve(model, base, extra, node_env)))
        if len(g.nodes) > 1:
            for pos in range(len(g.nodes)):
                idx = c.group_node_index(dep, g, pos)
                if pos == 0:
                    words: list[c.Word] = ["ray", "start", "--head", "--port", RAY_PORT]
                else:
                    words = ["ray", "start", "--address", c.host_word(dep, g.head.node, RAY_PORT)]
                ray_steps.append(c.Step(node=idx, text=c.shell_command([words]), blocking=False))
            backend: list[tuple[str, object]] = (
                [("--data-parallel-backend", "ray")]
                if m.mode == "dp"
                else [("--distributed-executor-backend", "ray")]
            )
            ray_steps.append(
                c.Step(
                    node=c.group_node_index(dep, g, 0),
                    text=_serve(model, base, backend + port + api, env),
                    note="after every node of this group has joined the Ray cluster",
                )
            )
        else:
            ray_steps.append(mp_steps[-1])
    multi = any(len(g.nodes) > 1 for g in groups)
    recipes = [
        c.Recipe(
            key="mp",
            title="Multiprocessing backend: one command per node" if multi else "One command",
            steps=tuple(mp_steps),
        )
    ]
    if multi and not hybrid:  # one Ray serve command has one API server: no hybrid load balancing
        recipes.append(
            c.Recipe(key="ray", title="Ray backend: join the Ray cluster, then one serve command",
                     steps=tuple(ray_steps))
        )
    return recipes


def _external_recipe(dep: c.Deployment, groups: tuple[c.Group, ...], model: str,
                     base: Sequence[tuple[str, object]], env: list[tuple[str, c.Word]],
                     api: Sequence[tuple[str, object]]) -> c.Recipe:
    """External load balancing: one ``vllm serve`` per data-parallel rank (``groups``: one per rank,
    with its CUDA devices and port), each with its ``--data-parallel-rank`` and rank 0's address and
    RPC port, where the ranks meet."""
    head = c.host_word(dep, groups[0].head.node)
    steps = []
    for g in groups:
        extra: list[tuple[str, object]] = [("--data-parallel-rank", g.index), ("--data-parallel-address", head),
                                           ("--data-parallel-rpc-port", DP_RPC_PORT),
                                           ("--port", SERVE_PORT + g.port_offset), *api]
        steps.append(c.Step(node=c.group_node_index(dep, g, 0),
                            text=_serve(model, base, extra, env + c.devices_env(g, 0))))
    return c.Recipe(key="mp", title="One process per data-parallel rank (external load balancing)",
                    steps=tuple(steps))


def _k8s(
    project: Project, m: _Mapping, groups: tuple[c.Group, ...], model: str,
    base: list[tuple[str, object]], env: list[tuple[str, c.Word]], dep_vendor: str,
    api: Sequence[tuple[str, object]] = (),
) -> tuple[str, list[str]]:
    lay = m.layout
    g = groups[0]
    size = len(g.nodes)
    leader_extra: list[tuple[str, object]] = []
    worker_extra: list[tuple[str, object]] = []
    addr = c.Raw('"$LWS_LEADER_ADDRESS"')
    if size > 1 and m.mode == "dp":
        local = g.nodes[0].gpus // (lay.tp * lay.pp)
        common_dp = [("--data-parallel-size-local", local), ("--data-parallel-address", addr),
                     ("--data-parallel-rpc-port", DP_RPC_PORT)]
        leader_extra = common_dp
        worker_extra = common_dp + [
            ("--data-parallel-start-rank", c.Raw(f'"$((LWS_WORKER_INDEX * {local}))"')),
            ("--headless", True),
        ]
    elif size > 1:
        common_mp = [("--nnodes", c.Raw('"$LWS_GROUP_SIZE"')), ("--master-addr", addr),
                     ("--master-port", MASTER_PORT)]
        leader_extra = common_mp + [("--node-rank", 0)]
        worker_extra = common_mp + [("--node-rank", c.Raw('"$LWS_WORKER_INDEX"')), ("--headless", True)]
    vendor = rules_for("vllm").vendor(dep_vendor)
    assert vendor is not None  # export_plan refuses a vendor without a Kubernetes recipe
    spec = LwsSpec(
        engine="vllm",
        image=vendor.image,
        resource=vendor.resource,
        groups=groups,
        leader_command=_serve(model, base, [*leader_extra, *api], env),
        worker_command=_serve(model, base, worker_extra, env) if size > 1 else None,
        port=SERVE_PORT,
    )
    return lws_manifest(project, spec)


def build(
    project: Project, plan: PlanResult, fmt: str, model: str, dep: c.Deployment, notes: list[str]
) -> c.ExportBundle:
    """The vLLM files of one plan in format ``fmt``."""
    m = _mapping(project, plan, dep)
    cfg, cfg_notes = _config(project, plan, m)
    notes = notes + list(m.notes) + cfg_notes
    if fmt == "k8s" and (cfg.pop("data-parallel-external-lb", None) or cfg.pop("data-parallel-hybrid-lb", None)):
        notes.append(f"serving.features.load_balance '{project.serving.features.load_balance}' is not exported to "
                     "Kubernetes: the LeaderWorkerSet runs one API server, on the leader, with the workers headless "
                     "(vLLM refuses hybrid load balancing on a headless node, rule vllm.dp.hybrid_lb_headless, and "
                     "external needs one process per rank); use the command or script format for it.")
    external = bool(cfg.get("data-parallel-external-lb"))
    hybrid = bool(cfg.get("data-parallel-hybrid-lb"))
    servers = m.cp.server_layout if m.cp is not None and m.cp.server_layout is not None else m.layout
    groups = (c.replica_groups(dep, servers) if m.mode == "replicas" or external else c.one_group(dep))
    rules = rules_for("vllm")
    env: list[tuple[str, c.Word]] = list(c.partition_env(project, plan, rules.partition_env))
    api: list[tuple[str, object]] = []
    if any(len(g.nodes) > 1 for g in groups) and "api-server-count" in cfg:
        api = [("--api-server-count", cfg.pop("api-server-count"))]
    if any(len(g.nodes) > 1 for g in groups) and fmt != "k8s":
        notes += c.address_notes(dep)
    util = cfg["gpu-memory-utilization"]
    assert isinstance(util, (int, float))  # _config writes the serving config's fraction
    reserve = c.Reserve("gpu-memory-utilization", float(util), "capacity",
                        "weights, activations and KV cache")
    yaml_name = "vllm-serve.yaml"
    base: list[tuple[str, object]] = [("--config", yaml_name)] if fmt == "yaml" else _as_flags(cfg)
    files: dict[str, str] = {}
    if fmt == "k8s":
        text, k_notes = _k8s(project, m, groups, model, _as_flags(cfg), env, dep.vendor, api)
        notes += k_notes
        files["vllm-lws.yaml"] = c.comment(c.header(project, plan, "vllm", model, notes, reserve)) + text
    else:
        recipes = _recipes(dep, groups, m, model, base, env, api, hybrid=hybrid, external=external)
        head = c.header(project, plan, "vllm", model, notes, reserve)
        if fmt == "yaml":
            files[yaml_name] = c.comment(head) + c.dump_yaml(cfg)
            files["vllm-commands.sh"] = c.render_commands(head, dep, recipes)
        elif fmt == "script":
            files["vllm-launch.sh"] = c.render_script(head, dep, recipes)
        else:
            files["vllm-commands.sh"] = c.render_commands(head, dep, recipes)
    nearest = m.layout if m.layout != plan.layout else None
    span = max(len(g.nodes) for g in groups)
    plan_values = {k: cfg[k] for k in (rules.batch.key, rules.chunk.tokens_key, "gpu-memory-utilization", GRAPH_KEY)
                   if k in cfg}
    checked = dict(cfg)  # the config the check reads: the first launch line's, its per-process flags included
    headless = span - 1
    if external:
        checked["data-parallel-rank"] = 0
        span, headless = 1, 0
    elif hybrid and span > 1:
        checked["data-parallel-size-local"] = groups[0].nodes[0].gpus // (m.layout.tp * m.layout.pp)
        headless = 0
    recipe = c.engine_recipe(
        "vllm", project, plan, model, checked, {k: str(v) for k, v in env}, None, m.layout.pp,
        gpus_per_node=max(n.gpus for n in dep.nodes), nodes=span, headless_nodes=headless, plan_values=plan_values,
    )
    return c.ExportBundle(files=files, notes=tuple(notes), nearest_layout=nearest, recipe=recipe)
