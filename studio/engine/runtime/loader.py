"""Read ``presets/engines/<engine>.json`` into :class:`~studio.engine.runtime.profile.EngineProfile`
and pick the profile of an engine version.

Like :mod:`studio.engine.step.constants`, the engine reads its own data (it may not import
:mod:`studio.io`): the packaged ``studio/_data/presets/engines/`` first, else the checkout's
``presets/engines/``. A malformed file raises :class:`~studio.core.errors.StudioError` naming the
file and the dotted field; an unknown version falls back to the nearest profile and says so.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from studio.core.errors import StudioError
from studio.engine.runtime.profile import (
    EngineDefaults,
    EngineProfile,
    GraphSizes,
    MemoryRule,
    MoeExchange,
    SchedulerCost,
    SglangReserve,
    Tier,
    Tiered,
    parse_version,
)
from studio.engine.runtime.reserves import ReserveRule
from studio.engine.step.records import Record

#: The engines a project may name (``serving.runtime``), each with its file under presets/engines/.
ENGINES: tuple[str, ...] = ("vllm", "trtllm", "sglang")
ENGINE_NAMES = {"vllm": "vLLM", "trtllm": "TensorRT-LLM", "sglang": "SGLang"}


class Resolved(Record, frozen=True):
    """The profile a project's ``runtime`` / ``runtime_version`` selects, and why."""

    profile: EngineProfile
    asked: str | None  # the version the project names (None = newest profile)
    note: str | None  # set when the version fell back to the nearest profile


def _read(engine: str) -> tuple[str, str]:
    name = f"{engine}.json"
    packaged = resources.files("studio").joinpath("_data").joinpath("presets").joinpath("engines").joinpath(name)
    if packaged.is_file():
        return packaged.read_text(encoding="utf-8"), f"presets/engines/{name}"
    checkout = Path(__file__).resolve().parents[3] / "presets" / "engines" / name
    if checkout.is_file():
        return checkout.read_text(encoding="utf-8"), f"presets/engines/{name}"
    raise StudioError(f"presets/engines/{name} is missing from this installation; reinstall layout-studio")


class _Reader:
    """Pulls typed values out of one profile dict, naming ``file`` and the dotted field on error."""

    def __init__(self, where: str, prefix: str, sources: dict[str, str]) -> None:
        self.where, self.prefix, self.sources = where, prefix, sources

    def fail(self, path: str, what: str) -> StudioError:
        return StudioError(f"field '{self.prefix}.{path}' {what}", self.where)

    def entry(self, d: Any, path: str) -> dict[str, Any]:
        node = d
        for key in path.split("."):
            if not isinstance(node, dict) or key not in node:
                raise self.fail(path, "is missing")
            node = node[key]
        if not isinstance(node, dict):
            raise self.fail(path, "must be an object with 'value' (or 'tiers') and 'source'")
        if not str(node.get("source", "")).strip():
            raise self.fail(path, "has no 'source' (every profile value cites the engine code or docs it comes from)")
        self.sources[path] = str(node["source"])
        return node

    def value(self, d: Any, path: str) -> Any:
        node = self.entry(d, path)
        if "value" not in node:
            raise self.fail(path, "has no 'value'")
        return node["value"]

    def number(self, d: Any, path: str, lo: float = 0.0, hi: float = 1e9, none_ok: bool = False) -> float | None:
        v = self.value(d, path)
        if v is None and none_ok:
            return None
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not (lo <= v <= hi):
            allowed = f"a number in [{lo:g}, {hi:g}]" + (" or null" if none_ok else "")
            raise self.fail(path + ".value", f"is {v!r}; allowed: {allowed}")
        return float(v)

    def flag(self, d: Any, path: str) -> bool:
        v = self.value(d, path)
        if not isinstance(v, bool):
            raise self.fail(path + ".value", f"is {v!r}; allowed: true or false")
        return v

    def tiered(self, d: Any, path: str, none_ok: bool = False) -> Tiered:
        node = self.entry(d, path)
        if "tiers" not in node:
            v = self.number(d, path, 1, 1e8, none_ok=none_ok)
            return Tiered((Tier(value=v),))
        rows = node["tiers"]
        if not isinstance(rows, list) or not rows:
            raise self.fail(path + ".tiers", "must be a non-empty list of {below_gib | gpu_prefixes, value}")
        tiers = []
        for i, row in enumerate(rows):
            at = f"{path}.tiers[{i}]"
            if not isinstance(row, dict) or "value" not in row:
                raise self.fail(at, "must be an object with a 'value'")
            unknown = set(row) - {"value", "below_gib", "gpu_prefixes", "tp_from", "value_from_tp"}
            if unknown:
                raise self.fail(at, f"has unknown keys {sorted(unknown)}; allowed: value, below_gib, "
                                    "gpu_prefixes, tp_from, value_from_tp")
            for key in ("value", "below_gib", "value_from_tp"):
                x = row.get(key)
                if x is not None and (isinstance(x, bool) or not isinstance(x, (int, float)) or x <= 0):
                    raise self.fail(f"{at}.{key}", f"is {x!r}; allowed: a positive number")
            tp_from = row.get("tp_from")
            if tp_from is not None and (not isinstance(tp_from, int) or tp_from < 1):
                raise self.fail(f"{at}.tp_from", f"is {tp_from!r}; allowed: an integer ≥ 1")
            prefixes = row.get("gpu_prefixes", [])
            if not isinstance(prefixes, list) or not all(isinstance(p, str) and p for p in prefixes):
                raise self.fail(f"{at}.gpu_prefixes", "must be a list of GPU id prefixes")
            tiers.append(Tier(value=None if row["value"] is None else float(row["value"]),
                              below_gib=row.get("below_gib"), gpu_prefixes=tuple(prefixes), tp_from=tp_from,
                              value_from_tp=row.get("value_from_tp")))
        last = tiers[-1]
        if last.below_gib is not None or last.gpu_prefixes:
            raise self.fail(f"{path}.tiers[{len(tiers) - 1}]", "must be the catch-all row (no below_gib, no gpu_prefixes)")
        return Tiered(tuple(tiers))


def _version(r: _Reader, raw: Any, key: str) -> tuple[int, ...]:
    if not isinstance(raw, str):
        raise r.fail(f"versions.{key}", f"is {raw!r}; allowed: a version string such as \"0.8.0\"")
    try:
        return parse_version(raw)
    except ValueError as exc:
        raise r.fail(f"versions.{key}", str(exc)) from None



def _graphs(r: _Reader, d: Any, path: str) -> GraphSizes:
    """A CUDA-graph capture rule (``ranges``, ``max``, ``padding``) at ``path``."""
    ranges_raw = r.value(d, f"{path}.ranges")
    if not isinstance(ranges_raw, list):  # [] = the engine captures no CUDA graph (runs eagerly)
        raise r.fail(f"{path}.ranges.value", "must be a list of [start, stop, step] ([] = no CUDA graphs)")
    ranges = []
    for i, rg in enumerate(ranges_raw):
        ok = (isinstance(rg, list) and len(rg) == 3 and all(isinstance(x, int) and not isinstance(x, bool) for x in rg)
              and rg[0] >= 1 and rg[1] >= rg[0] and rg[2] >= 1)
        if not ok:
            raise r.fail(f"{path}.ranges.value[{i}]", f"is {rg!r}; allowed: [start ≥ 1, stop ≥ start, step ≥ 1]")
        ranges.append((rg[0], rg[1], rg[2]))
    return GraphSizes(ranges=tuple(ranges), max=r.tiered(d, f"{path}.max", none_ok=not ranges),
                      padding=r.flag(d, f"{path}.padding"))

def profile_from_dict(engine: str, d: Any, where: str, index: int) -> EngineProfile:
    """One entry of a profile file's ``profiles`` list; errors name ``where`` and the field."""
    if not isinstance(d, dict):
        raise StudioError(f"field 'profiles[{index}]' must be an object", where)
    pid = d.get("id")
    prefix = f"profiles[{index}]" if not isinstance(pid, str) else f"profiles[{index}] ({pid})"
    sources: dict[str, str] = {}
    r = _Reader(where, prefix, sources)
    if not isinstance(pid, str) or not pid:
        raise r.fail("id", "is missing; give the profile a short id such as 'vllm-v1'")
    vers = r.entry(d, "versions")
    v_from, v_until = _version(r, vers.get("from"), "from"), _version(r, vers.get("until"), "until")
    if not v_from < v_until:
        raise r.fail("versions", f"'from' {vers.get('from')} must come before 'until' {vers.get('until')}")
    kt = r.entry(d, "kernel_table")
    if not isinstance(kt.get("engine"), str) or not isinstance(kt.get("version"), str):
        raise r.fail("kernel_table", "needs 'engine' and 'version' strings (the measured kernel table it uses)")
    sched = SchedulerCost(
        cpu_base_us=r.number(d, "scheduler.cpu_base_us", 0, 1e6) or 0.0,
        cpu_per_seq_us=r.number(d, "scheduler.cpu_per_seq_us", 0, 1e5) or 0.0,
        detokenize_per_seq_us=r.number(d, "scheduler.detokenize_per_seq_us", 0, 1e5) or 0.0,
        overlap=r.flag(d, "scheduler.overlap"),
        exposed_when_overlapped_us=r.number(d, "scheduler.exposed_when_overlapped_us", 0, 1e6) or 0.0,
        pipeline_per_seq_us=(r.number(d, "scheduler.pipeline_per_seq_us", 0, 1e5) or 0.0)
        if "pipeline_per_seq_us" in (d.get("scheduler") or {}) else 0.0,
    )
    budget_node = r.entry(d, "defaults.max_num_batched_tokens")
    at_least = budget_node.get("at_least_context", False)
    if not isinstance(at_least, bool):
        raise r.fail("defaults.max_num_batched_tokens.at_least_context", f"is {at_least!r}; allowed: true or false")
    chunk_at, chunk_budget = budget_node.get("chunked_above_context"), budget_node.get("chunked_budget")
    for key, x in (("chunked_above_context", chunk_at), ("chunked_budget", chunk_budget)):
        if x is not None and (isinstance(x, bool) or not isinstance(x, int) or x < 16):
            raise r.fail(f"defaults.max_num_batched_tokens.{key}", f"is {x!r}; allowed: a whole number of tokens ≥ 16")
    if (chunk_at is None) != (chunk_budget is None):
        raise r.fail("defaults.max_num_batched_tokens", "needs both chunked_above_context and chunked_budget, or neither")
    graphs = _graphs(r, d, "defaults.cuda_graphs")
    bench_graphs = _graphs(r, d, "defaults.bench_cuda_graphs") if "bench_cuda_graphs" in (d.get("defaults") or {}) else None
    defaults = EngineDefaults(
        max_num_batched_tokens=r.tiered(d, "defaults.max_num_batched_tokens"),
        budget_at_least_context=at_least,
        chunked_above_context=chunk_at,
        chunked_budget=chunk_budget,
        max_num_seqs=r.tiered(d, "defaults.max_num_seqs", none_ok=True),
        chunked_prefill=r.flag(d, "defaults.chunked_prefill"),
        prefix_caching=r.flag(d, "defaults.prefix_caching"),
        graphs=graphs,
        bench_graphs=bench_graphs,
    )
    mode = r.value(d, "memory.mode")
    if mode not in ("total", "free", "static"):
        raise r.fail("memory.mode.value", f"is {mode!r}; allowed: 'total' (vLLM), 'free' (TensorRT-LLM), 'static' (SGLang)")
    fraction = r.number(d, "memory.fraction", 0.05, 1.0, none_ok=True)
    reserve_raw = r.value(d, "memory.reserve")
    reserve = None
    if reserve_raw is not None:
        keys = ("base_mib", "per_chunk_token_mib", "min_chunk_tokens", "per_graph_batch_mib", "per_tp_pp_mib",
                "floor_mib_above_60_gib")
        if not isinstance(reserve_raw, dict) or set(reserve_raw) != set(keys):
            raise r.fail("memory.reserve.value", f"must be null or an object with exactly {', '.join(keys)}")
        for k in keys:
            x = reserve_raw[k]
            if isinstance(x, bool) or not isinstance(x, (int, float)) or x < 0:
                raise r.fail(f"memory.reserve.value.{k}", f"is {x!r}; allowed: a number ≥ 0")
        reserve = SglangReserve(**{k: float(reserve_raw[k]) for k in keys})
    if fraction is None and reserve is None:
        raise r.fail("memory.fraction.value", "is null but memory.reserve is null too: give one of them")
    memory = MemoryRule(mode=mode, fraction=fraction, graphs_in_budget=r.flag(d, "memory.graphs_in_budget"),
                        reserve=reserve, reserves=_reserves(r, d))
    moe = _moe_exchange(r, d) if "moe" in d else MoeExchange()
    raw_label = d.get("label")
    label = raw_label if isinstance(raw_label, str) else pid
    return EngineProfile(
        engine=engine, id=pid, label=label, version_from=v_from, version_until=v_until,
        kernel_engine=kt["engine"], kernel_version=kt["version"], scheduler=sched, defaults=defaults,
        memory=memory, file=where, moe=moe, sources=sources,
        host_slowdown=r.tiered(d, "scheduler.host_slowdown") if "host_slowdown" in (d.get("scheduler") or {}) else None,
    )


def _moe_exchange(r: _Reader, d: dict[str, Any]) -> MoeExchange:
    """The optional ``moe`` section: how MoE layers exchange tokens between attention-DP ranks."""
    kind = r.value(d, "moe.dp_exchange")
    if kind not in ("alltoall", "allgather"):
        raise r.fail("moe.dp_exchange.value", f"is {kind!r}; allowed: 'alltoall' or 'allgather'")
    node = r.entry(d, "moe.dp_exchange")
    prefixes = node.get("alltoall_gpu_prefixes", [])
    if not isinstance(prefixes, list) or not all(isinstance(x, str) and x for x in prefixes):
        raise r.fail("moe.dp_exchange.alltoall_gpu_prefixes", "must be a list of GPU id prefixes such as 'gb200'")
    above = node.get("alltoall_above_top_k", True)
    if not isinstance(above, bool):
        raise r.fail("moe.dp_exchange.alltoall_above_top_k", f"is {above!r}; allowed: true or false")
    backend = ""
    if "backend" in d["moe"]:
        backend = r.value(d, "moe.backend")
        if backend not in ("cutlass",):
            raise r.fail("moe.backend.value", f"is {backend!r}; allowed: 'cutlass' (the backend the kernel tables "
                                              "time apart)")
    return MoeExchange(kind=kind, alltoall_gpu_prefixes=tuple(prefixes), alltoall_above_top_k=above,
                       backend=backend)


def _since(r: _Reader, raw: str, path: str) -> tuple[int, ...]:
    try:
        return parse_version(raw)
    except ValueError as exc:
        raise r.fail(path + ".value", str(exc)) from None


def _reserves(r: _Reader, d: Any) -> ReserveRule | None:
    """``memory.reserves`` (optional: without it the cost constants' generic terms apply)."""
    mem = d.get("memory") if isinstance(d, dict) else None
    if not isinstance(mem, dict) or "reserves" not in mem:
        return None
    if not isinstance(mem["reserves"], dict):
        raise r.fail("memory.reserves", "must be an object of {value, source} entries")
    p = "memory.reserves."
    since = r.value(d, p + "graphs_counted_from")
    if since is not None and not isinstance(since, str):
        raise r.fail(p + "graphs_counted_from.value", f"is {since!r}; allowed: a version string or null")
    return ReserveRule(
        forward_profiled=r.flag(d, p + "forward_profiled"),
        sampler_bytes_per_logit=float(r.number(d, p + "sampler_bytes_per_logit", 0.0, 1000.0) or 0.0),
        non_torch_gib=float(r.number(d, p + "non_torch_gib", 0.0, 100.0) or 0.0),
        tp_comm_gib=float(r.number(d, p + "tp_comm_gib", 0.0, 100.0) or 0.0),
        graph_gib=float(r.number(d, p + "graph_gib", 0.0, 100.0) or 0.0),
        graphs_counted_from=None if since is None else _since(r, since, p + "graphs_counted_from"),
        before_start_gib=float(r.number(d, p + "before_start_gib", 0.0, 100.0) or 0.0),
        **_light_sampler(r, d, mem["reserves"]),
    )


def _light_sampler(r: _Reader, d: Any, raw: dict[str, Any]) -> dict[str, Any]:
    """The optional pair ``light_sampler_from`` / ``light_sampler_bytes_per_logit`` (both or neither)."""
    keys = ("light_sampler_from", "light_sampler_bytes_per_logit")
    if not any(k in raw for k in keys):
        return {}
    p = "memory.reserves."
    since = r.value(d, p + keys[0])
    if not isinstance(since, str):
        raise r.fail(p + keys[0] + ".value", f"is {since!r}; allowed: a version string")
    return {"light_sampler_from": _since(r, since, p + keys[0]),
            "light_sampler_bytes_per_logit": float(r.number(d, p + keys[1], 0.0, 1000.0) or 0.0)}


def profiles_from_text(engine: str, text: str, where: str) -> tuple[EngineProfile, ...]:
    """Every profile of one engine's file, oldest first; errors name ``where`` and the field."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise StudioError(f"is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})", where) from None
    if not isinstance(data, dict):
        raise StudioError("must hold a JSON object with 'engine' and 'profiles'", where)
    if data.get("engine") != engine:
        raise StudioError(f"field 'engine' is {data.get('engine')!r}; this file must describe '{engine}'", where)
    rows = data.get("profiles")
    if not isinstance(rows, list) or not rows:
        raise StudioError("field 'profiles' must be a non-empty list", where)
    out = sorted((profile_from_dict(engine, p, where, i) for i, p in enumerate(rows)), key=lambda p: p.version_from)
    for a, b in zip(out, out[1:], strict=False):
        if b.version_from < a.version_until:
            raise StudioError(f"profiles '{a.id}' and '{b.id}' overlap (versions {a.versions} and {b.versions})", where)
    return tuple(out)


@cache
def engine_profiles(engine: str) -> tuple[EngineProfile, ...]:
    """The bundled profiles of ``engine`` (one of :data:`ENGINES`), oldest first."""
    if engine not in ENGINES:
        raise StudioError(f"runtime '{engine}' is not a serving engine; allowed: {', '.join(ENGINES)}", field="runtime")
    text, where = _read(engine)
    return profiles_from_text(engine, text, where)


def _number(v: tuple[int, ...]) -> float:
    a, b, c = _pad(v)
    return a * 1e6 + b * 1e3 + c


def _pad(v: tuple[int, ...]) -> tuple[int, ...]:
    return (v + (0, 0, 0))[:3]


def _gap(p: EngineProfile, v: tuple[int, ...]) -> float:
    """How far version ``v`` lies outside a profile's range (0 inside)."""
    x = _number(v)
    return max(_number(p.version_from) - x, x - _number(p.version_until) + 1, 0.0)


def choose_profile(profiles: tuple[EngineProfile, ...], version: str | None) -> Resolved:
    """The profile covering ``version``; ``None`` = the newest. An unknown version falls back to
    the nearest profile, with a note naming both."""
    newest = profiles[-1]
    if version is None or not version.strip():
        return Resolved(profile=newest, asked=None, note=None)
    try:
        v = parse_version(version)
    except ValueError as exc:
        raise StudioError(f"the engine version {exc}", field="runtime_version") from None
    for p in profiles:
        if p.covers(v):
            return Resolved(profile=p, asked=version, note=None)
    name = ENGINE_NAMES.get(newest.engine, newest.engine)
    if v >= newest.version_until:
        best = newest
        where = "newer than every profile"
    elif v < profiles[0].version_from:
        best = profiles[0]
        where = "older than every profile"
    else:  # in a gap between two profiles: the closer edge
        best = min(profiles, key=lambda p: _gap(p, v))
        where = "between the profiles"
    note = (f"{name} {version} is {where}; using the nearest, '{best.id}' ({best.label}, versions "
            f"{best.versions})")
    return Resolved(profile=best, asked=version, note=note)


def resolve(engine: str, version: str | None = None) -> Resolved:
    """The bundled profile of ``engine`` at ``version`` (see :func:`choose_profile`)."""
    return choose_profile(engine_profiles(engine), version)
