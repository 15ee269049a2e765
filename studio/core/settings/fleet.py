"""The Fleet view's settings, saved with the project: the traffic a day brings, the p99 SLO, the
headroom, and the figures a capacity plan takes besides them (storage bandwidth, start-up, prices,
PUE, grid carbon intensity).

``None`` means "the default of the presets" (``presets/fleet.json``, ``presets/power.json``, the GPU
preset's price), the same defaults ``layout-studio capacity`` uses; a project that never changed the
Fleet view is written without a ``fleet`` object (see :class:`studio.core.project.Project`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from studio.core.base import Frozen

__all__ = ["FleetSettings"]


class FleetSettings(Frozen):
    """What a day's capacity plan of the project is asked for (docs/fleet.md)."""

    traffic: str = Field("business-hours-chat", min_length=1, max_length=200,
                         description="bundled traffic curve id (`presets traffic`)")
    peak_per_s: float | None = Field(50.0, gt=0, le=1e7, description="rescale the curve to this peak, req/s; "
                                     "None = the curve as bundled")
    ttft_p99_ms: float = Field(2000.0, gt=0, le=1e9, description="p99 TTFT target, ms")
    tpot_p99_ms: float = Field(50.0, gt=0, le=1e9, description="p99 TPOT target, ms")
    headroom: float = Field(0.2, ge=0, le=100, description="spare capacity per slot, a fraction")
    storage_gbps: float | None = Field(None, gt=0, le=1e6, description="weight-loading bandwidth, GB/s")
    engine_start_s: float | None = Field(None, ge=0, le=1e6, description="engine start-up, s")
    graph_capture_s: float | None = Field(None, ge=0, le=1e6, description="CUDA-graph capture, s")
    reserved_usd_per_gpu_hour: float | None = Field(None, ge=0, le=1e6)
    on_demand_usd_per_gpu_hour: float | None = Field(None, ge=0, le=1e6)
    spot_usd_per_gpu_hour: float | None = Field(None, ge=0, le=1e6)
    burst: Literal["on-demand", "spot"] = "on-demand"
    spot_preemptions_per_hour: float = Field(0.0, ge=0, le=1e4)
    pue: float | None = Field(None, ge=1, le=10, description="facility power usage effectiveness")
    grid_g_co2e_per_kwh: float | None = Field(None, ge=0, le=1e5, description="grid carbon intensity")
