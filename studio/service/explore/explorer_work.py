"""The Explorer's work for the scheduler (:mod:`studio.service.scheduler`): sweep the frozen
project, then check its percentile SLO (:func:`studio.service.slo.sweep_with_slo`). The engine's
``progress`` callback is the job's, so Cancel stops the sweep or the SLO check at its next layout."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from studio.core.project import Project
from studio.service.scheduler import Job, Work
from studio.service.slo import Explored, SloTargets, sweep_with_slo

Sweeper = Callable[..., object]

#: Layouts passing the closed form that the Explorer simulates at the SLO's rate (each takes
#: ~10–30 ms; the check stops after the last, so lower-ranked layouts show "—").
SIMULATED = 32


def explore_work(sweeper: Sweeper, simulate: int = SIMULATED) -> Work:
    """``work((project, sweep_kwargs, targets), job) -> Explored``."""

    def work(payload: tuple[Project, dict[str, Any], SloTargets | None], job: Job) -> Explored:
        project, kwargs, targets = payload
        return sweep_with_slo(
            project, sweeper, kwargs, targets, simulate=simulate, progress=job.progress
        )

    return work
