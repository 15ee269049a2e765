"""Fit the engine to measurements: link kinds to nccl-tests times, efficiencies to serving runs.

* :func:`fit_link_kind` searches the per-hop latency and effective bandwidth of one link kind
  (a :class:`~studio.core.project.LinkFit`) that make the engine's own prediction of a collective
  on a GPU group match measured times, minimising the RMS of the relative error, so 30 µs and
  30 ms points weigh the same. The engine's time is a minimum over algorithms, so the fit is a
  grid search, not a closed form.
* :func:`fit_serving` fits the engine's efficiency factors to measured serving runs
  (:class:`ServingPoint`: throughput, TTFT, TPOT at a concurrency).

Pure numpy and the engine; no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from studio.core.errors import StudioError
from studio.core.project import LinkFit

MIN_POINTS = 3


def rms(x: np.ndarray) -> float:
    """Root mean square (0 for no values)."""
    x = np.asarray(x, dtype=float)
    return float(np.sqrt(np.mean(x * x))) if x.size else 0.0


def _check(sizes, times_us) -> tuple[np.ndarray, np.ndarray]:
    s = np.asarray(sizes, dtype=float).ravel()
    t = np.asarray(times_us, dtype=float).ravel()
    if s.size != t.size:
        raise StudioError(f"{s.size} sizes but {t.size} times")
    keep = np.isfinite(s) & np.isfinite(t) & (s > 0) & (t > 0)
    s, t = s[keep], t[keep]
    if s.size < MIN_POINTS:
        raise StudioError(
            f"{s.size} usable points (size > 0 and time > 0); a link fit needs at least {MIN_POINTS}"
        )
    if np.unique(s).size < 2:
        raise StudioError("every point has the same message size; the bandwidth cannot be fitted")
    order = np.argsort(s, kind="stable")
    return s[order], t[order]


# ------------------------------------------------------------------ fitting the engine's link model
@dataclass(frozen=True)
class LinkKindFit:
    """A link kind's fitted latency and bandwidth *as the engine uses them*, with the errors of the
    engine's predictions on the measured points before and after calibration."""

    kind_id: str
    link_fit: LinkFit
    sizes: np.ndarray
    times_us: np.ndarray
    predicted_us: np.ndarray  # calibrated engine
    default_us: np.ndarray  # engine with the link kind's catalogue figures
    collective: str

    @property
    def residuals(self) -> np.ndarray:
        return (self.predicted_us - self.times_us) / self.times_us

    @property
    def default_residuals(self) -> np.ndarray:
        return (self.default_us - self.times_us) / self.times_us


def _collective(cluster, group: list[str], collective: str, constants, link_fits, nccl_only: bool):
    """The engine's :class:`~studio.engine.fabric.comm.Collective` of ``collective`` on ``group``."""
    from studio.engine.fabric.comm import Collective, allreduce, p2p
    from studio.engine.fabric.topology import Topology
    from studio.engine.step.constants import default_constants

    c = constants or default_constants()
    topo = Topology(cluster, link_fits)
    if collective == "all_reduce":
        coll = allreduce(topo, list(group), c)
    elif collective == "sendrecv":
        if len(group) < 2:
            raise StudioError("a send/recv fit needs a group of at least two GPUs")
        coll = p2p(topo, [group[0]], [group[1]], c)
    else:
        raise StudioError(f"collective '{collective}' cannot be fitted; allowed: all_reduce, sendrecv")
    if nccl_only:
        coll = Collective(coll.kind, coll.group, tuple(a for a in coll.algos if a.name != "one-shot"))
    return coll


def engine_times(
    cluster,
    group: list[str],
    sizes,
    *,
    collective: str = "all_reduce",
    constants=None,
    link_fits: dict[str, LinkFit] | None = None,
    nccl_only: bool = True,
) -> np.ndarray:
    """The engine's time (µs) of ``collective`` on ``group`` for each message size.

    ``nccl_only`` drops the custom one-shot all-reduce of the serving runtimes, which nccl-tests
    does not run. ``sendrecv`` is a transfer from the first GPU of the group to the second.
    """
    coll = _collective(cluster, group, collective, constants, link_fits, nccl_only)
    return coll.time_us(np.asarray(sizes, dtype=float))


def fit_link_kind(
    cluster,
    group: list[str],
    kind_id: str,
    sizes,
    times_us,
    *,
    collective: str = "all_reduce",
    constants=None,
) -> LinkKindFit:
    """Fit the per-hop latency and effective bandwidth of ``kind_id`` so that the engine's
    prediction of ``collective`` on ``group`` matches the measured times (RMS relative error).

    The engine's time is a minimum over algorithms, so the fit is a search: a log grid over
    bandwidth (1/32× to 4× the kind's effective figure) and latency (0 to 200 µs), then two rounds of
    refinement around the best cell.

    Raises
    ------
    StudioError
        The kind is not used by the cluster, the group has no link of that kind on its paths, or
        the points are unusable.
    """
    if kind_id not in cluster.link_kinds:
        raise StudioError(
            f"link kind '{kind_id}' is not in this cluster; kinds used: {', '.join(sorted(cluster.link_kinds))}"
        )
    s, t = _check(sizes, times_us)
    kind = cluster.link_kinds[kind_id]

    # Routes and per-byte costs depend on the kind's bandwidth only; every algorithm's start-up time
    # is linear in the kind's per-hop latency. So one bandwidth needs two costings (latency 0 and 1)
    # instead of one per latency tried — the search builds ~2 topologies per bandwidth, not ~25.
    # (checked: when a third costing at latency 200 µs is off the line — the slowest path changes
    # with the latency — every latency is costed exactly instead)
    per_bw: dict[float, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None] = {}

    def coll_at(lat: float, bw: float):
        return _collective(cluster, group, collective, constants,
                           {kind_id: LinkFit(latency_us=lat, bandwidth_gbps=bw)}, True)

    def algos_at(bw: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
        if bw not in per_bw:
            c0, c1, c200 = coll_at(0.0, bw), coll_at(1.0, bw), coll_at(200.0, bw)
            a0 = np.array([a.alpha_us for a in c0.algos])
            a1 = np.array([a.alpha_us for a in c1.algos])
            a200 = np.array([a.alpha_us for a in c200.algos])
            linear = (len(c0.algos) == len(c1.algos) == len(c200.algos)
                      and np.allclose(a0 + 200.0 * (a1 - a0), a200, rtol=1e-9, atol=1e-9))
            per_bw[bw] = (a0, a1 - a0, np.array([a.us_per_byte for a in c0.algos]),
                          np.array([a.max_bytes for a in c0.algos])) if linear else None
        return per_bw[bw]

    def predict(lat: float, bw: float) -> np.ndarray:
        line = algos_at(float(bw))
        if line is None:
            return coll_at(lat, bw).time_us(s)
        a0, da, upb, cap = line
        if a0.size == 0:
            return np.zeros_like(s)
        times = (a0 + lat * da)[:, None] + upb[:, None] * s[None, :]
        times = np.where(s[None, :] <= cap[:, None], times, np.inf)
        return times.min(axis=0)

    def score(lat: float, bw: float) -> float:
        return rms((predict(lat, bw) - t) / t)

    default = engine_times(cluster, group, s, collective=collective, constants=constants)
    base_bw = kind.effective_gbps
    probe = predict(kind.latency_us, base_bw * 1e3)
    if np.allclose(probe, default, rtol=1e-9):
        raise StudioError(
            f"the engine's {collective} on these GPUs crosses no link of kind '{kind_id}'; pick the "
            "link kind the test ran over"
        )
    bws = base_bw * np.exp2(np.linspace(-5, 2, 29))
    lats = np.concatenate([[0.0], np.geomspace(0.05, 200.0, 24)])
    best = min(((score(la, b), la, b) for la in lats for b in bws), key=lambda x: x[0])
    span_bw, span_lat = 2 ** (7 / 28), 1.5
    for _ in range(2):
        _, la0, b0 = best
        cand_b = b0 * np.geomspace(1 / span_bw, span_bw, 9)
        cand_l = np.unique(np.clip(np.concatenate([la0 * np.geomspace(1 / span_lat, span_lat, 8), [la0]]), 0, 1e5))
        best = min([best] + [(score(la, b), la, b) for la in cand_l for b in cand_b], key=lambda x: x[0])
        span_bw, span_lat = span_bw**0.35, span_lat**0.35
    err, lat, bw = best
    link_fit = LinkFit(latency_us=float(lat), bandwidth_gbps=float(bw), points=int(s.size), rms_rel_error=float(err))
    return LinkKindFit(kind_id, link_fit, s, t, predict(lat, bw), default, collective)


# ------------------------------------------------------------------ fitting efficiency factors to serving runs
#: Efficiency factors the serving fit adjusts by default: compute (prefill) and memory (decode).
SERVING_PARAMS: tuple[str, ...] = ("prefill_efficiency", "decode_efficiency")
#: Bounds of every fitted efficiency factor.
EFFICIENCY_BOUNDS: tuple[float, float] = (0.05, 1.0)
#: Bounds of fitted constants that are not fractions of a measured figure: µs of per-step overhead,
#: and the decode factor, which multiplies the STREAM Triad bandwidth (2 reads + 1 write) while a
#: decode step only reads (weights, KV cache): read-only streams reach up to ~8 % more — Dot against
#: Triad 3.18 / 2.97 TB/s on H100, 4.48 / 4.15 on H200 (reference/serving-calibration.md §3, Azure
#: AI-benchmarking-guide STREAM runs) — so a decode factor a little above 1 is physical.
#: prefill_efficiency scales the measured kernel tables' compute part (1 = as measured), so a run
#: faster than the tables' engine version may need a little above 1.
OTHER_BOUNDS: dict[str, tuple[float, float]] = {"decode_step_overhead_us": (1.0, 20_000.0),
                                                "prefill_efficiency": (0.05, 1.5),
                                                "decode_efficiency": (0.05, 1.1)}
#: Constants only the iteration model reads (:mod:`studio.engine.step.iteration`, the drafter's
#: passes), never the batch-independent layout costs (:func:`studio.engine.plan.costs.project_costs`:
#: memory, collectives, kernel curves): a fit of these alone costs each point's layout once and
#: reuses it for every trial of the factors (tests/importers/test_serving_fit.py holds the claim).
ITERATION_ONLY: frozenset[str] = frozenset({"prefill_efficiency", "decode_efficiency", "decode_step_overhead_us",
                                            "decode_step_overhead_sync_us"})
#: Measures the serving fit compares, in order (each used where the runs report it).
SERVING_MEASURES: tuple[str, ...] = ("output_tok_s", "ttft_ms", "tpot_ms")


@dataclass(frozen=True)
class ServingPoint:
    """One measured serving run of one TP×PP instance.

    ``concurrency`` is the number of requests in flight (None: as many as the KV cache holds, as in
    an offline run that sends every request at once); ``output_tok_s`` is for the whole instance.
    """

    label: str
    isl: int
    osl: int
    tp: int
    pp: int
    concurrency: int | None
    output_tok_s: float
    ttft_ms: float | None = None
    tpot_ms: float | None = None

    def measured(self, measure: str) -> float | None:
        return getattr(self, measure)


def serving_project(base, point: ServingPoint):
    """``base`` set up to run ``point``: its workload (ISL/OSL, batch auto capped at the concurrency)
    and a TP×PP layout replicated over the cluster (DP = GPUs / (TP×PP)).

    Raises
    ------
    StudioError
        TP×PP does not divide the cluster's GPUs.
    """
    from studio.core.layout import Layout

    n = base.cluster.num_gpus
    group = point.tp * point.pp
    if group < 1 or n % group:
        raise StudioError(
            f"{point.label}: TP{point.tp}×PP{point.pp} = {group} GPUs does not divide the cluster's {n} GPUs; "
            "use a cluster whose GPU count is a multiple of TP×PP"
        )
    wl = base.workload.replace(
        isl=point.isl, osl=point.osl, batch="auto",
        max_batch=min(point.concurrency or 1_000_000, 1_000_000),
    )
    layout = Layout(tp=point.tp, pp=point.pp, dp=n // group, ep=1, micro_batches=max(1, point.pp))
    return base.replace(workload=wl, layout=layout, serving=base.serving.replace(calibration=None))


def predict_serving(project, point: ServingPoint, constants) -> dict[str, float]:
    """The engine's output tok/s (one instance), TTFT and TPOT (ms) for ``point``."""
    return _predict(serving_project(project, point), constants)


def _predict(p, constants, costs: dict | None = None) -> dict[str, float]:
    """:func:`predict_serving` of a project already set up by :func:`serving_project`; ``costs`` is
    :func:`~studio.engine.plan.evaluate.evaluate`'s memo of the layout costs, kept by a caller whose
    constants differ only in :data:`ITERATION_ONLY` names (which those costs never read)."""
    from studio.engine.plan.evaluate import evaluate

    r = evaluate(p, calibration=None, constants=constants, details=False, costs=costs)  # figures only
    return {
        "output_tok_s": r.output_tokens_per_s / r.layout.dp,
        "ttft_ms": r.ttft_ms,
        "tpot_ms": r.tpot_ms,
        "fits": float(r.fits),
        "batch": float(r.batch),
    }


@dataclass(frozen=True)
class ServingFit:
    """Fitted efficiency factors with the engine's predictions before and after, per point."""

    params: tuple[str, ...]
    values: tuple[float, ...]
    defaults: tuple[float, ...]
    points: tuple[ServingPoint, ...]
    default_pred: tuple[dict[str, float], ...]
    fitted_pred: tuple[dict[str, float], ...]
    skipped: tuple[tuple[ServingPoint, str], ...] = ()

    @property
    def efficiency(self) -> dict[str, float]:
        return dict(zip(self.params, (float(v) for v in self.values), strict=True))

    def rel_errors(self, measure: str, fitted: bool = True) -> np.ndarray:
        """``(predicted - measured) / measured`` of the points that report ``measure``."""
        preds = self.fitted_pred if fitted else self.default_pred
        out = [(pr[measure] - m) / m
               for pt, pr in zip(self.points, preds, strict=True) if (m := pt.measured(measure))]
        return np.asarray(out, dtype=float)

    def measures(self) -> tuple[str, ...]:
        return tuple(m for m in SERVING_MEASURES if any(p.measured(m) for p in self.points))

    def fit_error(self) -> dict[str, float]:
        """RMS relative error per measure, before (``default_``) and after the fit."""
        out: dict[str, float] = {}
        for m in self.measures():
            out[f"serving.{m}.rms_rel_error"] = rms(self.rel_errors(m, True))
            out[f"serving.{m}.default_rms_rel_error"] = rms(self.rel_errors(m, False))
        return out


def _param_default(c, name: str, gpu_type: str) -> float:
    key, _, gpu = name.partition(":")
    value = getattr(c, key)
    return float(c.per_gpu(value, gpu or gpu_type)) if isinstance(value, dict) else float(value)


def evaluate_serving(project, points, efficiency: dict[str, float] | None = None, constants=None):
    """Predictions for every point with ``efficiency`` overrides (None = the engine's defaults)."""
    from studio.engine.step.constants import default_constants

    c = (constants or default_constants()).with_overrides(efficiency or {})
    return [predict_serving(project, p, c) for p in points]


def fit_serving(
    project,
    points,
    *,
    params: tuple[str, ...] = SERVING_PARAMS,
    bounds: tuple[float, float] = EFFICIENCY_BOUNDS,
    constants=None,
    max_iter: int = 25,
) -> ServingFit:
    """Fit efficiency factors so the engine reproduces measured serving runs.

    Least squares on ``log(predicted / measured)`` of every measure a point reports (output tok/s,
    and TTFT/TPOT when present), over ``log`` of the factors, kept within ``bounds``: a coarse grid,
    then projected Levenberg–Marquardt with finite-difference derivatives.

    Parameters
    ----------
    project:
        Cluster, model and serving settings the runs used (see :func:`serving_project`).
    points:
        :class:`ServingPoint` measurements.
    params:
        Names of :class:`~studio.engine.step.constants.Constants` to fit (``name`` or ``name:gpu-id``).

    Raises
    ------
    StudioError
        Unknown factor names, no point the engine can place in memory, or an invalid layout.
    """
    from studio.engine.step.constants import default_constants

    base = constants or default_constants()
    allowed = base.names()
    for name in params:
        if name.partition(":")[0] not in allowed:
            raise StudioError(f"'{name}' is not an engine constant; allowed: {', '.join(allowed)}")
    if not params:
        raise StudioError("no efficiency factor to fit; name at least one")
    points = list(points)
    if not points:
        raise StudioError("no serving measurements to fit")
    gpu_type = project.cluster.gpu_types()[0]
    defaults = tuple(_param_default(base, n, gpu_type) for n in params)
    pred0 = evaluate_serving(project, points, None, base)
    used = [(p, d) for p, d in zip(points, pred0, strict=True) if d["fits"] and d["output_tok_s"] > 0]
    skipped = tuple((p, "does not fit in GPU memory in the engine") for p, d in zip(points, pred0, strict=True)
                    if not (d["fits"] and d["output_tok_s"] > 0))
    if not used:
        raise StudioError("no measured point fits in GPU memory in the engine; check the GPU type, the model and the TP size")
    pts = [p for p, _ in used]
    lim = np.log(np.array([OTHER_BOUNDS.get(n.partition(":")[0], bounds) for n in params], dtype=float))
    lo, hi = lim[:, 0], lim[:, 1]

    # Each point's project is built once, and each θ is evaluated once: the search asks again for
    # the residuals of the θ it has just accepted (a fifth of a fit's engine runs).
    setups = [serving_project(project, p) for p in pts]
    # the factors usually fitted are read by the iteration model alone: each point's layout is then
    # costed once for the whole search (the same costs whatever the trial, so the same figures)
    reuse = all(n.partition(":")[0] in ITERATION_ONLY for n in params)
    memos: list[dict | None] = [{} if reuse else None for _ in setups]
    seen: dict[bytes, np.ndarray] = {}

    def residuals(theta: np.ndarray) -> np.ndarray:
        key = theta.tobytes()
        if key in seen:
            return seen[key]
        eff = dict(zip(params, np.exp(theta).tolist(), strict=True))
        c = base.with_overrides(eff)
        preds = [_predict(s, c, memo) for s, memo in zip(setups, memos, strict=True)]
        r = []
        for p, pr in zip(pts, preds, strict=True):
            for m in SERVING_MEASURES:
                meas = p.measured(m)
                if meas:
                    r.append(np.log(max(pr[m], 1e-12) / meas))
        seen[key] = out = np.asarray(r)
        out.flags.writeable = False
        return out

    def cost(theta: np.ndarray) -> float:
        r = residuals(theta)
        return float(r @ r)

    theta0 = np.clip(np.log(np.asarray(defaults)), lo, hi)
    best = (cost(theta0), theta0)
    if len(params) <= 3:
        grid = np.linspace(lo, hi, 5 if len(params) <= 2 else 3)  # (steps, params)
        for idx in np.ndindex(*(grid.shape[0],) * len(params)):
            th = grid[list(idx), np.arange(len(params))]
            best = min(best, (cost(th), th), key=lambda x: x[0])
    f, theta = best
    lam, h = 1e-2, 1e-3
    for _ in range(max_iter):
        r = residuals(theta)
        jac = np.empty((r.size, theta.size))
        for k in range(theta.size):
            step = h if theta[k] + h <= hi[k] else -h
            t2 = theta.copy()
            t2[k] += step
            jac[:, k] = (residuals(t2) - r) / step
        g = jac.T @ r
        a = jac.T @ jac
        improved = False
        for _ in range(6):
            delta = np.linalg.solve(a + lam * np.diag(np.diag(a) + 1e-9), -g)
            cand = np.clip(theta + delta, lo, hi)
            fc = cost(cand)
            if fc < f - 1e-12:
                theta, f, lam, improved = cand, fc, lam / 3, True
                break
            lam *= 4
        if not improved or np.max(np.abs(delta)) < 1e-5:
            break
    values = tuple(float(v) for v in np.exp(theta))
    eff = dict(zip(params, values, strict=True))
    return ServingFit(
        params=tuple(params), values=values, defaults=defaults, points=tuple(pts),
        default_pred=tuple(d for _, d in used), fitted_pred=tuple(evaluate_serving(project, pts, eff, base)),
        skipped=skipped,
    )
