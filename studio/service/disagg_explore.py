"""The Explorer's disaggregated candidates: beside the aggregated sweep, every prefill/decode pool
split of the cluster (:func:`studio.engine.disagg_sweep.sweep_disaggregated`) under the same
objective and targets, so that both kinds sit on one Pareto plot.

:func:`with_pools` wraps the Explorer's work (:func:`studio.service.explorer_work.explore_work`):
a payload ``(project, sweep_kwargs, targets, disaggregated)`` with ``disaggregated`` true also
sweeps the pools and answers an :class:`ExploredPools`; without it the wrapped work's answer comes
back unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from studio.core.errors import StudioError
from studio.core.project import Project
from studio.core.serving_mode import ServingMode
from studio.service.scheduler import Job, Work
from studio.service.slo import Explored


@dataclass(frozen=True)
class ExploredPools(Explored):
    """:class:`Explored` with the disaggregated candidates swept beside it."""

    disagg: Any = None  # studio.engine.disagg_sweep.DisaggSweep
    disagg_error: str = ""  # why the disaggregated sweep could not run ("" when it did)


def with_pools(work: Work) -> Work:
    """``work`` that also sweeps the disaggregated candidates when the payload's fourth item is true."""

    def run(payload: tuple, job: Job) -> Any:
        project, kwargs, targets, *rest = payload
        out = work((project, kwargs, targets), job)
        if not (rest and rest[0]) or job.cancelled or getattr(out, "cancelled", False):
            return out
        from studio.engine.disagg_sweep import sweep_disaggregated

        try:
            pools = sweep_disaggregated(
                project,
                objective=kwargs.get("objective", "throughput"),
                ttft_ms=kwargs.get("ttft_ms"),
                tpot_ms=kwargs.get("tpot_ms"),
                cancel=lambda: job.cancelled,
            )
        except StudioError as exc:
            return ExploredPools(out.sweep, out.slo, out.slo_error, disagg_error=exc.message)
        return ExploredPools(out.sweep, out.slo, out.slo_error, disagg=pools)

    return run


def applied_pools(project: Project, mode: ServingMode, batch: int) -> Project:
    """``project`` served as the disaggregated candidate ``mode`` at ``batch`` sequences per decode
    worker (the project's KV-transfer backend kept), as the Explorer's "Apply pools" makes it."""
    assert mode.prefill is not None and mode.decode is not None
    new = mode.replace(
        decode=mode.decode.replace(max_batch=batch),
        transfer_backend=project.serving_mode.transfer_backend,
    )
    return project.replace(serving_mode=new)
