"""The fleet planner's bundled data: traffic curves (``presets/traffic/*.json``), the power model's
parameters (``presets/power.json``) and replica start-up figures (``presets/fleet.json``), and
traffic files given by the user (CSV or the presets' JSON form)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from studio.core.errors import StudioError, nearest
from studio.engine.fleet.power import PowerParams
from studio.engine.fleet.traffic import Traffic, from_rates, parse_csv
from studio.io.presets import presets_root, read_json

#: Largest traffic file read (a day of per-second timestamps at ~100 req/s is ~100 MB; more is refused).
MAX_FILE_BYTES = 200 * 1024 * 1024


@dataclass(frozen=True)
class TrafficPreset:
    id: str
    name: str
    description: str
    source: str
    traffic: Traffic


def _preset_from(data: Any, where: str) -> TrafficPreset:
    if not isinstance(data, dict):
        raise StudioError("expected a JSON object with 'rates_per_s'", where, field="traffic")
    rates = data.get("rates_per_s")
    if not isinstance(rates, list):
        raise StudioError("field 'rates_per_s': expected a list of request rates (one per slot)", where, field="traffic")
    name = str(data.get("name") or data.get("id") or Path(where).stem)
    tr = from_rates(name, rates, str(data.get("source", where)), where=f"{where}: rates_per_s")
    slot = data.get("slot_minutes")
    if slot is not None and (not isinstance(slot, int | float) or slot * tr.slots != 1440):
        raise StudioError(f"field 'slot_minutes': {slot!r} × {tr.slots} rates is not one day (1,440 minutes)", where,
                          field="traffic")
    return TrafficPreset(str(data.get("id", Path(where).stem)), name, str(data.get("description", "")),
                         str(data.get("source", "")), tr)


def traffic_presets() -> dict[str, TrafficPreset]:
    """The bundled traffic curves by id."""
    root = presets_root().joinpath("traffic")
    out: dict[str, TrafficPreset] = {}
    for node in sorted(root.iterdir(), key=lambda n: n.name):
        if node.name.endswith(".json"):
            p = _preset_from(read_json(node, f"presets/traffic/{node.name}"), f"presets/traffic/{node.name}")
            out[p.id] = p
    return out


def load_traffic(spec: str, slot_minutes: int | None = None) -> Traffic:
    """A bundled curve by id, or a traffic file (``.csv``/``.txt`` CSV, ``.json`` as the presets).

    Raises
    ------
    StudioError
        Unknown id (with the nearest ids), unreadable or bad file (naming line and field).
    """
    presets = traffic_presets()
    if spec in presets:
        tr = presets[spec].traffic
        if slot_minutes is not None and slot_minutes != tr.slot_s / 60:
            raise StudioError(f"preset '{spec}' has {tr.slot_s / 60:g}-minute slots; a slot length applies to CSV "
                              "files only", field="slot_minutes")
        return tr
    path = Path(spec)
    if not path.exists():
        near = nearest(spec, list(presets))
        hint = f" (did you mean {', '.join(near)}?)" if near else ""
        raise StudioError(f"'{spec}' is neither a traffic preset ({', '.join(presets)}){hint} nor a file",
                          field="traffic")
    if path.is_dir():
        raise StudioError("is a folder, not a traffic file", spec, field="traffic")
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise StudioError(f"larger than {MAX_FILE_BYTES // 2**20} MiB", spec, field="traffic")
        raw = path.read_bytes()
    except OSError as exc:
        raise StudioError(f"cannot read: {exc.strerror or exc}", spec, field="traffic") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise StudioError(f"not UTF-8 text (byte {exc.start})", spec, field="traffic") from None
    if path.suffix.lower() == ".json":
        if not text.strip():
            raise StudioError("the file is empty; expected a JSON object with 'rates_per_s'", spec, field="traffic")
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise StudioError(f"line {exc.lineno}: not valid JSON ({exc.msg})", spec, field="traffic") from None
        return _preset_from(data, spec).traffic
    return parse_csv(text, spec, slot_minutes)


def _numbers(data: Any, where: str, names: tuple[str, ...]) -> dict[str, float]:
    out = {}
    for n in names:
        v = data.get(n) if isinstance(data, dict) else None
        if not isinstance(v, int | float) or isinstance(v, bool):
            raise StudioError(f"field '{n}': expected a number", where, field=n)
        out[n] = float(v)
    return out


def power_params() -> tuple[PowerParams, dict[str, float]]:
    """The power model's parameters and the facility defaults (``pue``, ``grid_g_co2e_per_kwh``)."""
    where = "presets/power.json"
    data = read_json(presets_root().joinpath("power.json"), where)
    v = _numbers(data, where, ("idle_fraction", "compute_activity", "memory_activity", "comm_activity", "pue",
                               "grid_g_co2e_per_kwh"))
    sources = {str(k): str(s) for k, s in (data.get("sources") or {}).items()}
    params = PowerParams(v["idle_fraction"], v["compute_activity"], v["memory_activity"], v["comm_activity"], sources)
    return params, {"pue": v["pue"], "grid_g_co2e_per_kwh": v["grid_g_co2e_per_kwh"]}


def startup_defaults() -> tuple[dict[str, float], dict[str, str]]:
    """Storage bandwidth (GB/s), engine start-up and CUDA-graph capture (s), with their sources."""
    where = "presets/fleet.json"
    data = read_json(presets_root().joinpath("fleet.json"), where)
    v = _numbers(data, where, ("storage_gbps", "engine_start_s", "graph_capture_s"))
    return v, {str(k): str(s) for k, s in (data.get("sources") or {}).items()}
