"""One replica of a layout: its iteration model, its shape for the power model, and the highest
request rate it sustains within a percentile SLO.

The rate comes from the request-level simulation (:func:`studio.engine.simulate.simulate`), not
from the steady-state mean: the simulated p99 TTFT and p99 TPOT of ``requests`` Poisson requests
(fixed ``seed``) must both be within the targets. The highest such rate is found by bisection
between 0 and the replica's saturation rate; with the seed fixed the arrival pattern is the same
at every rate (only stretched in time), so the search is deterministic and its answer repeatable.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from studio.core.errors import StudioError
from studio.core.layout import Layout
from studio.core.project import Project
from studio.core.workload import Load
from studio.engine.fleet.power import ReplicaShape
from studio.engine.plan.evaluate import evaluate
from studio.engine.serving.load import open_loop
from studio.engine.serving.simulate import SimulationResult, simulate
from studio.engine.serving.under_load import ServingSetup, serving_setup

#: Bisection steps: the rate is found to within 2^-STEPS of the saturation rate.
STEPS = 14


@dataclass(frozen=True)
class Slo:
    """p99 targets (ms) the fleet holds in every slot."""

    ttft_p99_ms: float
    tpot_p99_ms: float

    def __post_init__(self) -> None:
        for name in ("ttft_p99_ms", "tpot_p99_ms"):
            v = getattr(self, name)
            if not (math.isfinite(v) and v > 0):
                raise StudioError(f"{name} must be a positive number of milliseconds, not {v}", field=name)

    def met(self, sim: SimulationResult) -> bool:
        return bool(sim.ttft.p99 <= self.ttft_p99_ms and sim.tpot.p99 <= self.tpot_p99_ms)

    @property
    def text(self) -> str:
        return f"p99 TTFT ≤ {self.ttft_p99_ms:,.4g} ms, p99 TPOT ≤ {self.tpot_p99_ms:,.4g} ms"


@dataclass(frozen=True)
class ReplicaCapacity:
    """The highest rate one replica serves within the SLO, and what it was found with."""

    rate_per_s: float  # meets the SLO
    failing_rate_per_s: float  # the lowest rate tried that misses it
    saturation_rate_per_s: float
    ttft_p99_ms: float  # at rate_per_s
    tpot_p99_ms: float
    requests: int
    seed: int


def replica_setup(project: Project, layout: Layout | None = None) -> ServingSetup:
    """The iteration model and limits of one replica of ``layout`` (default: the project's)."""
    return serving_setup(project, layout)


def replica_shape(project: Project, layout: Layout | None = None) -> ReplicaShape:
    """Weights, FLOPs and KV bytes of one replica, and its GPU, for the power model."""
    layout = project.layout if layout is None else layout
    plan = evaluate(project.replace(layout=layout), details=False)
    if not plan.fits:
        raise StudioError(f"layout {layout.label} does not fit: {plan.fit_reason}")
    m = project.model
    gpus = max(1, plan.gpus // max(layout.replicas, 1))
    weights = sum(g.weights for g in plan.memory) / max(layout.replicas, 1)
    gpu_type = project.cluster.gpu_types()[0]
    precision = project.serving.effective_precision(m.precision)
    return ReplicaShape(
        gpus=gpus, spec=project.cluster.gpu_specs[gpu_type], weight_bytes=float(weights),
        active_params=float(m.num_active_params), attn_flops_per_ctx_token=4.0 * m.num_layers * m.q_dim,
        kv_bytes_per_token=float(m.kv_bytes_per_token(project.serving.kv_dtype)),
        compute_class=precision.mlp.compute_class,
    )


def simulate_rate(s: ServingSetup, project: Project, rate_per_s: float, replicas: int, requests: int,
                  seed: int) -> SimulationResult:
    """``requests`` requests per replica at ``rate_per_s`` over ``replicas`` replicas (Poisson, the
    project's length spreads), spread evenly over the replicas as a round-robin balancer does."""
    ld = project.workload.load
    load = Load(mode="rate", rate_per_s=rate_per_s, arrival="poisson", num_requests=requests * replicas,
                isl_dist=ld.isl_dist, osl_dist=ld.osl_dist, seed=seed)
    return simulate(s.model, load, s.isl, s.osl, budget=s.budget, running_cap=s.running_cap,
                    kv_tokens=s.kv_tokens, micro_batches=s.micro_batches, replicas=replicas, prefix=s.prefix)


def max_rate_within_slo(s: ServingSetup, project: Project, slo: Slo, *, requests: int = 400,
                        seed: int = 0) -> ReplicaCapacity:
    """The highest rate one replica sustains with simulated p99 TTFT and TPOT within ``slo``.

    Raises
    ------
    StudioError
        When even a light load misses the SLO (one request alone is slower than the target).
    """
    _, sat = open_loop(s.model, 1e-9, s.micro_batches, s.prefill_isl, s.osl, s.budget, s.running_cap,
                       cached=s.cached)
    lo, hi = 0.0, sat
    floor = sat * 2.0 ** -STEPS
    first = simulate_rate(s, project, floor, 1, requests, seed)
    if not slo.met(first):
        raise StudioError(
            f"even at {floor:.3g} req/s one replica misses the SLO ({slo.text}): simulated p99 TTFT "
            f"{first.ttft.p99:,.0f} ms, p99 TPOT {first.tpot.p99:,.1f} ms. No number of replicas meets it; "
            "relax the targets or pick a faster layout",
            field="ttft_p99_ms",
        )
    best = first
    lo = floor
    for _ in range(STEPS):
        mid = 0.5 * (lo + hi)
        sim = simulate_rate(s, project, mid, 1, requests, seed)
        if slo.met(sim):
            lo, best = mid, sim
        else:
            hi = mid
    return ReplicaCapacity(rate_per_s=lo, failing_rate_per_s=hi, saturation_rate_per_s=sat,
                           ttft_p99_ms=best.ttft.p99, tpot_p99_ms=best.tpot.p99, requests=requests, seed=seed)
