"""``export --check`` over the start-up rules of :mod:`.startup_rules`: one evaluator per rule id.

An evaluator reads a recipe (the engine arguments an export writes, or a config file a user
edited) and returns the rule's findings; it runs only where the rule's version range holds for
the recipe's engine version. Rules the exporters follow and rules the check evaluates are the same
records, and a test keeps every record paired with an evaluator.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Callable

from studio.io.export.bundle import EngineRecipe
from studio.io.export.checks.findings import Finding
from studio.io.export.checks.startup_rules import StartupRule, startup_rules

Evaluator = Callable[[EngineRecipe, StartupRule], list[Finding]]


def _int(value: object, default: int = 0) -> int:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return default


def _err(rule: StartupRule, key: str, message: str, severity: str = "error") -> Finding:
    return Finding(severity, key, message, rule.cite())


# ----------------------------------------------------------------------------- vLLM
def _vllm_dcp_gqa(r: EngineRecipe, rule: StartupRule) -> list[Finding]:
    dcp = _int(r.config.get("decode-context-parallel-size"), 1)
    if dcp <= 1 or r.mla or not r.kv_heads:
        return []
    tp = _int(r.config.get("tensor-parallel-size"), 1)
    key = "decode-context-parallel-size"
    if tp <= r.kv_heads:
        return [_err(rule, key, f"{dcp} on a GQA model needs tensor-parallel-size {tp} above the model's "
                     f"{r.kv_heads} KV heads (vLLM refuses it); write 1")]
    if dcp > tp // r.kv_heads:
        return [_err(rule, key, f"{dcp} exceeds TP / KV heads = {tp // r.kv_heads}")]
    if r.attention_heads and (r.attention_heads // r.kv_heads) % dcp:
        return [_err(rule, key, f"{dcp} does not divide the {r.attention_heads // r.kv_heads} query heads per KV head")]
    return []


def _vllm_dcp_with_pcp(r: EngineRecipe, rule: StartupRule) -> list[Finding]:
    tp = _int(r.config.get("tensor-parallel-size"), 1)
    pcp = _int(r.config.get("prefill-context-parallel-size"), 1)
    dcp = _int(r.config.get("decode-context-parallel-size"), 1)
    if pcp == 1:
        if dcp > 1 and tp % dcp:
            return [_err(rule, "decode-context-parallel-size", f"tensor-parallel-size {tp} is not divisible by {dcp}")]
        return []
    allowed = sorted({1, pcp, tp * pcp})
    if dcp not in allowed:
        return [_err(rule, "decode-context-parallel-size",
                     f"{dcp} with prefill-context-parallel-size {pcp}; allowed: {', '.join(map(str, allowed))}")]
    return []


def _vllm_eplb(r: EngineRecipe, rule: StartupRule) -> list[Finding]:
    if r.config.get("enable-eplb") is not True:
        return []
    out = []
    if r.config.get("enable-expert-parallel") is not True:
        out.append(_err(rule, "enable-eplb", "needs enable-expert-parallel"))
    world = (_int(r.config.get("tensor-parallel-size"), 1) * _int(r.config.get("prefill-context-parallel-size"), 1)
             * _int(r.config.get("data-parallel-size"), 1))
    if world <= 1:
        out.append(_err(rule, "enable-eplb", "needs TP x PCP x DP > 1 (one GPU has no experts to move)"))
    return out


def _vllm_api_servers(r: EngineRecipe, rule: StartupRule) -> list[Finding]:
    if _int(r.config.get("api-server-count"), 0) > 0 and r.headless_nodes:
        return [_err(rule, "api-server-count", f"{r.config['api-server-count']} is refused on the "
                     f"{r.headless_nodes} node(s) started with --headless; write it on the head node only")]
    return []


def _vllm_hybrid_lb(r: EngineRecipe, rule: StartupRule) -> list[Finding]:
    if r.config.get("data-parallel-hybrid-lb") is not True or r.nodes > 1 or r.config.get("data-parallel-size-local"):
        return []
    return [_err(rule, "data-parallel-hybrid-lb", "needs data-parallel-size-local, which a one-node server does not "
                 "take; hybrid load balancing spreads requests over the nodes of a multi-node server (drop it)")]


def _vllm_hybrid_headless(r: EngineRecipe, rule: StartupRule) -> list[Finding]:
    if r.config.get("data-parallel-hybrid-lb") is not True or r.headless_nodes <= 0:
        return []
    return [_err(rule, "data-parallel-hybrid-lb", f"{r.headless_nodes} node(s) of this server start --headless, "
                 "which vLLM refuses with hybrid load balancing: every node starts its own API server")]


def _vllm_external_moe(r: EngineRecipe, rule: StartupRule) -> list[Finding]:
    external = r.config.get("data-parallel-external-lb") is True or r.config.get("data-parallel-rank") is not None
    if not external or _int(r.config.get("data-parallel-size"), 1) <= 1 or r.experts > 0:
        return []
    return [_err(rule, "data-parallel-external-lb", "a dense model's data-parallel ranks cannot run under external "
                 "load balancing in vLLM; start independent servers without --data-parallel-* arguments")]


def _vllm_external_lb(r: EngineRecipe, rule: StartupRule) -> list[Finding]:
    if r.config.get("data-parallel-external-lb") is not True or r.config.get("data-parallel-rank") is not None:
        return []
    return [_err(rule, "data-parallel-external-lb", "needs data-parallel-rank: vLLM runs external load balancing "
                 "as one process per data-parallel rank")]


def _none(r: EngineRecipe, rule: StartupRule) -> list[Finding]:
    """A rule the engine check follows when it runs vLLM's own classes (nothing to read in a recipe)."""
    return []


# ----------------------------------------------------------------------------- TensorRT-LLM
def _trt_eagle(r: EngineRecipe, rule: StartupRule) -> list[Finding]:
    sc = r.config.get("speculative_config")
    if isinstance(sc, dict) and sc.get("decoding_type") == rule.params["legacy"]:
        return [_err(rule, "speculative_config.decoding_type",
                     f"'{rule.params['legacy']}' runs as EAGLE-3 in the PyTorch backend: an EAGLE-1 head cannot "
                     f"load; write '{rule.params['eagle3']}' for an EAGLE-3 head, or export EAGLE-1 to vLLM or SGLang")]
    return []


def _cp_type(r: EngineRecipe) -> str | None:
    cp = r.config.get("cp_config")
    if _int(r.config.get("context_parallel_size"), 1) <= 1 or not isinstance(cp, dict):
        return None
    return str(cp.get("cp_type", "")).upper()


def _trt_cp_types(r: EngineRecipe, rule: StartupRule) -> list[Finding]:
    kind = _cp_type(r)
    if kind is None or kind in rule.params["runs"]:
        return []
    return [_err(rule, "cp_config.cp_type", f"{kind} is not implemented in the PyTorch backend (it runs "
                 f"{', '.join(rule.params['runs'])}); the server fails on its first request")]


def _trt_helix_tpb(r: EngineRecipe, rule: StartupRule) -> list[Finding]:
    if _cp_type(r) != "HELIX":
        return []
    cp = r.value("cp_config.tokens_per_block")
    kv = r.value("kv_cache_config.tokens_per_block")
    if cp is None:
        return [_err(rule, "cp_config.tokens_per_block", "missing: Helix reads it for every request (KeyError)")]
    if kv is not None and kv != cp:
        return [_err(rule, "cp_config.tokens_per_block", f"{cp} differs from kv_cache_config.tokens_per_block {kv}")]
    return []


def _trt_helix_blackwell(r: EngineRecipe, rule: StartupRule) -> list[Finding]:
    if _cp_type(r) != "HELIX" or r.blackwell:
        return []
    return [_err(rule, "cp_config.cp_type", "HELIX needs Blackwell GPUs; these are not")]


def _trt_helix_disagg(r: EngineRecipe, rule: StartupRule) -> list[Finding]:
    if _cp_type(r) != "HELIX" or r.role == "decode":
        return []
    where = "an aggregated server" if r.role == "aggregated" else "a context (prefill) server"
    return [_err(rule, "cp_config.cp_type", f"HELIX in {where}: it runs in the generation servers of "
                 "disaggregated serving only")]


def _trt_moe_mapping(r: EngineRecipe, rule: StartupRule) -> list[Finding]:
    moe_tp, moe_ep = r.config.get("moe_tensor_parallel_size"), r.config.get("moe_expert_parallel_size")
    if moe_tp is None or moe_ep is None:
        return []
    world = _int(r.config.get("tensor_parallel_size"), 1) * _int(r.config.get("context_parallel_size"), 1)
    if _int(moe_tp) * _int(moe_ep) != world:
        return [_err(rule, "moe_expert_parallel_size",
                     f"moe_tensor_parallel_size {moe_tp} x moe_expert_parallel_size {moe_ep} = "
                     f"{_int(moe_tp) * _int(moe_ep)}, not the MoE world size TP x CP = {world}")]
    return []


def _trt_config_nodes(r: EngineRecipe, rule: StartupRule) -> list[Finding]:
    if r.nodes <= 1 or not r.config_nodes:
        return []
    missing = sorted(set(range(r.nodes)) - set(r.config_nodes))
    if missing:
        return [_err(rule, "--config", f"the config file is written on node(s) {', '.join(map(str, r.config_nodes))} "
                     f"only; node(s) {', '.join(map(str, missing))} cannot read it")]
    return []


def _slurm_nodelist(r: EngineRecipe, rule: StartupRule) -> list[Finding]:
    out = []
    for name in r.srun_nodelist or ():
        try:
            ipaddress.ip_address(name)
        except ValueError:
            if name.startswith("<"):
                out.append(_err(rule, "srun -w", f"'{name}' is a placeholder, not a Slurm node name"))
            continue
        out.append(_err(rule, "srun -w", f"'{name}' is an IP address; srun -w takes Slurm node names"))
    return out


# ----------------------------------------------------------------------------- SGLang
def _sgl_eplb(r: EngineRecipe, rule: StartupRule) -> list[Finding]:
    eplb = r.config.get("enable-eplb") is True or _int(r.config.get("ep-num-redundant-experts"), 0) > 0
    if not eplb:
        return []
    if _int(r.config.get("ep-size"), 1) > 1 or str(r.config.get("moe-a2a-backend", "none")) != "none":
        return []
    return [_err(rule, "enable-eplb", "has nothing to balance without expert parallelism (ep-size above 1)",
                 severity="warning")]


def _choices(key: str) -> Evaluator:
    def run(r: EngineRecipe, rule: StartupRule) -> list[Finding]:
        value = r.config.get(key)
        if value is None or str(value) in rule.params["choices"]:
            return []
        return [_err(rule, key, f"'{value}' is not one of {', '.join(rule.params['choices'])}")]

    return run


def _redundant(value: object) -> int:
    """Redundant experts as a config writes them: a count, or vLLM's ``eplb-config`` JSON / mapping."""
    if isinstance(value, str) and value.strip().startswith("{"):
        try:
            value = json.loads(value)
        except ValueError:
            return 0
    if isinstance(value, dict):
        value = value.get("num_redundant_experts", 0)
    return _int(value)


def lb_slots(config: dict[str, object], experts: int, params: dict[str, object]) -> tuple[int, int] | None:
    """``(physical experts, EP ranks)`` of a config as a load-balancer rule reads them (``params``:
    ``slots_key`` for a slot count the config writes, else the model's ``experts`` plus the count
    under ``redundant_key``; the EP size under ``ep_key``, or the product of ``ep_product`` where
    ``ep_switch`` is on; ``switch``: the setting without which the rule does not hold, ``when_any``:
    settings one of which must be set), or ``None``
    where the rule does not apply (switch off, one EP rank, slots unknown)."""
    r = EngineRecipe(engine="", model="", config=config, env={}, host=None, model_dtype="", mla=False,
                     num_layers=0, pp=1, sequences_per_rank=1)
    if "switch" in params and r.value(str(params["switch"])) is not True:
        return None
    if "when_any" in params and not any(r.value(str(k)) for k in params["when_any"]):  # type: ignore[attr-defined]  # a list in the rules file
        return None
    if "slots_key" in params:
        slots = r.value(str(params["slots_key"]))
        if not isinstance(slots, int) or isinstance(slots, bool):
            return None
    elif experts > 0:
        slots = experts + _redundant(r.value(str(params["redundant_key"])))
    else:
        return None
    if "ep_key" in params:
        ep = _int(r.value(str(params["ep_key"])), 1)
    elif r.value(str(params.get("ep_switch", ""))) is True:
        ep = 1
        for key in params.get("ep_product", []):  # type: ignore[attr-defined]  # a list in the rules file
            ep *= max(_int(r.value(str(key)), 1), 1)
    else:
        ep = 1
    return None if ep <= 1 else (slots, ep)


def _even_experts(r: EngineRecipe, rule: StartupRule) -> list[Finding]:
    found = lb_slots(r.config, r.experts, rule.params)
    if found is None or found[0] % found[1] == 0:
        return []
    slots, ep = found
    key = str(rule.params.get("slots_key") or rule.params.get("redundant_key"))
    return [_err(rule, key, f"{slots} physical experts do not divide among the {ep} expert-parallel ranks "
                 f"({slots % ep} left over); the engine refuses the model at load")]


def _trt_disk_tier(r: EngineRecipe, rule: StartupRule) -> list[Finding]:
    size_key, path_key, v2_key = (str(rule.params[k]) for k in ("size_key", "path_key", "v2_key"))
    if _int(r.value(size_key)) <= 0:
        return []
    out = []
    if not r.value(path_key):
        out.append(_err(rule, path_key, "is not set: TensorRT-LLM refuses a positive disk_cache_size without it"))
    if r.value(v2_key) is not True:
        out.append(_err(rule, v2_key, "is not true: the v1 KV cache manager ignores the disk tier, so the capacity "
                        "the plan counts on NVMe would not exist"))
    return out


def _refused_values(r: EngineRecipe, rule: StartupRule) -> list[Finding]:
    """A value the rule's versions refuse (``params.key`` / ``params.refused``), e.g. a MoE backend the
    engine dropped."""
    key = str(rule.params["key"])
    value = r.value(key)
    if value is None or str(value) not in rule.params["refused"]:
        return []
    instead = ", ".join(str(v) for v in rule.params.get("instead", []))
    return [_err(rule, key, f"'{value}' is refused by this version (it runs up to {rule.params.get('last')}); "
                 f"write one of {instead}")]


def _sgl_ib_device(r: EngineRecipe, rule: StartupRule) -> list[Finding]:
    value = r.config.get("disaggregation-ib-device")
    if value is None:
        return []
    text = str(value).strip()
    if text.startswith("{"):
        try:
            json.loads(text)
        except ValueError:
            return [_err(rule, "disaggregation-ib-device", "is neither HCA names nor a JSON mapping")]
        return []
    bad = [d for d in text.split(",") if not d or ":" in d or " " in d]
    if bad:
        return [_err(rule, "disaggregation-ib-device", f"'{bad[0]}' is not an HCA name (no port suffix, e.g. mlx5_0)")]
    return []


#: Rules a recipe of one server is checked against, by id; the disaggregated ones are in
#: :mod:`.disagg_check` (``DISAGG_EVALUATORS``).
EVALUATORS: dict[str, Evaluator] = {
    "vllm.cp.dcp_gqa": _vllm_dcp_gqa,
    "vllm.cp.dcp_with_pcp": _vllm_dcp_with_pcp,
    "vllm.eplb.needs_ep": _vllm_eplb,
    "vllm.api_server_count.headless": _vllm_api_servers,
    "vllm.check.no_device": _none,
    "vllm.dp.hybrid_lb_local": _vllm_hybrid_lb,
    "vllm.dp.external_lb_rank": _vllm_external_lb,
    "vllm.dp.hybrid_lb_headless": _vllm_hybrid_headless,
    "vllm.dp.external_lb_moe": _vllm_external_moe,
    "trtllm.spec.eagle3_only": _trt_eagle,
    "trtllm.cp.pytorch_types": _trt_cp_types,
    "trtllm.cp.helix_tokens_per_block": _trt_helix_tpb,
    "trtllm.cp.helix_blackwell": _trt_helix_blackwell,
    "trtllm.cp.helix_disagg_generation": _trt_helix_disagg,
    "trtllm.moe.mapping": _trt_moe_mapping,
    "trtllm.moe.wideep_removed": _refused_values,
    "trtllm.moe.lb_slots_even": _even_experts,
    "trtllm.kv.disk_tier": _trt_disk_tier,
    "vllm.eplb.even_experts": _even_experts,
    "sglang.eplb.even_experts": _even_experts,
    "trtllm.multinode.config_every_node": _trt_config_nodes,
    "slurm.nodelist": _slurm_nodelist,
    "sglang.eplb.needs_ep": _sgl_eplb,
    "sglang.moe_a2a.choices": _choices("moe-a2a-backend"),
    "sglang.load_balance.choices": _choices("load-balance-method"),
    "sglang.disagg.ib_device": _sgl_ib_device,
}


def check_startup(recipe: EngineRecipe) -> list[Finding]:
    """Findings of every start-up rule of the recipe's engine that holds for its version."""
    out: list[Finding] = []
    for rid, r in startup_rules().items():
        fn = EVALUATORS.get(rid)
        if fn is None or r.engine != recipe.engine or not r.applies(recipe.version):
            continue
        out += fn(recipe, r)
    return out


def check_plan_values(recipe: EngineRecipe, version_label: str) -> list[Finding]:
    """The config values that differ from what the plan was costed with (batch limit, token
    budget, memory fraction, largest CUDA-graph capture size)."""
    out = []
    for key, planned in recipe.plan.items():
        value = recipe.value(key)
        if value is None:
            continue
        same = (abs(float(value) - float(planned)) < 1e-9
                if isinstance(value, (int, float)) and isinstance(planned, (int, float)) and not isinstance(value, bool)
                else str(value) == str(planned))
        if not same:
            out.append(Finding("error", key, f"{value} differs from the plan's {planned}: the engine would run "
                               "another batch, token budget, memory or CUDA-graph capture than the figures in this export",
                               f"{version_label}, the plan"))
    return out
