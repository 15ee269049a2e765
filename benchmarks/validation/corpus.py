"""The validation corpus: public serving measurements turned into projects the engine can cost.

``calibration-points.json`` (this folder) holds one record per published figure, each with its
source (see docs/calibration.md for the list). :func:`load_points` reads it; :func:`project_for`
builds the project a point describes (bundled GPU, node template and model presets; the layout,
precisions, lengths, engine settings and load the point names); :func:`predict` costs it and returns
the figure the point measured, under the same definition.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from studio.core.building.builders import build_cluster
from studio.core.layout import Layout
from studio.core.precision import DType
from studio.core.project import Project
from studio.core.workload import Load, ServingConfig, SpeculativeConfig, Workload
from studio.engine import evaluate
from studio.engine.plan.results import PlanResult
from studio.engine.serving.trtllm_bench import bench_limits
from studio.engine.serving.under_load import simulate_plan
from studio.engine.step.constants import Constants
from studio.io.presets import load_catalog

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True, eq=False)
class Point:
    """One published measurement."""

    id: str
    group: str  # the source group (one publication / version), for leave-one-source-out
    gpu: str
    model: str
    precision: str
    metric: str
    measured: float
    record: dict[str, Any]

    @property
    def engine(self) -> str:
        """The serving engine the source ran: vllm, sglang or trtllm."""
        return engine_of(self.record["framework"])

    @property
    def engine_version(self) -> str | None:
        """The engine version the source names (``trtllm-1.0`` → ``1.0``), None when it names none."""
        return engine_version_of(self.record["framework"])


def engine_of(framework: str) -> str:
    """``vllm``, ``sglang`` or ``trtllm`` from a record's ``framework`` (Triton and NIM run TensorRT-LLM)."""
    if framework.startswith("vllm"):
        return "vllm"
    if framework.startswith("sglang"):
        return "sglang"
    return "trtllm"


def engine_version_of(framework: str) -> str | None:
    """The version in a record's ``framework`` (``vllm-0.6 (ROCm 6.2)`` → ``0.6``), else None."""
    m = re.match(r"^[a-z-]+?-(\d+(?:\.\d+)*)", framework)
    return m.group(1) if m else None


def _group(rec: dict[str, Any]) -> str:
    """The publication a record comes from (one group per source and engine version)."""
    fw = rec["framework"]
    if fw.startswith("trtllm-0.14"):
        return "trtllm-0.14-online"
    if rec["id"].startswith("azure-"):
        return "azure-guide"
    if rec["id"].startswith("amd-"):
        return "amd-405b-reference"
    if rec.get("group"):  # the single-user runs of speculative-points.json
        return str(rec["group"])
    if fw in ("trtllm-0.19", "trtllm-0.20"):
        return "trtllm-0.19/0.20"  # the two web perf-overview tables (B200 FP4), 9 points together
    return fw


def _batch_one(rec: dict[str, Any]) -> dict[str, Any]:
    """A record of ``speculative-points.json`` (one user, with or without a drafter) in the corpus's
    own form, so the fit sees single-sequence decoding of dense and MoE models."""
    out = dict(rec)
    group = "sglang-docs-batch1" if rec["framework"] == "sglang" else "trtllm-deepseek-blog-batch1"
    out.setdefault("tier", "A")  # vendor / maintainer documentation (SGLang docs, NVIDIA's blog)
    out.update(group=group, pp=1, dp=1, gpus_per_node=8, concurrency_or_qps=int(rec["concurrency"]), batch=1,
               extra={"num_requests": 16, "max_batch": int(rec["concurrency"])})
    return out


def load_points(path: Path | None = None) -> list[Point]:
    """Every record of the corpus as a :class:`Point` (with the single-user runs of
    ``speculative-points.json`` when the default corpus is read)."""
    recs = json.loads((path or HERE / "calibration-points.json").read_text(encoding="utf-8"))
    if path is None:
        recs += [_batch_one(r) for r in json.loads((HERE / "speculative-points.json").read_text(encoding="utf-8"))]
    return [
        Point(id=r["id"], group=_group(r), gpu=r["gpu"], model=r["model"], precision=r["weight_dtype"],
              metric=r["metric"], measured=float(r["measured"]), record=r)
        for r in recs
    ]


@lru_cache(maxsize=64)
def _cluster(gpu: str, gpus: int, per_node: int):
    cat = load_catalog()
    t = cat.template_for_gpu(gpu)
    if t.trays > 1:  # a rack template: as many trays as the point needs, in one NVLink domain
        trays = max(1, math.ceil(gpus / t.gpus_per_node))
        t = t.replace(trays=trays, gpus_per_node=min(t.gpus_per_node, gpus))
        return build_cluster(t, 1, cat.gpu(gpu), cat.links)
    nodes = max(1, math.ceil(gpus / per_node))
    if per_node != t.gpus_per_node or gpus < per_node:
        t = t.replace(gpus_per_node=min(per_node, gpus))
    return build_cluster(t, nodes, cat.gpu(gpu), cat.links)


#: TensorRT-LLM's ``trtllm-build --max_batch_size`` default (256), which the Triton online runs of
#: v0.14 served with; trtllm-bench (offline rows) sizes its own batch, up to 2048 sequences here.
TRITON_MAX_BATCH = 256
OFFLINE_MAX_BATCH = 2048


def _trtllm_bench(rec: dict[str, Any]) -> bool:
    """Whether a record was measured with ``trtllm-bench`` (TensorRT-LLM's perf-overview tables, and
    the Azure guide's NVIDIA harness)."""
    return rec["framework"] in ("trtllm-0.17", "trtllm-0.19", "trtllm-0.20", "trtllm-1.0") or bool(
        (rec.get("extra") or {}).get("engine_built_for"))


@lru_cache(maxsize=1024)
def project_for(p: Point) -> tuple[Project, Layout]:
    """The project and layout a point describes."""
    r = p.record
    fw = r["framework"]
    cat = load_catalog()
    cluster = _cluster(r["gpu"], int(r["gpus"]), int(r.get("gpus_per_node") or 8))
    extra = r.get("extra") or {}
    n_req = int(extra.get("num_requests", 1000))
    q = r.get("concurrency_or_qps")
    if isinstance(q, str) and q.upper().startswith("QPS"):
        rate = q.split()[1]
        # the rate the server saw: the load generator of these runs falls behind the offered QPS
        # near saturation (e.g. 32 offered, 26 achieved), holding requests back on the client
        seen = extra.get("achieved_req_per_s")
        load = (Load(mode="offline", num_requests=n_req) if rate.upper() == "INF"
                else Load(mode="rate", rate_per_s=float(seen or rate), num_requests=n_req))
    elif q is None:
        load = Load(mode="offline", num_requests=n_req)
    else:
        load = Load(mode="concurrency", concurrency=int(q), num_requests=n_req)
    model = cat.model(r["model"]).architecture
    adp = bool(extra.get("enable_attention_dp")) and model.moe is not None
    max_batch = TRITON_MAX_BATCH if p.group == "trtllm-0.14-online" else OFFLINE_MAX_BATCH
    budget = extra.get("max_num_batched_tokens")
    if _trtllm_bench(r) and load.mode == "offline":
        # trtllm-bench sizes max_batch_size per dataset (studio.engine.serving.trtllm_bench): the nominal
        # TP of the run, before attention-DP is mapped below
        sv_dtype = DType(r["weight_dtype"])
        kv = DType(r["kv_dtype"]) if r["kv_dtype"] in ("fp8", "bf16", "fp16") else DType.FP8
        # the dataset the engine was sized for: the point's own, unless one engine built for another
        # dataset ran every length (``engine_built_for``, the Azure guide's harness)
        b_isl, b_osl = extra.get("engine_built_for") or (int(r["isl"]), int(r["osl"]))
        lim = bench_limits(model, sv_dtype, kv, int(r["tp"]), int(r["pp"]), int(b_isl), int(b_osl),
                           cluster.gpu_specs[next(iter(cluster.gpu_specs))].memory_bytes / 2**30,
                           float(extra.get("build_kv_fraction", extra.get("kv_cache_free_gpu_mem_fraction", 0.95))))
        max_batch = lim.max_batch * int(r["pp"])  # per micro-batch in flight, one per stage
        if extra.get("engine_built_for"):
            budget = lim.max_num_tokens
    max_batch = int(extra.get("max_batch", max_batch))
    if adp:  # the engine's batch limit is shared by the attention-DP ranks
        max_batch = max(1, max_batch // int(r["tp"]))
    wl = Workload(isl=int(r["isl"]), osl=int(r["osl"]), max_batch=max_batch, load=load)
    sv = ServingConfig(
        weight_dtype=r["weight_dtype"], kv_dtype=r["kv_dtype"] if r["kv_dtype"] in ("fp8", "bf16", "fp16") else "fp8",
        gpu_memory_utilization=float(extra.get("kv_cache_free_gpu_mem_fraction", extra.get("gpu_memory_utilization", 0.9))),
        runtime=engine_of(fw), runtime_version=engine_version_of(fw),
        max_num_batched_tokens=budget,
        speculative=SpeculativeConfig(**r["speculative"]) if r.get("speculative") else None,
    )
    proj = Project(cluster=cluster, model=model, workload=wl, serving=sv,
                   layout=Layout(tp=int(r["tp"]), pp=int(r["pp"])))
    ep = int(r.get("ep") or 1) if model.moe is not None else 1
    tp, dp = int(r["tp"]), int(r.get("dp") or 1)
    if adp:
        # TensorRT-LLM attention data parallelism: each rank of the "TP" group runs attention for its
        # own requests (replicated attention weights, its own KV cache); the experts are EP-sharded
        # across them. In Layout terms: TP 1, DP = tp, EP = ep.
        tp, dp = 1, tp * dp
    lay = Layout(tp=tp, pp=int(r["pp"]), ep=ep, dp=dp, micro_batches=int(r["pp"]))
    return proj, lay


def predict(p: Point, constants: Constants | None = None) -> float:
    """The engine's figure for ``p``'s metric, under the definition the source used.

    An offline throughput point is only simulated: the plan :func:`predict_with_plan` evaluates
    beside it takes no part in the figure (it cost a calibration fit, and the suite, an evaluation
    of 223 of the 277 points on every pass)."""
    proj, lay = project_for(p)
    if _simulated(proj, p):
        return simulate_plan(proj, lay, constants=constants).output_tokens_per_s
    return predict_with_plan(p, constants)[0]


def _simulated(proj: Project, p: Point) -> bool:
    """Whether ``p``'s figure is read from the request simulation alone (an offline run's
    throughput: its output tokens over the whole run, ramp-up and drain included)."""
    return proj.workload.load.mode == "offline" and p.metric == "output_tokens_per_s"


def predict_with_plan(p: Point, constants: Constants | None = None) -> tuple[float, PlanResult]:
    """:func:`predict`'s figure and the plan it was read from (``evaluate`` of :func:`project_for`'s
    project and layout), for a caller that also checks the plan (whether it fits) without costing
    the point a second time."""
    proj, lay = project_for(p)
    if _simulated(proj, p):
        # an offline run's throughput is its output tokens over the whole run, ramp-up and drain
        # included (trtllm-bench "Total Output Throughput", vLLM benchmark_throughput): a finite
        # number of requests, often few batches' worth (1,500 requests over 8 attention-DP ranks of
        # 320 is one partial wave), so the run is simulated rather than read at steady state
        figure = simulate_plan(proj, lay, constants=constants).output_tokens_per_s
        return figure, evaluate(proj, lay, constants=constants)
    res = evaluate(proj, lay, constants=constants)
    if res.load is not None and res.load.saturated:
        # above saturation there is no steady state: the source ran a finite number of requests,
        # so predict what that run reports (the queue grows over it)
        sim = simulate_plan(proj, lay, constants=constants)
        return {"output_tokens_per_s": sim.output_tokens_per_s, "tpot_ms": sim.tpot.mean,
                "ttft_ms": sim.ttft.mean}[p.metric], res
    if p.metric == "output_tokens_per_s":
        return res.output_tokens_per_s, res
    if p.metric == "tpot_ms":
        return res.tpot_ms, res
    if p.metric == "ttft_ms":
        return res.ttft_ms, res
    raise ValueError(f"unknown metric {p.metric}")
