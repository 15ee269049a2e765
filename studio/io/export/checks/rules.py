"""The serving engines' run-time rules, read from the bundled ``presets/engines/rules.json``.

The field lists say which flags and keys an engine parses; these rules say what it accepts once it
starts and loads a model: which KV-cache dtypes pass the loader, which batch limits are divided per
rank, when chunked prefill must be on, where the server listens, how an uneven layer split is
passed, and which images and device resources exist per GPU vendor. Each rule records the engine
version and the source file it comes from, so a new engine release is a data update.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from studio.core.errors import StudioError

RULES_FILE = "engines/rules.json"


@dataclass(frozen=True)
class KvRule:
    """Which KV-cache dtypes the engine's loader accepts and what the exporter writes."""

    key: str  # config key (YAML spelling of the engine)
    allowed: tuple[str, ...]
    mla_only: tuple[str, ...]  # accepted for MLA attention only
    must_match_model_dtype: tuple[str, ...]  # values refused unless equal to the model dtype
    emit: dict[str, str]  # planner KV dtype -> value written
    source: str


@dataclass(frozen=True)
class BatchRule:
    """Semantics of the engine's concurrent-sequence limit."""

    key: str
    per: str
    divided_by: str | None  # config key whose value divides the limit per rank
    source: str


@dataclass(frozen=True)
class ChunkRule:
    """Prefill chunking: the per-step token budget, the context length and the switch."""

    tokens_key: str
    context_key: str
    switch_key: str | None  # None: chunking cannot be turned off here
    default_on: bool
    source: str


@dataclass(frozen=True)
class ListenRule:
    """Where the HTTP server listens without ``--host``."""

    flag: str
    default: str | None
    all_interfaces_by_default: bool
    source: str


@dataclass(frozen=True)
class CpVariant:
    """One context-parallel variant an engine runs: the attention kinds it accepts, whether the
    engine keeps its own data parallelism beside it, and the CP type written (TensorRT-LLM)."""

    attention: tuple[str, ...]  # "mla", "gqa"
    engine_dp: bool
    cp_type: str | None
    source: str


@dataclass(frozen=True)
class CpRule:
    """Which context-parallel variants the engine runs (``None`` = it has none of that mode)."""

    decode: CpVariant | None
    prefill: CpVariant | None
    prefill_refusal: str  # why prefill CP cannot be exported, when ``prefill`` is None


@dataclass(frozen=True)
class Vendor:
    """Container image and Kubernetes device resource for one GPU vendor."""

    image: str
    resource: str


@dataclass(frozen=True)
class EngineRules:
    """Every run-time rule of one engine version."""

    engine: str
    version: str
    kv: KvRule
    batch: BatchRule
    chunk: ChunkRule
    listen: ListenRule
    partition_env: str | None  # environment variable holding an uneven layer split
    partition_key: str | None  # config key holding it
    partition_source: str
    vendors: dict[str, Vendor]
    vendors_source: str
    parser_module: str
    parser_class: str
    cp: CpRule | None = None
    release: str | None = None  # the release number the rules were read at ("0.33.0")

    def vendor(self, vendor: str) -> Vendor | None:
        """Image and resource for GPUs of ``vendor``; ``None`` when the engine has none."""
        return self.vendors.get(vendor)


def _get(data: dict, key: str, where: str) -> Any:
    if not isinstance(data, dict) or key not in data:
        raise StudioError(f"field '{where}.{key}' is missing", RULES_FILE)
    return data[key]


def _cp_variant(d: dict | None, where: str) -> CpVariant | None:
    if d is None:
        return None
    return CpVariant(
        attention=tuple(_get(d, "attention", where)),
        engine_dp=bool(_get(d, "engine_dp", where)),
        cp_type=d.get("cp_type"),
        source=str(_get(d, "source", where)),
    )


def _cp_rule(d: dict | None, w: str) -> CpRule | None:
    if d is None:
        return None
    return CpRule(
        decode=_cp_variant(d.get("decode"), w + ".context_parallel.decode"),
        prefill=_cp_variant(d.get("prefill"), w + ".context_parallel.prefill"),
        prefill_refusal=str(d.get("prefill_refusal", "")),
    )


def _parse(engine: str, d: dict) -> EngineRules:
    w = f"engines.{engine}"
    kv = _get(d, "kv_cache_dtype", w)
    batch = _get(d, "batch_limit", w)
    chunk = _get(d, "chunked_prefill", w)
    listen = _get(d, "listen", w)
    part = _get(d, "layer_partition", w)
    vendors = _get(d, "vendors", w)
    parser = _get(d, "parser", w)
    return EngineRules(
        engine=engine,
        version=str(_get(d, "version", w)),
        kv=KvRule(
            key=_get(kv, "key", w + ".kv_cache_dtype"),
            allowed=tuple(_get(kv, "allowed", w + ".kv_cache_dtype")),
            mla_only=tuple(kv.get("mla_only", ())),
            must_match_model_dtype=tuple(kv.get("must_match_model_dtype", ())),
            emit=dict(_get(kv, "emit", w + ".kv_cache_dtype")),
            source=str(_get(kv, "source", w + ".kv_cache_dtype")),
        ),
        batch=BatchRule(
            key=_get(batch, "key", w + ".batch_limit"),
            per=str(_get(batch, "per", w + ".batch_limit")),
            divided_by=batch.get("divided_by"),
            source=str(_get(batch, "source", w + ".batch_limit")),
        ),
        chunk=ChunkRule(
            tokens_key=_get(chunk, "tokens_key", w + ".chunked_prefill"),
            context_key=_get(chunk, "context_key", w + ".chunked_prefill"),
            switch_key=chunk.get("switch_key"),
            default_on=bool(_get(chunk, "default_on", w + ".chunked_prefill")),
            source=str(_get(chunk, "source", w + ".chunked_prefill")),
        ),
        listen=ListenRule(
            flag=_get(listen, "flag", w + ".listen"),
            default=listen.get("default"),
            all_interfaces_by_default=bool(_get(listen, "all_interfaces_by_default", w + ".listen")),
            source=str(_get(listen, "source", w + ".listen")),
        ),
        partition_env=part.get("env"),
        partition_key=part.get("key"),
        partition_source=str(_get(part, "source", w + ".layer_partition")),
        vendors={
            k: Vendor(image=_get(v, "image", f"{w}.vendors.{k}"), resource=_get(v, "resource", f"{w}.vendors.{k}"))
            for k, v in vendors.items()
        },
        vendors_source=str(d.get("vendors_source", "")),
        parser_module=_get(parser, "module", w + ".parser"),
        parser_class=_get(parser, "class", w + ".parser"),
        cp=_cp_rule(d.get("context_parallel"), w),
        release=d.get("release"),
    )


@lru_cache(maxsize=1)
def all_rules() -> dict[str, EngineRules]:
    """Rules of every engine, by engine id (``vllm``, ``trtllm``, ``sglang``).

    Raises
    ------
    StudioError
        The bundled rules file is missing or malformed (the message names the field).
    """
    from studio.io.presets import presets_root, read_json

    data = read_json(presets_root().joinpath(*RULES_FILE.split("/")), RULES_FILE)
    engines = _get(data, "engines", "rules")
    return {name: _parse(name, d) for name, d in engines.items()}


def rules_for(engine: str) -> EngineRules:
    """Rules of ``engine``.

    Raises
    ------
    StudioError
        For an engine without rules.
    """
    table = all_rules()
    if engine not in table:
        raise StudioError(f"engine '{engine}' has no run-time rules; known: {', '.join(table)}")
    return table[engine]
