"""Sanity matrix: plan every bundled GPU × every bundled model over several layouts and workloads,
exactly as ``layout-studio plan --gpu ID --nodes N --model ID ...`` builds them, and check the
invariants every plan must satisfy.

Run from the repository root::

    python tools/sanity_matrix.py            # the full matrix (about 6,000 plans)
    python tools/sanity_matrix.py --quick    # the subset the test suite runs

It prints each violation (the command line that reproduces it and what broke) and exits 1 when
there is any. ``tests/engine/test_sanity_matrix.py`` runs the quick matrix.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import sys
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from studio.cli import build_parser
from studio.commands.options.project_args import project_from_args
from studio.commands.output import json_safe
from studio.core.errors import StudioError
from studio.core.project import Project
from studio.engine import evaluate
from studio.engine.plan.results import PlanResult
from studio.io.presets import Catalog, load_catalog

#: Relative tolerance of the identities checked (they are computed in float64).
REL = 1e-9

#: Workload / serving variants: the default, long prompts, a single user, narrow formats, a tiny
#: request, full memory, very long outputs, a deep micro-batch count.
VARIANTS: tuple[tuple[str, ...], ...] = (
    (),
    ("--isl", "32768", "--osl", "1"),
    ("--batch", "1"),
    ("--kv-dtype", "fp8", "--weight-dtype", "fp4"),
    ("--weight-dtype", "int4", "--batch", "3"),
    ("--micro-batches", "8"),
    ("--isl", "1", "--osl", "1"),
    ("--gpu-memory-utilization", "1.0", "--weight-dtype", "fp8"),
    ("--osl", "100000"),
)


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= REL * max(1.0, abs(a), abs(b))


def layouts_for(catalog: Catalog, gpu_id: str, model_id: str) -> list[tuple[str, ...]]:
    """Layout flags to try: TP over a node × PP over two nodes, one GPU per replica, half-node TP
    with four stages, and for MoE models expert parallelism over the node and over a single GPU's
    replicas."""
    per_node = catalog.template_for_gpu(gpu_id).gpus_per_node
    out = [
        ("--nodes", "2", "--tp", str(per_node), "--pp", "2"),
        ("--nodes", "1", "--tp", "1", "--pp", "1"),
        ("--nodes", "2", "--tp", str(max(1, per_node // 2)), "--pp", "4"),
    ]
    moe = catalog.model(model_id).architecture.moe
    if moe is not None:
        ep = max(e for e in (1, 2, 4, 8, 16, 32, 64, 128, 256) if moe.num_experts % e == 0 and e <= per_node)
        out.append(("--nodes", "1", "--tp", str(per_node), "--pp", "1", "--ep", str(ep)))
        out.append(("--nodes", "1", "--tp", "1", "--pp", "1", "--ep", str(ep)))
    return out


def matrix(catalog: Catalog, quick: bool) -> Iterator[list[str]]:
    """Every command line of the matrix. ``quick``: each GPU × model × layout with one workload
    variant (cycling through :data:`VARIANTS`), so every variant still meets every GPU."""
    k = 0
    for gpu_id in sorted(catalog.gpus):
        for model_id in sorted(catalog.models):
            for lay in layouts_for(catalog, gpu_id, model_id):
                variants = (VARIANTS[k % len(VARIANTS)],) if quick else VARIANTS
                k += 1
                for var in variants:
                    yield ["plan", "--gpu", gpu_id, "--model", model_id, *lay, *var]


def violations(project: Project, plan: PlanResult) -> list[str]:
    """Every invariant ``plan`` breaks (empty when it is sane)."""
    bad: list[str] = []
    wl = project.workload
    seq = wl.isl + wl.osl
    headline = {
        "ttft_ms": plan.ttft_ms, "tpot_ms": plan.tpot_ms, "request_latency_ms": plan.request_latency_ms,
        "output_tokens_per_s": plan.output_tokens_per_s,
        "output_tokens_per_s_per_gpu": plan.output_tokens_per_s_per_gpu,
        "tokens_per_s_per_user": plan.tokens_per_s_per_user, "usd_per_hour": plan.usd_per_hour,
        "kv_bytes_per_token_per_gpu": plan.kv_bytes_per_token_per_gpu,
        "kv_bytes_per_token_model": plan.kv_bytes_per_token_model,
        "allreduce_us_per_layer_prefill": plan.allreduce_us_per_layer_prefill,
        "allreduce_us_per_layer_decode": plan.allreduce_us_per_layer_decode,
        "p2p_us_per_boundary_prefill": plan.p2p_us_per_boundary_prefill,
        "p2p_us_per_boundary_decode": plan.p2p_us_per_boundary_decode,
    }
    if plan.fits:
        headline["usd_per_million_output_tokens"] = plan.usd_per_million_output_tokens
    for name, v in headline.items():
        if not (math.isfinite(v) and v >= 0):
            bad.append(f"{name} = {v} (must be finite and ≥ 0)")
    if not 0 <= plan.bubble_fraction < 1:
        bad.append(f"bubble {plan.bubble_fraction} outside [0, 1)")
    for g in plan.memory:
        terms = {"weights": g.weights, "kv_cache": g.kv_cache, "activations": g.activations,
                 "overhead": g.overhead, "capacity": g.capacity, "usable": g.usable}
        for name, v in terms.items():
            if not (math.isfinite(v) and v >= 0):
                bad.append(f"{g.gpu_id} memory {name} = {v}")
        if g.usable > g.capacity * (1 + REL):
            bad.append(f"{g.gpu_id} usable {g.usable} > capacity {g.capacity}")
        if plan.fits and g.total > g.usable * (1 + 1e-6):
            bad.append(f"fits, but {g.gpu_id} uses {g.total / 2**30:.2f} GiB of {g.usable / 2**30:.2f} GiB usable")
    doc = plan.to_json()  # what `plan --json` prints, made once for both checks below
    mem = doc["memory"]["per_gpu_gib"]
    parts = mem["weights"] + mem["kv_cache"] + mem["activations"] + mem["overhead"]
    if not _close(parts, mem["total"]):
        bad.append(f"memory terms add up to {parts} GiB, total says {mem['total']} GiB")
    if not _close(plan.output_tokens_per_s_per_gpu * plan.gpus, plan.output_tokens_per_s):
        bad.append("throughput per GPU × GPUs ≠ total")
    if plan.fits:
        if plan.ttft_ms <= 0 or plan.tpot_ms <= 0:
            bad.append(f"zero latency: TTFT {plan.ttft_ms}, TPOT {plan.tpot_ms}")
        if plan.ttft_ms > plan.request_latency_ms * (1 + REL):
            bad.append(f"TTFT {plan.ttft_ms} ms > request latency {plan.request_latency_ms} ms")
        if not _close(plan.request_latency_ms, plan.ttft_ms + (wl.osl - 1) * plan.tpot_ms):
            bad.append("request latency ≠ TTFT + (osl − 1) × TPOT")
        if plan.output_tokens_per_s <= 0:
            bad.append("fits, but 0 output tokens/s")
        if plan.kv_capacity_tokens < seq:
            bad.append(f"fits, but the KV cache holds {plan.kv_capacity_tokens} tokens < one sequence of {seq}")
        if not 1 <= plan.batch <= plan.max_concurrent_sequences:
            bad.append(f"batch {plan.batch} outside 1..{plan.max_concurrent_sequences} sequences the KV cache holds")
        if plan.tpot_ms > 0 and not _close(plan.tokens_per_s_per_user, 1000.0 / plan.tpot_ms):
            bad.append("tokens/s per user ≠ 1000 / TPOT")
        ceiling = plan.layout.dp * plan.batch * plan.tokens_per_s_per_user
        if 0 < plan.ttft_ms < plan.tpot_ms:  # a first token faster than a decode step lifts the ceiling
            ceiling = plan.layout.dp * plan.batch * wl.osl * 1e3 / ((wl.osl - 1) * plan.tpot_ms + plan.ttft_ms)
        if plan.output_tokens_per_s > ceiling * (1 + 1e-6):
            bad.append(f"{plan.output_tokens_per_s} tok/s exceeds every user decoding flat out ({ceiling})")
        cost = plan.usd_per_million_output_tokens * plan.output_tokens_per_s * 3600 / 1e6
        if not _close(cost, plan.usd_per_hour):
            bad.append("$ per million tokens × tokens/s ≠ $ per hour")
    for phase, tl in plan.timelines.items():
        if len(tl.duration) and not (all(math.isfinite(d) and d >= 0 for d in tl.duration.tolist())):
            bad.append(f"{phase} timeline has a negative or non-finite segment")
    try:
        json.dumps(json_safe(doc), allow_nan=False)
    except (TypeError, ValueError) as exc:
        bad.append(f"plan --json is not strict JSON: {exc}")
    return bad


@functools.cache
def _plan_parser() -> argparse.ArgumentParser:
    """The CLI's parser with the ``plan`` command, built once: every line of the matrix is a
    ``plan`` line, and parsing leaves the parser as it was (building it cost more than half of
    the matrix's time)."""
    return build_parser(["studio.commands.plan"])


def run(argv: list[str]) -> list[str]:
    """Plan one command line and return its violations. A :class:`StudioError` (a layout the
    model cannot take, e.g. EP not dividing the experts) is a clear refusal, not a violation; any
    other exception is one."""
    parser = _plan_parser()
    try:
        project = project_from_args(parser.parse_args(argv))
        plan = evaluate(project)
    except StudioError:
        return []
    except Exception as exc:  # noqa: BLE001 - a crash is exactly what the matrix looks for
        return [f"crash: {type(exc).__name__}: {exc}"]
    return violations(project, plan)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="one workload variant per GPU × model × layout")
    args = ap.parse_args(argv)
    catalog = load_catalog()
    t0 = time.perf_counter()
    n = failed = 0
    for cmd in matrix(catalog, args.quick):
        n += 1
        for v in run(cmd):
            failed += 1
            print(f"layout-studio {' '.join(cmd)}\n    {v}")
    print(f"{n} plans, {failed} violations, {time.perf_counter() - t0:.1f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
