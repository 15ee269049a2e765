"""A plan's figures over its request-length distribution, not at the mean lengths.

The closed-form plan runs every request at the workload's mean ISL/OSL. When the load draws
lengths from a distribution (``--lengths``, ``--isl-histogram``, a spread), :func:`over_lengths`
serves the plan's load request by request with lengths drawn from it
(:func:`studio.engine.serving.under_load.simulate_plan`): throughput, TTFT/TPOT/E2E percentiles
and the share of requests the KV cache cannot admit (a request whose ISL + OSL exceeds the KV
tokens of one replica never runs; one beyond the model's context is refused), against the plan's
closed form at the means.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from studio.core.project import Project
from studio.engine.plan.results import PlanResult


@dataclass(frozen=True)
class OverLengths:
    """Figures of the plan's load over its length distribution (ms, tokens/s, shares)."""

    requests: int
    output_tokens_per_s: float
    ttft_ms: dict[str, float]  # mean, p50, p90, p99
    tpot_ms: dict[str, float]
    e2e_ms: dict[str, float]
    not_admitted_share: float  # ISL + OSL above one replica's KV tokens or the model's context
    longest_tokens: int  # the longest ISL + OSL drawn

    def to_json(self) -> dict:
        return {"requests": self.requests, "output_tokens_per_s": self.output_tokens_per_s,
                "ttft_ms": self.ttft_ms, "tpot_ms": self.tpot_ms, "e2e_ms": self.e2e_ms,
                "not_admitted_share": self.not_admitted_share, "longest_tokens": self.longest_tokens}


def _spread(project: Project) -> bool:
    load = project.workload.load
    return load.isl_dist.kind != "fixed" or load.osl_dist.kind != "fixed"


def over_lengths(project: Project, plan: PlanResult, samples: int = 20_000) -> OverLengths | None:
    """The plan's load served over its length distribution; None when the lengths are fixed, the
    layout does not fit, or the request rate saturates it (no steady state)."""
    if not _spread(project) or not plan.fits or (plan.load is not None and plan.load.saturated):
        return None
    from studio.engine.serving.simulate import sample_lengths
    from studio.engine.serving.under_load import simulate_plan

    wl = project.workload
    sim = simulate_plan(project)
    rng = np.random.default_rng(wl.load.seed)
    total = (sample_lengths(wl.load.isl_dist, wl.isl, samples, rng)
             + sample_lengths(wl.load.osl_dist, wl.osl, samples, rng))
    limit = min(plan.kv_capacity_tokens, project.model.max_context)

    def dist(d) -> dict[str, float]:
        return {"mean": d.mean, "p50": d.p50, "p90": d.p90, "p99": d.p99}

    return OverLengths(
        requests=sim.requests, output_tokens_per_s=sim.output_tokens_per_s, ttft_ms=dist(sim.ttft),
        tpot_ms=dist(sim.tpot), e2e_ms=dist(sim.e2e),
        not_admitted_share=float(np.mean(total > limit)), longest_tokens=int(total.max()),
    )
