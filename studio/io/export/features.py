"""The plan's engine features (``serving.features``) in each engine's own keys, written only where
the engine version accepts them (``features`` in ``presets/engines/rules.json``, each entry with the
versions and the file and line it was read from).

A feature the engine (or its version) lacks is not written and a note says so; a value the engine
does not accept (an all-to-all backend it has no such name for, say) is refused with the allowed
values.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from studio.core.engine_features import EngineFeatures
from studio.core.errors import StudioError
from studio.core.project import Project
from studio.io.export.checks.startup_rules import Where, version_in

RULES_FILE = "engines/rules.json"


@lru_cache(maxsize=1)
def feature_rules() -> dict[str, dict[str, Any]]:
    """``features`` of the rules file: feature → {"says", engine → entry}."""
    from studio.io.presets import presets_root, read_json

    data = read_json(presets_root().joinpath(*RULES_FILE.split("/")), RULES_FILE)
    table = data.get("features")
    if not isinstance(table, dict):
        raise StudioError("field 'features' is missing", RULES_FILE)
    return table


def _cite(entry: dict[str, Any]) -> str:
    return "; ".join(Where(file=w["file"], at=w["at"], line=w.get("line"), symbol=w.get("symbol")).text()
                     for w in entry.get("source", []))


def _entry(feature: str, engine: str, version: str | None, label: str, notes: list[str]) -> dict[str, Any] | None:
    """The engine's entry for ``feature`` when its version accepts it, else ``None`` (with a note)."""
    rules = feature_rules().get(feature, {})
    entry = rules.get(engine)
    if not isinstance(entry, dict):
        notes.append(f"{label} has no {rules.get('says', feature)}: serving.features.{feature} is not exported.")
        return None
    if version is not None and not version_in(version, str(entry["versions"])):
        notes.append(f"{label} {version} does not accept {entry.get('key', feature)} (versions {entry['versions']}); "
                     f"serving.features.{feature} is not exported.")
        return None
    return entry


def _choice(feature: str, value: str, entry: dict[str, Any], label: str, version: str | None = None) -> str:
    allowed = [str(c) for c in entry.get("choices", [])]
    if allowed and value not in allowed:
        raise StudioError(f"serving.features.{feature} '{value}' is not a {label} value; allowed: {', '.join(allowed)} "
                          f"(read in {_cite(entry)})", field=feature)
    _refused_by_version(feature, value, entry, label, version)
    return value


def _refused_by_version(feature: str, value: str, entry: dict[str, Any], label: str, version: str | None) -> None:
    """Refuse ``value`` where one of the entry's ``value_rules`` (start-up rules whose ``params.refused``
    lists values the engine takes only outside the rule's versions) holds for ``version`` (``None``: the
    version the exports target); the message is the rule's, with the last version that took it."""
    from studio.io.export.checks.startup_rules import startup_rules

    for rid in entry.get("value_rules", []):
        r = startup_rules()[str(rid)]
        if value in r.params.get("refused", []) and r.applies(version):
            instead = ", ".join(str(v) for v in r.params.get("instead", []))
            raise StudioError(
                f"serving.features.{feature} '{value}': {label} {version or 'as exported'} refuses it ({r.says}); "
                f"it runs on {label} {r.params.get('last')} and earlier only; plan {instead} instead [{r.cite()}]",
                field=feature)


def _put(cfg: dict[str, object], key: str, value: object) -> None:
    """``cfg[key] = value``, following dots into nested mappings (TensorRT-LLM)."""
    node = cfg
    *path, last = key.split(".")
    for part in path:
        child = node.get(part)
        if not isinstance(child, dict):
            child = {}
            node[part] = child
        node = child
    node[last] = value


def _even_slots(entry: dict[str, Any], cfg: dict[str, object], experts: int, redundant: int, label: str,
                version: str | None) -> None:
    """Refuse a load balancer whose physical experts (experts + redundant) do not divide among the
    expert-parallel ranks of ``cfg``, by the start-up rule the entry names (``slots_rule``: TensorRT-LLM
    ``MoeLoadBalancerConfig.setup``, vLLM's fused-MoE layer with EPLB, SGLang's expert location
    metadata; each refuses the model at load), naming the redundant counts that fit."""
    from studio.io.export.checks.startup import lb_slots
    from studio.io.export.checks.startup_rules import startup_rules

    rid = entry.get("slots_rule")
    if rid is None:
        return
    r = startup_rules()[str(rid)]
    found = lb_slots(cfg, experts, r.params)
    if not r.applies(version) or found is None or found[0] % found[1] == 0:
        return
    slots, ep = found
    rest = slots % ep
    fits = [n for n in (redundant - rest, redundant + ep - rest) if n >= 0]
    raise StudioError(
        f"serving.features.eplb: {label} spreads the physical experts ({experts} experts + {redundant} redundant = "
        f"{slots}) evenly over the {ep} expert-parallel ranks and refuses the model at load otherwise ({r.says}); "
        f"plan {' or '.join(str(n) for n in fits)} redundant experts (serving.features.redundant_experts) "
        f"[{r.cite()}]", field="redundant_experts")


def apply_features(engine: str, label: str, version: str | None, project: Project, cfg: dict[str, object],
                   *, experts_parallel: bool, attention_dp: bool) -> list[str]:
    """Write the project's engine features into ``cfg`` (in place, the engine's config-file keys);
    returns the notes on what was left out.

    Raises
    ------
    StudioError
        A value the engine does not accept (the message lists the allowed ones and their source).
    """
    f: EngineFeatures = project.serving.features
    notes: list[str] = []
    moe = project.model.is_moe
    if (f.eplb or f.redundant_experts) and moe and (e := _entry("eplb", engine, version, label, notes)):
        if not experts_parallel:
            notes.append(f"EPLB moves experts between expert-parallel ranks; this {label} recipe has no expert "
                         "parallelism, so serving.features.eplb is not exported.")
        elif engine == "trtllm":
            _put(cfg, str(e["key"]), {"num_slots": project.model.moe.num_experts + f.redundant_experts}
                 if project.model.moe is not None else {})
        else:
            _put(cfg, str(e["key"]), True)
            if f.redundant_experts:
                count: object = f.redundant_experts
                if e["count_key"] == "eplb-config":
                    count = json.dumps({"num_redundant_experts": f.redundant_experts})
                _put(cfg, str(e["count_key"]), count)
        if experts_parallel and project.model.moe is not None:
            _even_slots(e, cfg, project.model.moe.num_experts, f.redundant_experts, label, version)
    if f.dual_batch_overlap and (e := _entry("dual_batch_overlap", engine, version, label, notes)):
        _put(cfg, str(e["key"]), True)
    if f.all2all_backend and moe and (e := _entry("all2all_backend", engine, version, label, notes)):
        _put(cfg, str(e["key"]), _choice("all2all_backend", f.all2all_backend, e, label, version))
    if f.load_balance and (e := _entry("load_balance", engine, version, label, notes)):
        value = _choice("load_balance", f.load_balance, e, label)
        if "keys" in e:
            if value in e["keys"]:
                _put(cfg, str(e["keys"][value]), True)
        else:
            _put(cfg, str(e["key"]), value)
    if f.api_servers and (e := _entry("api_servers", engine, version, label, notes)):
        _put(cfg, str(e["key"]), f.api_servers)
    if f.kv_offload_gib and not project.serving.kv_tiers.host_gib and (
            e := _entry("kv_offload_gib", engine, version, label, notes)):
        # the host KV tier is the one source of kv-offloading-size (studio.io.export.prefix_cache);
        # the older field is written only while no tier is set, and the plan's figures do not count it
        _put(cfg, str(e["key"]), f.kv_offload_gib)
        _put(cfg, str(e["backend_key"]), str(e["backend"]))
        notes.append(f"serving.features.kv_offload_gib writes {e['key']} {f.kv_offload_gib:g}, but the plan's figures "
                     "do not count it; set the host KV tier (serving.kv_tiers.host_gib, GiB per node) instead, which "
                     "writes the same setting and adds its capacity to the prefix cache.")
    if f.attention_dp_balance and (e := _entry("attention_dp_balance", engine, version, label, notes)):
        if attention_dp:
            _put(cfg, str(e["key"]), {"enable_balance": True})
        else:
            notes.append("attention_dp_config balances attention data-parallel ranks; this recipe has none, so "
                         "serving.features.attention_dp_balance is not exported.")
    return notes


def frontend_keys(engine: str) -> frozenset[str]:
    """Config keys of ``engine``'s features that its API server, not its engine arguments, parses."""
    return frozenset(str(e[engine]["key"]) for e in feature_rules().values()
                     if isinstance(e.get(engine), dict) and e[engine].get("frontend"))
