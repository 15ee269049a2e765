"""A latency SLO as percentiles under load: "p99 TTFT ≤ X ms and p99 TPOT ≤ Y ms at R req/s".

One implementation for ``layout-studio sweep --ttft-p99/--tpot-p99 --at-rate`` and the Explorer.
The sweep ranks layouts as usual; then, in ranking order, each distinct layout (TP, PP, EP, DP,
micro-batches) that fits is served at R requests/s (all replicas, Poisson):

1. **closed form** (:func:`studio.engine.evaluate` under that rate): a layout whose saturation rate
   is at or below R, or whose *mean* TTFT (TPOT) already exceeds the p99 target, is out without a
   simulation (the p99 of the simulated requests is not below their mean);
2. **simulation** (:func:`studio.engine.serving.under_load.simulate_plan`) of the first ``simulate``
   survivors: p99 TTFT and p99 TPOT of the project's ``num_requests`` requests against the targets.

The best layout meeting the SLO is the first in the sweep's ranking whose simulated p99s meet it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import Any

from studio.core.errors import StudioError
from studio.core.layout import Layout
from studio.core.project import Project
from studio.core.workload import Load

#: Distinct layouts looked at through the closed form (a sweep can hold hundreds).
MAX_SCREENED = 200

LayoutKey = tuple[int, int, int, int, int]


@dataclass(frozen=True)
class SloTargets:
    """p99 targets (ms; None = not checked) and the request rate they hold at (req/s, all replicas)."""

    rate_per_s: float
    ttft_p99_ms: float | None = None
    tpot_p99_ms: float | None = None

    def __post_init__(self) -> None:
        if self.ttft_p99_ms is None and self.tpot_p99_ms is None:
            raise ValueError("an SLO needs a p99 TTFT or a p99 TPOT target")
        for name in ("rate_per_s", "ttft_p99_ms", "tpot_p99_ms"):
            v = getattr(self, name)
            if v is not None and not (math.isfinite(v) and v > 0):
                raise ValueError(f"{name} must be a positive finite number, not {v}")

    @property
    def text(self) -> str:
        """``p99 TTFT ≤ 2,000 ms, p99 TPOT ≤ 50 ms at 4 req/s``."""
        parts = []
        if self.ttft_p99_ms is not None:
            parts.append(f"p99 TTFT ≤ {self.ttft_p99_ms:,.4g} ms")
        if self.tpot_p99_ms is not None:
            parts.append(f"p99 TPOT ≤ {self.tpot_p99_ms:,.4g} ms")
        return f"{', '.join(parts)} at {self.rate_per_s:g} req/s"


def resolve_targets(
    project: Project,
    ttft_p99_ms: float | None,
    tpot_p99_ms: float | None,
    rate_per_s: float | None,
    *,
    names: tuple[str, str, str] = ("ttft_p99_ms", "tpot_p99_ms", "slo_rate_per_s"),
) -> SloTargets | None:
    """The SLO of these values, or None when neither p99 target is set.

    Without a rate, the workload's load rate is used (when its load is a request rate).
    ``names`` are what the messages call the three values (the CLI's flags, the project's fields).

    Raises
    ------
    StudioError
        A rate without a target, or a target without any rate.
    """
    ttft_name, tpot_name, rate_name = names
    if ttft_p99_ms is None and tpot_p99_ms is None:
        if rate_per_s is not None:
            raise StudioError(
                f"{rate_name} is the rate of a percentile SLO; add {ttft_name} or {tpot_name}"
            )
        return None
    if rate_per_s is None:
        load = project.workload.load
        if load.mode == "rate" and load.rate_per_s is not None:
            rate_per_s = float(load.rate_per_s)
        else:
            raise StudioError(
                f"a p99 target needs the request rate it holds at: set {rate_name} (requests per second) "
                "or serve the workload at a request rate"
            )
    return SloTargets(float(rate_per_s), ttft_p99_ms, tpot_p99_ms)


def project_targets(project: Project) -> SloTargets | None:
    """The SLO stored in the project's Explorer settings, or None when it has no p99 target.

    Raises
    ------
    StudioError
        A p99 target is set but neither ``explorer.slo_rate_per_s`` nor a request-rate load is.
    """
    ex = project.explorer
    return resolve_targets(
        project,
        ex.ttft_p99_ms,
        ex.tpot_p99_ms,
        ex.slo_rate_per_s,
        names=("explorer.ttft_p99_ms", "explorer.tpot_p99_ms", "explorer.slo_rate_per_s"),
    )


def rate_load(project: Project, rate_per_s: float) -> Load:
    """The project's load served at ``rate_per_s`` requests/s instead (same requests, lengths,
    seed; Poisson arrivals unless the load already is a constant-rate one)."""
    load = project.workload.load
    return Load(
        mode="rate",
        rate_per_s=rate_per_s,
        arrival=load.arrival if load.mode == "rate" else "poisson",
        concurrency=None,
        num_requests=load.num_requests,
        isl_dist=load.isl_dist,
        osl_dist=load.osl_dist,
        seed=load.seed,
    )


def layout_key(layout: Layout) -> LayoutKey:
    """What tells two sweep rows apart under a request rate (the batch is not: at a rate the
    running sequences follow the traffic, up to the KV cache and ``max_batch``)."""
    return (layout.tp, layout.pp, layout.ep, layout.dp, layout.micro_batches)


@dataclass(frozen=True)
class LayoutSlo:
    """One layout served at the SLO's rate.

    ``ttft_p50_ms``, ``ttft_p99_ms`` and ``tpot_p99_ms`` come from the simulation and are None
    when the closed form already ruled the layout out (or it was not simulated).
    """

    layout: str
    micro_batches: int
    row: int
    saturation_rate_per_s: float
    ttft_mean_ms: float
    tpot_mean_ms: float
    ttft_p50_ms: float | None
    ttft_p99_ms: float | None
    tpot_p99_ms: float | None
    tokens_per_s_per_gpu: float
    meets: bool
    verdict: str

    @property
    def simulated(self) -> bool:
        return self.ttft_p99_ms is not None


@dataclass(frozen=True)
class SloReport:
    """Every layout checked, in the sweep's ranking order, and the best one meeting the SLO."""

    targets: SloTargets
    requests: int
    checked: tuple[LayoutSlo, ...]
    best: int | None  # index into ``checked``
    keys: tuple[LayoutKey, ...] = ()  # layout key of each checked entry
    cancelled: bool = False

    @property
    def best_row(self) -> int | None:
        """Sweep row of the best layout meeting the SLO, or None."""
        return self.checked[self.best].row if self.best is not None else None

    def for_layout(self, layout: Layout) -> LayoutSlo | None:
        """The check of ``layout`` (any row with its TP, PP, EP, DP, M), or None if not checked."""
        try:
            return self.checked[self.keys.index(layout_key(layout))]
        except ValueError:
            return None

    def to_json(self) -> dict[str, Any]:
        """The ``slo`` object of ``sweep --json``."""
        return {
            "ttft_p99_ms": self.targets.ttft_p99_ms,
            "tpot_p99_ms": self.targets.tpot_p99_ms,
            "rate_per_s": self.targets.rate_per_s,
            "requests": self.requests,
            "checked": [{k: _finite(v) for k, v in asdict(e).items()} for e in self.checked],
            "best": self.best,
        }


Progress = Callable[[float], bool]


def _finite(v: Any) -> Any:
    """A JSON value: a float that is not finite (a layout the engine refused) becomes None."""
    return None if isinstance(v, float) and not math.isfinite(v) else v


def check_slo(
    project: Project,
    result: Any,
    targets: SloTargets,
    *,
    simulate: int = 5,
    screen: int = MAX_SCREENED,
    progress: Progress | None = None,
) -> SloReport:
    """Screen the sweep's fitting layouts at the SLO's rate and simulate the first ``simulate``
    survivors (see the module's text).

    Parameters
    ----------
    result:
        A :class:`studio.engine.search.sweep.SweepResult` of ``project``.
    simulate:
        Layouts passing the closed form that are simulated; the check stops after the last.
    screen:
        Distinct layouts looked at, at most.
    progress:
        Called with the fraction done before each layout; returning False stops the check (the
        report comes back with ``cancelled`` set).
    """
    from studio.engine import evaluate
    from studio.engine.serving.under_load import simulate_plan

    at = rate_load(project, targets.rate_per_s)
    cols = result.columns
    rows: list[tuple[int, Layout]] = []
    seen: set[LayoutKey] = set()
    for r in (int(i) for i in result.order):
        if not bool(cols["fits"][r]):
            continue
        layout = result.layout(r)
        key = layout_key(layout)
        if key not in seen:
            seen.add(key)
            rows.append((r, layout))
    rows = rows[:screen]
    checked: list[LayoutSlo] = []
    keys: list[LayoutKey] = []
    simulated = 0
    cancelled = False
    for k, (r, layout) in enumerate(rows):
        if simulated >= simulate:
            break
        if progress is not None and progress(k / max(1, len(rows))) is False:
            cancelled = True
            break
        p = project.replace(workload=project.workload.replace(batch=int(cols["batch"][r]), load=at))
        entry, ran = _check_one(p, layout, r, targets, evaluate, simulate_plan)
        simulated += ran
        checked.append(entry)
        keys.append(layout_key(layout))
    best = next((i for i, e in enumerate(checked) if e.meets), None)
    return SloReport(targets, at.num_requests, tuple(checked), best, tuple(keys), cancelled)


def _check_one(
    p: Project, layout: Layout, row: int, t: SloTargets, evaluate: Callable, simulate_plan: Callable
) -> tuple[LayoutSlo, int]:
    """One layout: its entry, and 1 if it was simulated."""
    nan = math.nan
    entry = LayoutSlo(
        layout=layout.label,
        micro_batches=layout.micro_batches,
        row=row,
        saturation_rate_per_s=nan,
        ttft_mean_ms=nan,
        tpot_mean_ms=nan,
        ttft_p50_ms=None,
        ttft_p99_ms=None,
        tpot_p99_ms=None,
        tokens_per_s_per_gpu=nan,
        meets=False,
        verdict="",
    )
    try:
        plan = evaluate(p, layout, details=False)  # its figures only: no explanations or timelines
    except StudioError as exc:
        return replace(entry, verdict=exc.message), 0
    s = plan.load
    entry = replace(
        entry,
        saturation_rate_per_s=s.saturation_rate_per_s,
        ttft_mean_ms=plan.ttft_ms,
        tpot_mean_ms=plan.tpot_ms,
        tokens_per_s_per_gpu=plan.output_tokens_per_s_per_gpu,
    )
    if s.saturated:
        return replace(
            entry, verdict=f"saturated (saturation {s.saturation_rate_per_s:.3g} req/s)"
        ), 0
    if t.ttft_p99_ms is not None and plan.ttft_ms > t.ttft_p99_ms:
        return replace(
            entry, verdict=f"mean TTFT {plan.ttft_ms:,.0f} ms already above the target"
        ), 0
    if t.tpot_p99_ms is not None and plan.tpot_ms > t.tpot_p99_ms:
        return replace(
            entry, verdict=f"mean TPOT {plan.tpot_ms:,.1f} ms already above the target"
        ), 0
    try:
        sim = simulate_plan(p, layout)
    except StudioError as exc:
        return replace(entry, verdict=exc.message), 1
    misses = []
    if t.ttft_p99_ms is not None and sim.ttft.p99 > t.ttft_p99_ms:
        misses.append(f"p99 TTFT {sim.ttft.p99:,.0f} ms")
    if t.tpot_p99_ms is not None and sim.tpot.p99 > t.tpot_p99_ms:
        misses.append(f"p99 TPOT {sim.tpot.p99:,.1f} ms")
    entry = replace(
        entry,
        ttft_p50_ms=sim.ttft.p50,
        ttft_p99_ms=sim.ttft.p99,
        tpot_p99_ms=sim.tpot.p99,
        meets=not misses,
        verdict=f"{' and '.join(misses)} misses" if misses else "meets",
    )
    return entry, 1


@dataclass(frozen=True)
class Explored:
    """A sweep and, when the project has a percentile SLO, its check (the Explorer's result)."""

    sweep: Any  # studio.engine.search.sweep.SweepResult
    slo: SloReport | None = None
    slo_error: str = ""  # why the SLO could not be checked ("" when it was, or there is none)

    @property
    def cancelled(self) -> bool:
        return bool(getattr(self.sweep, "cancelled", False)) or bool(
            self.slo is not None and self.slo.cancelled
        )


def sweep_with_slo(
    project: Project,
    sweeper: Callable[..., Any],
    sweep_kwargs: dict[str, Any],
    targets: SloTargets | None,
    *,
    simulate: int,
    progress: Progress | None = None,
) -> Explored:
    """Sweep ``project`` and check ``targets`` on its ranking (the Explorer's work).

    Progress runs 0 → 1 over both; with an SLO, the sweep takes the first half.
    """
    share = 0.5 if targets is not None else 1.0

    def part(offset: float) -> Progress | None:
        if progress is None:
            return None
        return lambda f: progress(offset + share * float(f))

    result = sweeper(project, progress=part(0.0), **sweep_kwargs)
    if targets is None or getattr(result, "cancelled", False):
        return Explored(result)
    try:
        report = check_slo(project, result, targets, simulate=simulate, progress=part(share))
    except StudioError as exc:
        return Explored(result, None, exc.message)
    return Explored(result, report)
