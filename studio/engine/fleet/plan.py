"""The fleet for a day of traffic: replicas per slot, GPU-hours, cost, power, energy and carbon.

Given one replica's highest rate within the SLO (``r``, :mod:`studio.engine.fleet.replica`):

* **needed** in slot ``k`` at rate ``λ_k``: ``max(min_replicas, ⌈λ_k (1 + headroom) / r⌉)``;
* **autoscaler lag**: a new replica serves ``ready_s`` after it is asked for (weights / storage
  bandwidth + engine start-up + CUDA-graph capture), so the replicas of slot ``k`` are those that
  the slots starting within ``ready_s`` after it need too (the day repeats: after 23:00 comes
  00:00) — a peak is covered when it arrives, not ``ready_s`` later; scaling down is immediate;
* **spot burst**: replicas above the reserved base may run on spot capacity; each spot replica is
  lost ``preemptions_per_hour`` times an hour and takes ``ready_s`` to replace, so
  ``⌈burst · preemptions_per_hour · ready_s / 3600⌉`` more replicas keep the SLO through it;
* **cost**: the reserved base (default: the fewest replicas of any slot) all day at the reserved
  price, everything above it at the burst price (on-demand or spot);
* **power**: the requests of a slot are spread over its replicas; each draws the power of
  :func:`studio.engine.fleet.power.power_at_rate` at its share (interpolated on a curve computed
  once); energy × PUE is the facility's, × the grid's carbon intensity its emissions.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from studio.core.errors import StudioError
from studio.engine.fleet.traffic import Traffic, clock

#: The most replicas one slot may need before the plan says no fleet serves that rate.
MAX_REPLICAS = 100_000
DAYS_PER_MONTH = 365.25 / 12.0


@dataclass(frozen=True)
class ReadyTime:
    """How long a new replica takes to serve (seconds), and its parts."""

    weights_gb: float
    storage_gbps: float
    engine_start_s: float
    graph_capture_s: float
    sources: dict[str, str] = field(default_factory=dict)

    @property
    def load_s(self) -> float:
        return self.weights_gb / self.storage_gbps

    @property
    def total_s(self) -> float:
        return self.load_s + self.engine_start_s + self.graph_capture_s


@dataclass(frozen=True)
class Pricing:
    """USD per GPU-hour of the reserved base and of the burst above it."""

    reserved_usd_per_gpu_hour: float
    burst_usd_per_gpu_hour: float
    burst: Literal["on-demand", "spot"] = "on-demand"
    spot_preemptions_per_hour: float = 0.0
    reserved_replicas: int | None = None  # None: the fewest replicas of any slot


@dataclass(frozen=True)
class Facility:
    pue: float
    grid_g_co2e_per_kwh: float


@dataclass(frozen=True)
class FleetPlan:
    """Replicas, cost and energy of each slot of a day, and their totals."""

    traffic: Traffic
    replica_rate_per_s: float
    gpus_per_replica: int
    headroom: float
    ready: ReadyTime
    pricing: Pricing
    facility: Facility
    osl: float
    needed: np.ndarray  # replicas for the slot's own rate
    replicas: np.ndarray  # planned: lag lead and spot spares included
    watts: np.ndarray  # all replicas of the slot
    reserved_replicas: int

    @property
    def gpus(self) -> np.ndarray:
        return self.replicas * self.gpus_per_replica

    @property
    def per_replica_rate(self) -> np.ndarray:
        return self.traffic.rates_per_s / self.replicas

    @property
    def slo_met(self) -> np.ndarray:
        """Each slot's share per replica is within the rate one replica holds the SLO at."""
        return self.per_replica_rate <= self.replica_rate_per_s * (1 + 1e-9)

    @property
    def slot_h(self) -> float:
        return self.traffic.slot_s / 3600.0

    @property
    def gpu_hours_per_day(self) -> float:
        return float(self.gpus.sum() * self.slot_h)

    @property
    def output_tokens_per_day(self) -> float:
        return self.traffic.requests_per_day * self.osl

    @property
    def reserved_usd_per_day(self) -> float:
        return self.reserved_replicas * self.gpus_per_replica * 24.0 * self.pricing.reserved_usd_per_gpu_hour

    @property
    def burst_gpu_hours_per_day(self) -> float:
        return float(np.maximum(self.replicas - self.reserved_replicas, 0).sum() * self.gpus_per_replica * self.slot_h)

    @property
    def burst_usd_per_day(self) -> float:
        return self.burst_gpu_hours_per_day * self.pricing.burst_usd_per_gpu_hour

    @property
    def usd_per_day(self) -> float:
        return self.reserved_usd_per_day + self.burst_usd_per_day

    @property
    def usd_per_million_output_tokens(self) -> float:
        t = self.output_tokens_per_day
        return self.usd_per_day / (t / 1e6) if t > 0 else math.nan

    @property
    def kwh_per_day(self) -> float:
        """GPU energy of the day (kWh), idle replicas included, before the facility's overhead."""
        return float((self.watts * self.traffic.slot_s).sum() / 3.6e6)

    @property
    def facility_kwh_per_day(self) -> float:
        return self.kwh_per_day * self.facility.pue

    @property
    def kg_co2e_per_day(self) -> float:
        return self.facility_kwh_per_day * self.facility.grid_g_co2e_per_kwh / 1e3

    @property
    def j_per_output_token(self) -> float:
        t = self.output_tokens_per_day
        return self.kwh_per_day * 3.6e6 / t if t > 0 else math.nan

    def to_json(self) -> dict[str, Any]:
        """The ``capacity --json`` figures (times as ``HH:MM`` from midnight)."""
        tr = self.traffic
        slots = [
            {
                "start": clock(float(tr.starts_s[k])),
                "rate_per_s": float(tr.rates_per_s[k]),
                "needed": int(self.needed[k]),
                "replicas": int(self.replicas[k]),
                "gpus": int(self.gpus[k]),
                "rate_per_replica_per_s": float(self.per_replica_rate[k]),
                "slo_met": bool(self.slo_met[k]),
                "watts": float(self.watts[k]),
            }
            for k in range(tr.slots)
        ]
        return {
            "traffic": {"name": tr.name, "source": tr.source, "slot_minutes": tr.slot_s / 60.0,
                        "peak_rate_per_s": tr.peak_per_s, "requests_per_day": tr.requests_per_day},
            "slots": slots,
            "fleet": {
                "headroom": self.headroom,
                "peak_replicas": int(self.replicas.max()),
                "peak_gpus": int(self.gpus.max()),
                "gpu_hours_per_day": self.gpu_hours_per_day,
                "ready_s": self.ready.total_s,
                "ready": {"weights_gb": self.ready.weights_gb, "storage_gbps": self.ready.storage_gbps,
                          "load_s": self.ready.load_s, "engine_start_s": self.ready.engine_start_s,
                          "graph_capture_s": self.ready.graph_capture_s},
            },
            "cost": {
                "usd_per_day": self.usd_per_day,
                "usd_per_month": self.usd_per_day * DAYS_PER_MONTH,
                "usd_per_million_output_tokens": self.usd_per_million_output_tokens,
                "reserved_replicas": self.reserved_replicas,
                "reserved_usd_per_day": self.reserved_usd_per_day,
                "burst": self.pricing.burst,
                "burst_gpu_hours_per_day": self.burst_gpu_hours_per_day,
                "burst_usd_per_day": self.burst_usd_per_day,
                "reserved_usd_per_gpu_hour": self.pricing.reserved_usd_per_gpu_hour,
                "burst_usd_per_gpu_hour": self.pricing.burst_usd_per_gpu_hour,
                "spot_preemptions_per_hour": self.pricing.spot_preemptions_per_hour,
            },
            "energy": {
                "kwh_per_day": self.kwh_per_day,
                "facility_kwh_per_day": self.facility_kwh_per_day,
                "j_per_output_token": self.j_per_output_token,
                "kg_co2e_per_day": self.kg_co2e_per_day,
                "peak_kw": float(self.watts.max() / 1e3),
                "pue": self.facility.pue,
                "grid_g_co2e_per_kwh": self.facility.grid_g_co2e_per_kwh,
            },
            "output_tokens_per_day": self.output_tokens_per_day,
        }


def needed_replicas(traffic: Traffic, replica_rate_per_s: float, headroom: float, min_replicas: int = 1) -> np.ndarray:
    """Replicas each slot's own rate needs.

    Raises
    ------
    StudioError
        A slot whose rate needs more than :data:`MAX_REPLICAS` replicas (naming where it was read).
    """
    if not (math.isfinite(headroom) and 0 <= headroom <= 10):
        raise StudioError(f"headroom {headroom} is outside 0 … 10 (a fraction: 0.2 = 20 % spare)", field="headroom")
    if not replica_rate_per_s > 0:
        raise StudioError("one replica sustains no request rate within the SLO")
    raw = traffic.rates_per_s * (1.0 + headroom) / replica_rate_per_s
    top = int(np.argmax(raw))
    if raw[top] > MAX_REPLICAS:
        raise StudioError(
            f"{traffic.origin(top)} (slot {clock(float(traffic.starts_s[top]))}): rate {traffic.rates_per_s[top]:,.6g} "
            f"req/s needs {raw[top]:,.0f} replicas of {replica_rate_per_s:.3g} req/s each; no fleet of at most "
            f"{MAX_REPLICAS:,} replicas serves it — check the rate's unit (requests per second)",
            field="traffic",
        )
    return np.maximum(np.ceil(raw - 1e-9).astype(np.int64), int(min_replicas))


def lead_for_lag(needed: np.ndarray, slot_s: float, ready_s: float) -> np.ndarray:
    """Replicas per slot asked for ``ready_s`` ahead: each slot also holds what the slots starting
    within ``ready_s`` after it need (the day wraps around)."""
    n = needed.size
    ahead = min(n - 1, math.ceil(ready_s / slot_s - 1e-9)) if ready_s > 0 else 0
    out = needed.copy()
    for j in range(1, ahead + 1):
        out = np.maximum(out, np.roll(needed, -j))
    return out


def plan_fleet(
    traffic: Traffic,
    replica_rate_per_s: float,
    gpus_per_replica: int,
    replica_watts: Callable[[np.ndarray], np.ndarray],
    osl: float,
    *,
    headroom: float,
    ready: ReadyTime,
    pricing: Pricing,
    facility: Facility,
    min_replicas: int = 1,
) -> FleetPlan:
    """Replicas, cost and energy for ``traffic``.

    Parameters
    ----------
    replica_watts:
        Watts of one replica (all its GPUs) at an array of per-replica request rates.
    """
    for name, v in (("reserved price", pricing.reserved_usd_per_gpu_hour), ("burst price", pricing.burst_usd_per_gpu_hour),
                    ("spot preemptions per hour", pricing.spot_preemptions_per_hour),
                    ("PUE", facility.pue), ("grid carbon intensity", facility.grid_g_co2e_per_kwh)):
        if not (math.isfinite(v) and v >= 0):
            raise StudioError(f"{name} must be a finite number ≥ 0, not {v}")
    if facility.pue < 1:
        raise StudioError(f"a PUE is at least 1 (the IT load itself), not {facility.pue}", field="pue")
    need = needed_replicas(traffic, replica_rate_per_s, headroom, min_replicas)
    planned = lead_for_lag(need, traffic.slot_s, ready.total_s)
    base = int(planned.min()) if pricing.reserved_replicas is None else int(pricing.reserved_replicas)
    planned = np.maximum(planned, base)
    if pricing.burst == "spot" and pricing.spot_preemptions_per_hour > 0:
        lost = (planned - base) * pricing.spot_preemptions_per_hour * ready.total_s / 3600.0
        planned = planned + np.ceil(lost - 1e-9).astype(np.int64)
    watts = planned * replica_watts(traffic.rates_per_s / planned)
    return FleetPlan(traffic=traffic, replica_rate_per_s=replica_rate_per_s, gpus_per_replica=gpus_per_replica,
                     headroom=headroom, ready=ready, pricing=pricing, facility=facility, osl=osl,
                     needed=need, replicas=planned, watts=np.asarray(watts, dtype=float), reserved_replicas=base)
