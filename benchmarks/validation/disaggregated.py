"""Published disaggregated prefill/decode results against Layout Studio's disaggregated model.

``disaggregated-points.json`` (this folder) holds each result with its source; this script builds the
project each describes (bundled presets, or the Hub config the point names), costs the pools with
:func:`studio.engine.disagg.evaluate.evaluate_disaggregated` (or searches with ``sweep --disagg`` for a
point that quotes a search) and prints the engine's figure next to the published one::

    PYTHONPATH=. python benchmarks/validation/disaggregated.py
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# this checkout's code, not an installed copy (`pip install .` leaves one in site-packages)
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from studio.core.building.builders import build_cluster
from studio.core.layout import Layout
from studio.core.project import Project
from studio.core.serving_mode import parse_pools
from studio.core.workload import Load, ServingConfig, Workload
from studio.engine import evaluate
from studio.engine.disagg.evaluate import evaluate_disaggregated
from studio.io.presets import load_catalog

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


@dataclass(frozen=True)
class Row:
    """One compared figure."""

    point: str
    figure: str
    published: float
    engine: float

    @property
    def error(self) -> float:
        """Relative error of the engine against the published figure."""
        return self.engine / self.published - 1.0


def load_disagg_points(path: Path | None = None) -> list[dict[str, Any]]:
    """The records of ``disaggregated-points.json``."""
    return json.loads((path or HERE / "disaggregated-points.json").read_text(encoding="utf-8"))[
        "points"
    ]


def base_project(rec: dict[str, Any], gpus: int | None = None) -> Project:
    """The project a record describes (its model, GPUs, precisions and lengths)."""
    cat = load_catalog()
    if "model_config" in rec:
        from studio.io.importers.hf_config import load_model_config

        model = load_model_config(str(ROOT / rec["model_config"]))
    else:
        model = cat.model(rec["model"]).architecture
    template = cat.template_for_gpu(rec["gpu"])
    if gpus is not None and gpus < template.gpus_per_node:
        template = template.replace(gpus_per_node=gpus)
        nodes = 1
    else:
        nodes = int(rec["nodes"])
    cluster = build_cluster(template, nodes, cat.gpu(rec["gpu"]), cat.links)
    sv = ServingConfig(weight_dtype=rec["weight_dtype"], kv_dtype=rec["kv_dtype"])
    wl = Workload(isl=int(rec["isl"]), osl=int(rec["osl"]))
    return Project(cluster=cluster, model=model, workload=wl, serving=sv)


def _mode(rec: dict[str, Any], project: Project):
    """The serving mode of a record, with the placement the source used."""
    d = rec["disagg"]
    mode = parse_pools(d["spec"])
    if d.get("placement") != "replica-per-node":
        return mode
    # one replica of (prefill workers + decode workers) per node, as aiconfigurator deploys them
    nodes = project.cluster.nodes
    pre, dec = mode.prefill, mode.decode
    per_p, per_d = pre.workers // len(nodes), dec.workers // len(nodes)
    ppl: list[str] = []
    dpl: list[str] = []
    for n in nodes:
        ids = [g.id for g in sorted(n.gpus, key=lambda g: g.slot)]
        ppl += ids[: per_p * pre.gpus_per_worker]
        dpl += ids[
            per_p * pre.gpus_per_worker : per_p * pre.gpus_per_worker + per_d * dec.gpus_per_worker
        ]
    return mode.replace(
        prefill=pre.replace(placement=tuple(ppl)), decode=dec.replace(placement=tuple(dpl))
    )


def predict_point(rec: dict[str, Any]) -> list[Row]:
    """The engine's figures next to a record's published ones."""
    rows: list[Row] = []
    pid = rec["id"]
    if "slo" in rec:  # a search: the best disaggregated and aggregated rows meeting the targets
        from studio.engine import sweep
        from studio.engine.disagg.sweep import sweep_disaggregated

        p = base_project(rec)
        slo = rec["slo"]
        p = p.replace(workload=p.workload.replace(ttft_ms=slo["ttft_ms"], tpot_ms=slo["tpot_ms"]))
        dis = sweep_disaggregated(p)
        agg = sweep(p, objective="throughput", ttft_ms=slo["ttft_ms"], tpot_ms=slo["tpot_ms"])
        best = dis.best.tokens_per_s_per_gpu if dis.best else 0.0
        rows.append(
            Row(pid, "disaggregated tok/s/GPU", rec["measured"]["tokens_per_s_per_gpu"], best)
        )
        if agg.recommended is not None and best:
            a = float(agg.columns["tokens_per_s_per_gpu"][int(agg.recommended)])
            rows.append(
                Row(pid, "disaggregated / aggregated", rec["ratio_disagg_over_agg"], best / a)
            )
        return rows
    p = base_project(rec)
    d = rec["disagg"]
    p = p.replace(
        workload=p.workload.replace(
            load=Load(mode="concurrency", concurrency=int(d["concurrency"]))
        )
    )
    res = evaluate_disaggregated(p, _mode(rec, p))
    m = rec["measured"]
    got = {
        "tokens_per_s_per_gpu": res.output_tokens_per_s_per_gpu,
        "tokens_per_s_per_user": res.tokens_per_s_per_user,
        "ttft_ms": res.ttft_ms,
        "tpot_ms": res.tpot_ms,
    }
    rows += [Row(pid, f"disaggregated {k}", float(v), float(got[k])) for k, v in m.items()]
    a = rec.get("aggregated")
    if a:
        ap = base_project(rec, gpus=int(a["gpus"]))
        ap = ap.replace(
            workload=ap.workload.replace(
                load=Load(mode="concurrency", concurrency=int(a["concurrency"]))
            )
        )
        lay = Layout(tp=int(a["tp"]), dp=int(a["gpus"]) // int(a["tp"]))
        plan = evaluate(ap, lay)
        agot = {
            "tokens_per_s_per_gpu": plan.output_tokens_per_s_per_gpu,
            "tokens_per_s_per_user": plan.tokens_per_s_per_user,
            "ttft_ms": plan.ttft_ms,
            "tpot_ms": plan.tpot_ms,
        }
        rows += [
            Row(pid, f"aggregated {k}", float(v), float(agot[k])) for k, v in a["measured"].items()
        ]
        ratio = a["measured"]["tokens_per_s_per_gpu"]
        rows.append(
            Row(
                pid,
                "disaggregated / aggregated",
                m["tokens_per_s_per_gpu"] / ratio,
                res.output_tokens_per_s_per_gpu / plan.output_tokens_per_s_per_gpu,
            )
        )
    return rows


def main() -> int:
    rows: list[Row] = []
    for rec in load_disagg_points():
        rows += predict_point(rec)
    width = max(len(r.point) for r in rows)
    print(f"{'point':<{width}}  {'figure':<38} {'published':>10} {'engine':>10} {'error':>8}")
    for r in rows:
        print(
            f"{r.point:<{width}}  {r.figure:<38} {r.published:>10.4g} {r.engine:>10.4g} {r.error:>+8.1%}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
