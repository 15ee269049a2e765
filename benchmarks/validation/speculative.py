"""Published speculative-decoding results against the engine: ``python -m benchmarks.validation.speculative``.

``speculative-points.json`` (this folder) holds one record per published figure with its source;
each is costed with the bundled constants and the published acceptance defaults of
``presets/speculative.json`` (nothing is fitted to these points). The table prints the prediction,
the measurement and the error; docs/calibration.md ("Speculative decoding") reports it.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.validation.corpus import _cluster
from studio.core.layout import Layout
from studio.core.project import Project
from studio.core.workload import Load, ServingConfig, SpeculativeConfig, Workload
from studio.engine import evaluate
from studio.io.presets import load_catalog

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class SpecPoint:
    """One published measurement, with or without speculative decoding."""

    id: str
    metric: str
    measured: float
    record: dict[str, Any]


def load_points(path: Path | None = None) -> list[SpecPoint]:
    """Every record of ``speculative-points.json``."""
    recs = json.loads((path or HERE / "speculative-points.json").read_text(encoding="utf-8"))
    return [
        SpecPoint(id=r["id"], metric=r["metric"], measured=float(r["measured"]), record=r)
        for r in recs
    ]


def project_for(p: SpecPoint) -> Project:
    """The project a point describes (bundled presets; its layout, lengths, load and drafter)."""
    r = p.record
    model = load_catalog().model(r["model"]).architecture
    spec = SpeculativeConfig(**r["speculative"]) if r.get("speculative") else None
    wl = Workload(
        isl=int(r["isl"]),
        osl=int(r["osl"]),
        batch=int(r["concurrency"]),
        max_batch=int(r["concurrency"]),
        load=Load(mode="concurrency", concurrency=int(r["concurrency"])),
    )
    sv = ServingConfig(
        weight_dtype=r["weight_dtype"],
        kv_dtype=r["kv_dtype"],
        runtime="trtllm"
        if r["framework"] == "trtllm"
        else "sglang"
        if r["framework"] == "sglang"
        else "vllm",
        speculative=spec,
    )
    gpus = int(r["gpus"])
    ep = int(r.get("ep") or 1) if model.moe is not None else 1
    return Project(
        cluster=_cluster(r["gpu"], gpus, 8),
        model=model,
        workload=wl,
        serving=sv,
        layout=Layout(tp=int(r["tp"]), pp=1, dp=gpus // int(r["tp"]), ep=ep),
    )


def predict(p: SpecPoint) -> float:
    """The engine's figure for ``p``'s metric (output tok/s over the point's users)."""
    res = evaluate(project_for(p))
    if p.metric == "output_tokens_per_s":
        return res.output_tokens_per_s
    if p.metric == "tpot_ms":
        return res.tpot_ms
    raise ValueError(f"unknown metric {p.metric}")


def table(points: list[SpecPoint] | None = None) -> list[tuple[str, float, float, float]]:
    """(id, predicted, measured, relative error) per point."""
    out = []
    for p in points or load_points():
        pred = predict(p)
        out.append((p.id, pred, p.measured, pred / p.measured - 1.0))
    return out


def speedups(points: list[SpecPoint] | None = None) -> list[tuple[str, float, float, float]]:
    """(id, predicted speedup, measured speedup, relative error) of every point that names a
    same-source ``baseline`` without speculation: the drafter's share of the error, apart from the
    base engine's."""
    pts = points or load_points()
    by_id = {p.id: p for p in pts}
    out = []
    for p in pts:
        base = by_id.get(p.record.get("baseline") or "")
        if base is None:
            continue
        pred = predict(p) / predict(base)
        meas = p.measured / base.measured
        out.append((p.id, pred, meas, pred / meas - 1.0))
    return out


def main() -> int:
    rows = table()
    print(f"{'point':45} {'predicted':>10} {'measured':>10} {'error':>8}")
    for pid, pred, meas, err in rows:
        print(f"{pid:45} {pred:10.1f} {meas:10.1f} {err:+8.1%}")
    errs = sorted(abs(r[3]) for r in rows)
    print(f"median |error| {errs[len(errs) // 2]:.1%} over {len(rows)} points")
    print(
        f"\n{'speedup over the same-source baseline':45} {'predicted':>10} {'measured':>10} {'error':>8}"
    )
    for pid, pred, meas, err in speedups():
        print(f"{pid:45} {pred:10.2f} {meas:10.2f} {err:+8.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
