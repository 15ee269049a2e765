"""Check a disaggregated recipe against the engines' run-time rules for prefill/decode serving.

The rules (``presets/engines/rules.json`` → ``engines.<engine>.disaggregated``, each with the engine
source it was read from) that make a disaggregated deployment refuse to start or misroute:

* vLLM: ``--kv-transfer-config`` must name a ``kv_connector`` and a ``kv_role`` among
  ``kv_producer`` / ``kv_consumer`` / ``kv_both`` (``KVTransferConfig.__post_init__`` raises); two
  servers on one host must not share a NIXL side-channel port range (one port per TP rank); the
  proxy's hosts and ports must pair up.
* SGLang: ``--disaggregation-mode`` is ``prefill`` or ``decode``; the transfer backend is one SGLang
  has; two prefill servers on one host need different bootstrap ports; the router lists every server.
* TensorRT-LLM: ``cache_transceiver_config.backend`` is one of its backends; every url is
  ``host:port`` and there are ``num_instances`` of them, none listed twice; context servers run
  without the overlap scheduler; the transfer buffer holds a whole prompt.
* All engines: two servers on one host never share a serving port or a GPU.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import cast

from studio.io.export.bundle import EngineRecipe
from studio.io.export.checks.check import CheckReport, Finding
from studio.io.export.checks.rules import rules_for
from studio.io.export.checks.startup_rules import StartupRule, startup_rules
from studio.io.export.disaggregated.disagg import DisaggRecipe, disagg_part, disagg_rules


def _source(engine: str, rules: dict) -> str:
    version = rules_for(engine).version
    commit = f" @ {rules['commit'][:9]}" if rules.get("commit") else ""
    return f"{version}, disaggregated rules{commit}"


def server_recipe(recipe: DisaggRecipe, server) -> EngineRecipe:
    """One server of a disaggregated recipe as the engine arguments it launches with (its flags, or
    TensorRT-LLM's config file of its role), for the engine's own validation; the GPUs it sees are
    its ``CUDA_VISIBLE_DEVICES``."""
    if recipe.engine == "trtllm":
        config = dict(recipe.configs.get(f"trtllm-{server.role}.yaml", {}))
    else:
        config = {str(k).removeprefix("--"): v for k, v in server.args.items()}
    host = config.pop("host", None) if recipe.engine == "sglang" else None
    return EngineRecipe(
        engine=recipe.engine, model=recipe.model, config=config, env=dict(server.env),
        host=None if host is None else str(host), model_dtype="bfloat16", mla=False, num_layers=0, pp=1,
        sequences_per_rank=1, version=recipe.version, role=server.role, gpus_per_node=len(server.slots),
        hf_config=recipe.hf_config,
        # the router's file is parsed once, with the first prefill server's check
        disagg_config=(dict(recipe.configs.get("disagg-config.yaml", {}))
                       if recipe.engine == "trtllm" and server.role == "prefill" else None),
    )


def _engine_findings(recipe: DisaggRecipe, python: str | None,
                     timeout_s: float | None) -> tuple[list[Finding], str | None, str | None]:
    """The engine's own validation of the first server of each pool (the others differ in ports
    and GPUs only)."""
    from dataclasses import replace

    from studio.io.export.checks.check import check_with_engine

    found: list[Finding] = []
    checked: list[str] = []
    for role in ("prefill", "decode"):
        server = next((s for s in recipe.servers if s.role == role), None)
        if server is None:
            continue
        more, ran, missing = check_with_engine(server_recipe(recipe, server), python=python, timeout_s=timeout_s)
        if ran is None:
            return [], None, missing
        found += [replace(f, message=f"{role} server: {f.message}") for f in more]
        checked.append(ran if not checked else f"{role} server too")
    return found, (f"{checked[0]} (prefill server); " + "; ".join(checked[1:])) if checked else None, None


def check_disaggregated(recipe: DisaggRecipe, *, with_engine: bool = True, python: str | None = None,
                        timeout_s: float | None = None) -> CheckReport:
    """Findings of the disaggregated rules for ``recipe``, then (``with_engine``) of the engine's own
    parser and config classes on the first prefill and the first decode server (see
    :func:`studio.io.export.checks.check.check_with_engine`)."""
    rules = disagg_rules(recipe.engine)
    src = _source(recipe.engine, rules)
    out: list[Finding] = []
    seen_ports: dict[tuple[str, int], str] = {}
    seen_gpus: dict[tuple[str, int], str] = {}
    for s in recipe.servers:
        name = f"{s.role} {s.index}"
        other = seen_ports.get((s.node, s.port))
        if other:
            out.append(
                Finding(
                    "error",
                    "--port",
                    f"{name} and {other} both listen on port {s.port} of {s.host}",
                    src,
                )
            )
        seen_ports[(s.node, s.port)] = name
        for slot in s.slots:
            other = seen_gpus.get((s.node, slot))
            if other:
                out.append(
                    Finding(
                        "error",
                        "CUDA_VISIBLE_DEVICES",
                        f"{name} and {other} both use GPU {slot} of {s.host}",
                        src,
                    )
                )
            seen_gpus[(s.node, slot)] = name
    out += disagg_part(recipe.engine).check(recipe, rules, src)
    out += check_disagg_startup(recipe)
    checked = missing = None
    if with_engine:
        more, checked, missing = _engine_findings(recipe, python, timeout_s)
        out += more
    return CheckReport(
        engine=recipe.engine,
        findings=tuple(out),
        engine_checked=checked,
        engine_missing=missing,
    )


# ----------------------------------------------------------------------------- start-up rules
def _mooncake_in_tree(r: DisaggRecipe, rule: StartupRule) -> list[Finding]:
    if r.engine != "vllm":
        return []
    out = []
    for s in r.servers:
        try:
            cfg = json.loads(str(s.args.get("--kv-transfer-config", "")))
        except json.JSONDecodeError:
            continue
        if isinstance(cfg, dict) and cfg.get("kv_connector_module_path") == rule.params["stale_module"]:
            out.append(Finding("error", "--kv-transfer-config", f"{s.role} {s.index}: kv_connector_module_path "
                               f"{rule.params['stale_module']} is Mooncake's connector for vLLM 0.10.1-0.12.0; "
                               f"vLLM {r.version or 'of these rules'} runs the in-tree {rule.params['connector']} "
                               "(drop kv_connector_module_path)", rule.cite()))
    return out


def _uses_mooncake(r: DisaggRecipe) -> bool:
    for s in r.servers:
        try:
            cfg = json.loads(str(s.args.get("--kv-transfer-config", "")))
        except json.JSONDecodeError:
            continue
        if isinstance(cfg, dict) and cfg.get("kv_connector") == "MooncakeConnector":
            return True
    return False


def _mooncake_ports(r: DisaggRecipe, rule: StartupRule) -> list[Finding]:
    if r.engine != "vllm" or not _uses_mooncake(r):
        return []
    env = str(rule.params["env"])
    spans: dict[str, list[tuple[int, int, str]]] = {}
    for s in r.servers:
        port = int(dict(s.env).get(env, rule.params["default"]))
        width = int(cast(int, s.args.get("--tensor-parallel-size", 1))) * int(
            cast(int, s.args.get("--data-parallel-size", 1)))
        spans.setdefault(s.node, []).append((port, port + width, f"{s.role} {s.index}"))
    out = []
    for node, items in spans.items():
        items.sort()
        for (a0, a1, an), (b0, _b1, bn) in zip(items, items[1:], strict=False):
            if b0 < a1:
                out.append(Finding("error", env, f"{an} (ports {a0}..{a1 - 1}) and {bn} (from {b0}) share Mooncake "
                                   f"bootstrap ports on node {node}: set {env} per server", rule.cite()))
    return out


def _mooncake_proxy(r: DisaggRecipe, rule: StartupRule) -> list[Finding]:
    if r.engine != "vllm" or not _uses_mooncake(r):
        return []
    script = str(r.router.get("script", ""))
    if script.endswith(rule.params["wrong_proxy"]) or "--prefill" not in r.router:
        return [Finding("error", "proxy", f"{script or 'this proxy'} does not forward the request id and the "
                        "prefill server's bootstrap address the Mooncake connector needs; run "
                        f"{rule.params['proxy']}", rule.cite())]
    missing = [s for s in r.servers if s.role == "prefill" and s.bootstrap_port is None]
    return [Finding("error", "proxy", f"prefill {s.index} has no bootstrap port for the proxy", rule.cite())
            for s in missing]


def _trt_buffer(r: DisaggRecipe, rule: StartupRule) -> list[Finding]:
    if r.engine != "trtllm":
        return []
    out = []
    for name, cfg in r.configs.items():
        ctc = cfg.get("cache_transceiver_config")
        if not isinstance(ctc, dict) or ctc.get("max_tokens_in_buffer") is None:
            continue
        buf = int(ctc["max_tokens_in_buffer"])
        longest = int(cfg.get("max_seq_len") or r.max_seq_len)
        if buf < longest:
            out.append(Finding("error", f"{name}: cache_transceiver_config.max_tokens_in_buffer",
                               f"{buf} is below max_seq_len {longest}: the longest prompts' KV never fits the "
                               f"transfer buffer and their transfers stall; write {longest}", rule.cite()))
    return out


def _vllm_host_tier(r: DisaggRecipe, rule: StartupRule) -> list[Finding]:
    """``--kv-offloading-size`` beside a P/D connector (vLLM replaces the connector with it), and a
    MultiConnector whose connectors vLLM cannot build or whose offloading size is missing."""
    if r.engine != "vllm":
        return []
    out = []
    replaced = [str(k) for k in rule.params["replaced_by"]]
    for s in r.servers:
        name = f"{s.role} {s.index}"
        try:
            cfg = json.loads(str(s.args.get("--kv-transfer-config", "")))
        except json.JSONDecodeError:
            continue  # the connector rules report it
        if not isinstance(cfg, dict):
            continue
        if set(replaced) & set(s.args) and cfg.get("kv_connector") != rule.params["connector"]:
            out.append(Finding("error", replaced[0], f"{name}: vLLM sets the kv_connector to "
                               f"{rule.params['connector']} when {replaced[0]} is given, so the server drops "
                               f"{cfg.get('kv_connector')} and transfers no KV; keep the host tier through "
                               f"{rule.params['wrapper']} instead", rule.cite()))
        if cfg.get("kv_connector") != rule.params["wrapper"]:
            continue
        subs = (cfg.get("kv_connector_extra_config") or {}).get("connectors")
        if not isinstance(subs, list) or not subs or not all(isinstance(c, dict) and c.get("kv_connector")
                                                              for c in subs):
            out.append(Finding("error", "--kv-transfer-config", f"{name}: {rule.params['wrapper']} needs "
                               "kv_connector_extra_config.connectors, each with its kv_connector", rule.cite()))
            continue
        for c in subs:
            size = (c.get("kv_connector_extra_config") or {}).get(rule.params["size_key"])
            if c["kv_connector"] == rule.params["connector"] and not (isinstance(size, int) and size > 0):
                out.append(Finding("error", "--kv-transfer-config", f"{name}: {rule.params['connector']} needs "
                                   f"{rule.params['size_key']} above 0 (bytes for the server)", rule.cite()))
    return out


def _sglang_hicache(r: DisaggRecipe, rule: StartupRule) -> list[Finding]:
    """HiCache on an SGLang decode server: refused under the prefill_complete allocation policy,
    and holding nothing where SGLang turns the decode server's radix cache off."""
    if r.engine != "sglang":
        return []
    flag = str(rule.params["enable_flag"])
    out = []
    for s in r.servers:
        if s.role != "decode" or not s.args.get(flag):
            continue
        name = f"decode {s.index}"
        if s.args.get("--disaggregation-decode-allocation-policy") == "prefill_complete":
            out.append(Finding("error", flag, f"{name}: SGLang refuses decode HiCache with the prefill_complete "
                               "allocation policy", rule.cite()))
        elif not s.args.get("--disaggregation-decode-enable-radix-cache"):
            out.append(Finding("warning", flag, f"{name}: SGLang runs a decode server without its radix cache, so "
                               "its HiCache holds nothing; put the host tier on the prefill servers", rule.cite()))
    return out


DISAGG_EVALUATORS: dict[str, Callable[[DisaggRecipe, StartupRule], list[Finding]]] = {
    "vllm.mooncake.in_tree": _mooncake_in_tree,
    "vllm.mooncake.bootstrap_port": _mooncake_ports,
    "vllm.mooncake.proxy": _mooncake_proxy,
    "trtllm.disagg.buffer": _trt_buffer,
    "vllm.disagg.host_tier": _vllm_host_tier,
    "sglang.disagg.hicache_prefill": _sglang_hicache,
}


def _pool_recipes(r: DisaggRecipe) -> list[EngineRecipe]:
    """Each TensorRT-LLM pool's config as a one-server recipe, for the aggregated start-up rules."""
    out = []
    for role in ("prefill", "decode"):
        cfg = r.configs.get(f"trtllm-{role}.yaml")
        if cfg is None:
            continue
        out.append(EngineRecipe(engine="trtllm", model="", config=dict(cfg), env={}, host=None,
                                model_dtype="bfloat16", mla=False, num_layers=1, pp=1, sequences_per_rank=1,
                                version=r.version, role=role, blackwell=r.blackwell))
    return out


def check_disagg_startup(r: DisaggRecipe) -> list[Finding]:
    """The start-up rules of the recipe's engine that hold for its version."""
    from studio.io.export.checks.startup import check_startup

    out: list[Finding] = []
    for rid, rule in startup_rules().items():
        fn = DISAGG_EVALUATORS.get(rid)
        if fn is not None and rule.engine == r.engine and rule.applies(r.version):
            out += fn(r, rule)
    for pool in _pool_recipes(r):
        out += check_startup(pool)
    return out
