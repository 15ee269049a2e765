"""Published prefix-caching / KV-offload speed-ups against the engine.

``prefix-cache-points.json`` (this folder) holds one record per published figure: its source, the
set-up (model, GPU, TP, engine version, prompt and output lengths, load), the reuse and KV tiers of
the run with and without caching, and the figure measured each way. Each record is planned twice with
the bundled constants, once per side; the predicted speed-up (without / with for TTFT, with /
without for throughput) is compared with the measured one. Nothing is fitted to these points;
``held_out`` marks the ones no structural choice of the model looked at (docs/calibration.md,
"Prefix caching and KV offload"). ``python benchmarks/prefix_cache_check.py`` prints the table.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.validation.corpus import _cluster
from studio.core.layout import Layout
from studio.core.project import Project
from studio.core.settings.reuse import KVTiers, Reuse
from studio.core.workload import Load, ServingConfig, Workload
from studio.engine import evaluate
from studio.io.presets import load_catalog

HERE = Path(__file__).resolve().parent
POINTS = HERE / "prefix-cache-points.json"
#: The issue's bound on the speed-up's relative error.
TOLERANCE = 0.25


@dataclass(frozen=True)
class PrefixPoint:
    """One published measurement with and without prefix caching / KV offload."""

    id: str
    metric: str  # "ttft_ms" or "throughput"
    measured_without: float
    measured_with: float
    held_out: bool
    record: dict[str, Any]

    @property
    def measured_speedup(self) -> float:
        """Published speed-up: TTFT without / with, throughput with / without."""
        return _speedup(self.metric, self.measured_without, self.measured_with)


@dataclass(frozen=True)
class Comparison:
    """Predicted against measured for one point."""

    point: PrefixPoint
    predicted_without: float
    predicted_with: float
    hit_rate: float

    @property
    def predicted_speedup(self) -> float:
        return _speedup(self.point.metric, self.predicted_without, self.predicted_with)

    @property
    def error(self) -> float:
        """Relative error of the predicted speed-up."""
        return self.predicted_speedup / self.point.measured_speedup - 1.0


def _speedup(metric: str, without: float, with_: float) -> float:
    if metric == "ttft_ms":
        return without / with_
    if metric == "throughput":
        return with_ / without
    raise ValueError(f"prefix-cache-points.json: metric {metric!r} is not 'ttft_ms' or 'throughput'")


def load_points(path: Path | None = None) -> list[PrefixPoint]:
    """Every record of ``prefix-cache-points.json``."""
    recs = json.loads((path or POINTS).read_text(encoding="utf-8"))
    return [
        PrefixPoint(id=r["id"], metric=r["metric"], measured_without=float(r["measured_without"]),
                    measured_with=float(r["measured_with"]), held_out=bool(r.get("held_out")), record=r)
        for r in recs
    ]


def project_for(p: PrefixPoint, side: str) -> Project:
    """The project of ``p``'s run ``side`` ('with' or 'without' caching / offload)."""
    r = p.record
    run = r[side]
    model = load_catalog().model(r["model"]).architecture
    load = Load(**r["load"])
    wl = Workload(isl=int(r["isl"]), osl=int(r["osl"]), batch="auto", max_batch=int(r["max_batch"]), load=load,
                  reuse=Reuse(**run["reuse"]))
    sv = ServingConfig(weight_dtype=r["weight_dtype"], kv_dtype=r["kv_dtype"], runtime=r["runtime"],
                       runtime_version=r.get("runtime_version"),
                       gpu_memory_utilization=float(r["gpu_memory_utilization"]), kv_tiers=KVTiers(**run["kv_tiers"]))
    gpus, tp = int(r["gpus"]), int(r["tp"])
    return Project(cluster=_cluster(r["gpu"], gpus, int(r["gpus_per_node"])), model=model, workload=wl, serving=sv,
                   layout=Layout(tp=tp, pp=1, dp=gpus // tp))


def _figure(p: PrefixPoint, side: str) -> tuple[float, float]:
    res = evaluate(project_for(p, side), details=False)
    value = res.ttft_ms if p.metric == "ttft_ms" else res.output_tokens_per_s
    return value, float((res.prefix_cache or {}).get("hit_rate", 0.0))


def compare(p: PrefixPoint) -> Comparison:
    """Plan ``p`` with and without caching and compare the speed-ups."""
    without, _ = _figure(p, "without")
    with_, hit = _figure(p, "with")
    return Comparison(point=p, predicted_without=without, predicted_with=with_, hit_rate=hit)


def table(points: list[PrefixPoint] | None = None) -> list[Comparison]:
    """One comparison per point."""
    return [compare(p) for p in (points if points is not None else load_points())]


def main() -> int:
    rows = table()
    print(f"{'point':52} {'metric':10} {'hit':>5} {'pred x':>7} {'meas x':>7} {'error':>7}  held out")
    for c in rows:
        p = c.point
        print(f"{p.id:52} {p.metric:10} {c.hit_rate:5.2f} {c.predicted_speedup:7.2f} {p.measured_speedup:7.2f} "
              f"{c.error:+7.1%}  {'yes' if p.held_out else 'no'}")
    for name, sel in (("all", rows), ("held out", [c for c in rows if c.point.held_out])):
        errs = sorted(abs(c.error) for c in sel)
        inside = sum(e <= TOLERANCE for e in errs)
        print(f"{name}: median |error| {errs[len(errs) // 2]:.1%}, max {errs[-1]:.1%}, "
              f"{inside}/{len(errs)} within ±{TOLERANCE:.0%}")
    return 0
