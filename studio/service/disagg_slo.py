"""The percentile SLO of the disaggregated candidates (``sweep --disagg --ttft-p99 … --at-rate …``
and the Explorer's SLO column on its tinted pool rows), screened the way
:func:`studio.service.slo.check_slo` screens the layouts: the closed form first, then the request
simulation of the first survivors, at the project's load served at the SLO's rate."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from studio.core.project import Project
from studio.service.slo import MAX_SCREENED, rate_load

if TYPE_CHECKING:
    from studio.engine.disagg.sweep import DisaggSweep

#: Pool splits passing the closed form that the Explorer simulates (the command line's
#: ``--slo-check`` default; each simulation of a pool split takes longer than a layout's).
SIMULATED_POOLS = 5


def check_disagg_slo(
    project: Project,
    sw: DisaggSweep,
    target_ms: float,
    rate: float,
    check: int,
    cancel: Callable[[], bool] | None = None,
) -> dict[str, Any]:
    """The disaggregated rows of ``sw`` in ranking order, one per pool split (at its best-ranked
    decode batch), served at ``rate`` requests/s (:func:`studio.service.slo.rate_load`): the closed
    form screens (saturated, or mean TTFT already above ``target_ms``), the first ``check``
    survivors are simulated request by request
    (:func:`studio.engine.disagg.simulate.simulate_disaggregated`) and their p99 TTFT decides.

    Returns the JSON-ready check: ``ttft_p99_ms``, ``rate_per_s``, ``requests``, ``checked`` (one
    entry per pool split, with its ``verdict``) and ``best`` (index of the first that meets the
    target, or None). ``cancel`` stops the screening between rows (what was checked is kept)."""
    from studio.engine.disagg.evaluate import evaluate_disaggregated
    from studio.engine.disagg.simulate import simulate_disaggregated

    at = rate_load(project, rate)
    seen: set[str] = set()
    checked: list[dict[str, Any]] = []
    simulated = 0
    for row in sw.rows:
        if cancel is not None and cancel():
            break
        key = row.mode.spec()  # its best-ranked decode batch
        if key in seen:
            continue
        seen.add(key)
        if len(seen) > MAX_SCREENED or simulated >= check:
            break
        p = project.replace(workload=project.workload.replace(batch=row.batch, load=at))
        res = evaluate_disaggregated(p, row.mode)
        entry: dict[str, Any] = {
            "pools": row.label,
            "spec": row.mode.spec(),
            "batch": row.batch,
            "saturation_rate_per_s": res.saturation_rate_per_s,
            "ttft_mean_ms": res.ttft_ms,
            "ttft_p50_ms": None,
            "ttft_p99_ms": None,
            "tpot_ms": res.tpot_ms,
            "meets": False,
        }
        if res.saturated:
            entry["verdict"] = (
                f"saturated (saturation {res.saturation_rate_per_s:.3g} req/s, the {res.limited_by})"
            )
        elif res.ttft_ms > target_ms:
            entry["verdict"] = f"mean TTFT {res.ttft_ms:,.0f} ms already above the target"
        else:
            sim = simulate_disaggregated(p, rate, row.mode, poisson=at.arrival == "poisson")
            simulated += 1
            entry.update(
                ttft_p50_ms=sim.ttft.p50, ttft_p99_ms=sim.ttft.p99, meets=sim.ttft.p99 <= target_ms
            )
            entry["verdict"] = (
                "meets" if entry["meets"] else f"p99 TTFT {sim.ttft.p99:,.0f} ms misses"
            )
        checked.append(entry)
    best = next((i for i, e in enumerate(checked) if e["meets"]), None)
    return {
        "ttft_p99_ms": target_ms,
        "rate_per_s": rate,
        "requests": at.num_requests,
        "checked": checked,
        "best": best,
    }


def slo_verdicts(slo: dict[str, Any] | None) -> dict[str, str]:
    """Pool spec → the verdict of :func:`check_disagg_slo` for each pool split it checked."""
    return {e["spec"]: e["verdict"] for e in slo["checked"]} if slo is not None else {}
