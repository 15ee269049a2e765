"""What the explorer shows about a sweep, computed without Qt: columns, factorizations, frontiers,
pinned-layout comparisons and "why does this layout lose to the recommended one"."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from studio.core.layout import Layout
from studio.core.units import GIB
from studio.engine.plan.results import PlanResult
from studio.engine.search.placement import topology_for, tp_bottleneck
from studio.engine.search.sweep import SweepResult


@dataclass(frozen=True)
class Column:
    """A table column: sweep column key, header, number format and hover help."""

    key: str
    header: str
    fmt: str
    help: str


#: Table columns in display order (``key`` indexes :attr:`SweepResult.columns`, except
#: ``reason`` = the unfit reason).
COLUMNS: tuple[Column, ...] = (
    Column("tp", "TP", "d", "tensor-parallel size"),
    Column("pp", "PP", "d", "pipeline stages"),
    Column("ep", "EP", "d", "expert-parallel size (MoE)"),
    Column("dp", "DP", "d", "data-parallel replicas"),
    Column("cp", "CP", "d", "context-parallel size: KV cache split along the sequence (the layout label says "
           "DCP = inside the TP group, PCP = ring attention over replicas)"),
    Column("idle_gpus", "Idle", "d", "GPUs the layout leaves idle: it runs on whole TP groups of each server "
           "(idle GPUs count in tok/s/GPU and $/M tok: they are drawn)"),
    Column("micro_batches", "M", "d", "pipeline micro-batches"),
    Column("batch", "Batch", "d", "concurrent sequences per replica"),
    Column("fits", "Fits", "b", "weights + KV cache of the batch fit the usable memory"),
    Column("mem_peak_gib", "GiB/GPU", ".1f", "peak memory of the most loaded GPU, GiB"),
    Column("kv_capacity_tokens", "KV tokens", ",d", "tokens the KV cache of one replica holds"),
    Column("ttft_ms", "TTFT ms", ",.0f", "time to first token of a full batch, ms"),
    Column("tpot_ms", "TPOT ms", ",.1f", "time per output token, ms"),
    Column("tokens_per_s", "tok/s", ",.0f", "output tokens per second, all replicas"),
    Column("tokens_per_s_per_gpu", "tok/s/GPU", ",.1f", "output tokens per second per GPU"),
    Column("tokens_per_s_per_user", "tok/s/user", ",.1f", "output tokens per second one user sees"),
    Column("usd_per_million", "$/M tok", ",.2f", "dollars per million output tokens"),
    Column("bubble", "Bubble", ".0%", "pipeline bubble: idle share of the step"),
    Column("warnings_count", "Warn", "d", "rules that would warn about this layout"),
    Column("slo", "SLO", "s", "the percentile SLO at its request rate: pass, fail (and why) or — (not checked)"),
    Column("slo_ttft_p99_ms", "p99 TTFT", ",.0f", "simulated p99 TTFT at the SLO's request rate, ms"),
    Column("slo_tpot_p99_ms", "p99 TPOT", ",.1f", "simulated p99 TPOT at the SLO's request rate, ms"),
    Column("slo_saturation_rate_per_s", "sat. req/s", ",.3g",
           "saturation rate of the layout (req/s, all replicas): above it the queue grows without bound"),
    Column("reason", "Why not", "s", "why the layout does not fit; a disaggregated candidate: why it costs what it does"),
    Column("meets_targets", "Targets", "b", "fits and meets the TTFT / TPOT targets"),
    Column("layout", "Layout", "s", "the layout; a disaggregated candidate: its prefill and decode pools, "
           "e.g. 2P(TP4)+1D(TP8)"),
)

#: Columns filled from the SLO check (:mod:`studio.service.slo`), hidden without an SLO.
SLO_KEYS = ("slo", "slo_ttft_p99_ms", "slo_tpot_p99_ms", "slo_saturation_rate_per_s")

#: Plot modes: key -> (title, x column, y column, x higher-is-better, y higher-is-better).
PLOT_MODES: dict[str, tuple[str, str, str, bool, bool]] = {
    "gpu_vs_user": ("tok/s per GPU vs tok/s per user", "tokens_per_s_per_user", "tokens_per_s_per_gpu", True, True),
    "ttft_vs_tput": ("TTFT vs throughput", "ttft_ms", "tokens_per_s", False, True),
    "cost_vs_latency": ("$/M tokens vs latency (TPOT)", "tpot_ms", "usd_per_million", False, False),
}
AXIS_LABELS = {
    "tokens_per_s_per_user": "tokens/s per user",
    "tokens_per_s_per_gpu": "tokens/s per GPU",
    "ttft_ms": "TTFT (ms)",
    "tokens_per_s": "tokens/s (all GPUs)",
    "tpot_ms": "TPOT (ms)",
    "usd_per_million": "$ per million output tokens",
}


def format_value(col: Column, value: object) -> str:
    """Display text of one cell."""
    if col.fmt == "s":
        return str(value)
    if col.fmt == "b":
        return "yes" if bool(value) else "no"
    v = float(value)  # type: ignore[arg-type]
    if not np.isfinite(v):
        return "—"
    if col.fmt in ("d", ",d"):
        return format(int(v), col.fmt)
    return format(v, col.fmt)


def row_label(result: SweepResult, i: int) -> str:
    """``TP8×PP2`` (+ DP/EP when > 1)."""
    return row_layout(result, i).label


def row_layout(result: SweepResult, i: int) -> Layout:
    """The layout of row ``i`` with its micro-batches (placement: cluster order)."""
    return result.layout(i)


def best_rows(result: SweepResult) -> dict[tuple[int, ...], int]:
    """Best row (first in :attr:`SweepResult.order`) of each (TP, PP, DP, EP) without context
    parallelism, and of each (TP, PP, DP, EP, CP, prefill) with it."""
    c = result.columns
    out: dict[tuple[int, ...], int] = {}
    for i in result.order:
        key: tuple[int, ...] = (int(c["tp"][i]), int(c["pp"][i]), int(c["dp"][i]), int(c["ep"][i]))
        if "cp" in c and int(c["cp"][i]) > 1:
            key += (int(c["cp"][i]), int(bool(c["cp_prefill"][i])))
        out.setdefault(key, int(i))
    return out


def factorizations(result: SweepResult) -> list[int]:
    """One row per TP × PP factorization of the whole cluster (DP = 1), TP ascending: the best
    row of each (any EP, no context parallelism: CP rows are compared in the table), so 16 GPUs
    give 1×16, 2×8, 4×4, 8×2, 16×1 (those the model allows)."""
    n = result.project.cluster.num_gpus
    c = result.columns
    best: dict[int, int] = {}
    for i in result.order:
        tp, pp, dp = int(c["tp"][i]), int(c["pp"][i]), int(c["dp"][i])
        if dp == 1 and tp * pp == n and ("cp" not in c or int(c["cp"][i]) == 1):
            best.setdefault(tp, int(i))
    return [best[tp] for tp in sorted(best)]


def frontier(x: np.ndarray, y: np.ndarray, rows: np.ndarray, x_high: bool, y_high: bool) -> np.ndarray:
    """Rows not dominated on (x, y) with the given directions, sorted by x."""
    if rows.size == 0:
        return rows
    xs = np.where(x_high, -x[rows], x[rows])  # minimise both
    ys = np.where(y_high, -y[rows], y[rows])
    ok = np.isfinite(xs) & np.isfinite(ys)
    rows, xs, ys = rows[ok], xs[ok], ys[ok]
    o = np.lexsort((ys, xs))
    keep = []
    best = np.inf
    for k in o:
        if ys[k] < best:
            keep.append(rows[k])
            best = ys[k]
    keep_arr = np.asarray(keep, dtype=np.int64)
    return keep_arr[np.argsort(x[keep_arr], kind="stable")]


@dataclass(frozen=True)
class MetricRow:
    """One line of the pinned-layout comparison: values per pinned layout and the winner."""

    name: str
    values: tuple[float, ...]
    text: tuple[str, ...]
    winner: int | None  # index of the best value; None when all equal or not comparable


#: (name, PlanResult getter, format, higher is better)
COMPARE_METRICS: tuple[tuple[str, object, str, bool | None], ...] = (
    ("Fits", lambda p: float(p.fits), "b", True),
    ("Batch (sequences)", lambda p: p.batch, ",d", None),
    ("Peak memory GiB/GPU", lambda p: p.peak_memory.total / GIB, ",.1f", False),
    ("KV capacity (tokens)", lambda p: p.kv_capacity_tokens, ",d", True),
    ("TTFT ms", lambda p: p.ttft_ms, ",.0f", False),
    ("TPOT ms", lambda p: p.tpot_ms, ",.1f", False),
    ("tok/s", lambda p: p.output_tokens_per_s, ",.0f", True),
    ("tok/s per GPU", lambda p: p.output_tokens_per_s_per_gpu, ",.1f", True),
    ("tok/s per user", lambda p: p.tokens_per_s_per_user, ",.1f", True),
    ("$ per M tokens", lambda p: p.usd_per_million_output_tokens, ",.2f", False),
    ("TP all-reduce µs/layer (decode)", lambda p: p.allreduce_us_per_layer_decode, ",.1f", False),
    ("Pipeline bubble", lambda p: p.bubble_fraction, ".0%", False),
    ("Warnings", lambda p: len(p.warnings), "d", False),
)


def compare_plans(plans: list[PlanResult]) -> list[MetricRow]:
    """Metric rows for pinned plans; the winner is the best value when the values differ (only
    among layouts that fit, except for the "Fits" row itself)."""
    rows: list[MetricRow] = []
    fits = [p.fits for p in plans]
    for name, get, fmt, high in COMPARE_METRICS:
        vals = tuple(float(get(p)) for p in plans)  # type: ignore[operator]
        col = Column(name, name, fmt, "")
        text = tuple(format_value(col, v) for v in vals)
        winner = None
        if high is not None and len(plans) > 1:
            cand = [k for k in range(len(plans)) if (fits[k] or name == "Fits") and np.isfinite(vals[k])]
            if cand and len({round(vals[k], 9) for k in cand}) > 1:
                winner = (max if high else min)(cand, key=lambda k: vals[k])
        rows.append(MetricRow(name, vals, text, winner))
    return rows


def tp_link(result: SweepResult, plan: PlanResult) -> str:
    """The slowest hop inside the plan's TP groups, e.g. ``ib-ndr (47 GB/s)``; "" when TP = 1."""
    lay = plan.layout
    if lay.tp == 1 or lay.placement is None:
        return ""
    kind, bw = tp_bottleneck(topology_for(result.project), lay, lay.placement)
    return f"{kind} ({bw:,.0f} GB/s)" if kind else ""


def why_loses(result: SweepResult, i: int, ref: int) -> str:
    """One paragraph: how row ``i`` compares with row ``ref`` (normally the recommendation) and the
    decisive facts — TP all-reduce time and the link it crosses, bubble, KV room, fit."""
    c = result.columns
    name, ref_name = row_label(result, i), row_label(result, ref)
    if i == ref:
        return f"{name} is the recommended layout for {result.objective}."
    if not c["fits"][i]:
        return f"{name} does not fit: {result.reasons_unfit[i]}"
    a, b = result.plan(i), result.plan(ref)
    d = (a.output_tokens_per_s_per_gpu - b.output_tokens_per_s_per_gpu) / max(b.output_tokens_per_s_per_gpu, 1e-12)
    parts = [
        f"{name} (M={a.micro_batches}, batch {a.batch}) vs {ref_name} (M={b.micro_batches}, batch {b.batch}): "
        f"{d:+.0%} sustained tok/s per GPU ({a.output_tokens_per_s_per_gpu:,.1f} vs {b.output_tokens_per_s_per_gpu:,.1f})."
    ]
    ar_a = a.allreduce_us_per_layer_decode
    ar_b = b.allreduce_us_per_layer_decode
    if a.layout.tp > 1 and ar_a > 1.2 * ar_b + 1.0:
        la, lb = tp_link(result, a), tp_link(result, b)
        parts.append(
            f"Its TP={a.layout.tp} all-reduce crosses {la or 'its links'}: {ar_a:,.1f} µs per layer per "
            f"decode step vs {ar_b:,.1f} µs" + (f" over {lb}" if lb else " (no TP all-reduce)") + "."
        )
    if a.bubble_fraction > b.bubble_fraction + 0.05:
        parts.append(f"Pipeline bubble {a.bubble_fraction:.0%} vs {b.bubble_fraction:.0%}.")
    if a.max_concurrent_sequences < 0.8 * b.max_concurrent_sequences:
        parts.append(
            f"KV cache holds {a.max_concurrent_sequences:,} sequences per replica vs {b.max_concurrent_sequences:,}."
        )
    if a.tokens_per_s_per_user > 1.05 * b.tokens_per_s_per_user:
        parts.append(
            f"It gives each user more: {a.tokens_per_s_per_user:,.1f} vs {b.tokens_per_s_per_user:,.1f} tok/s."
        )
    codes = sorted({w.code for w in a.warnings} - {w.code for w in b.warnings})
    if codes:
        parts.append("Warnings: " + ", ".join(codes) + ".")
    return " ".join(parts)


def first_tp_group(plan: PlanResult) -> tuple[str, ...]:
    """GPU ids of the first TP group of a plan (what the canvas highlights as a preview)."""
    lay = plan.layout
    placement = lay.placement or ()
    return tuple(placement[r] for r in lay.tp_groups()[0] if r < len(placement))
