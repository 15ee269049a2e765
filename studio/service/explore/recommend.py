"""The layout recommendation, one way for every caller: the project's objective and targets.

The Explorer and "Best layout for my targets" both sweep with :func:`sweep_kwargs` and, when the
project holds a percentile SLO, check it the same way (:func:`best_row`), so they can never
recommend different layouts; applying a row sets its layout, micro-batches and batch in one
project value (:func:`with_row`).
"""

from __future__ import annotations

from typing import Any

from studio.core.layout import Layout
from studio.core.project import Project


def sweep_kwargs(project: Project) -> dict[str, Any]:
    """Keyword arguments of :func:`studio.engine.sweep` for ``project``: its Explorer objective and
    its workload's TTFT / TPOT targets."""
    return {
        "objective": project.explorer.objective,
        "ttft_ms": project.workload.ttft_ms,
        "tpot_ms": project.workload.tpot_ms,
    }


def recommend(project: Project):
    """Sweep ``project`` with its own objective and targets (:func:`sweep_kwargs`)."""
    from studio.engine.search.sweep import sweep

    return sweep(project, **sweep_kwargs(project))


#: Layouts passing the closed form that are simulated at the SLO's rate (the Explorer's figure).
SLO_SIMULATED = 32


def best_row(project: Project) -> tuple[Any, int | None, str]:
    """The sweep of ``project``, the row to apply and, when there is none, why.

    Without a percentile SLO the row is the sweep's recommendation; with one (``explorer.ttft_p99_ms``
    / ``tpot_p99_ms`` at ``slo_rate_per_s``) it is the best-ranked layout whose simulated p99s meet it,
    exactly as the Explorer ranks them.

    Raises
    ------
    StudioError
        The sweep fails, or the SLO is set without a rate to hold it at.
    """
    from studio.engine.search.sweep import sweep
    from studio.service.slo import project_targets, sweep_with_slo

    targets = project_targets(project)
    explored = sweep_with_slo(project, sweep, sweep_kwargs(project), targets, simulate=SLO_SIMULATED)
    result = explored.sweep
    if targets is None:
        if result.recommended is None:
            return result, None, "No layout meets the targets on this cluster; relax TTFT/TPOT or add GPUs"
        return result, int(result.recommended), ""
    row = explored.slo.best_row if explored.slo is not None else None
    if row is None:
        why = explored.slo_error or f"No layout meets the SLO ({targets.text}); relax it or add GPUs"
        return result, None, why
    return result, int(row), ""


def with_row(project: Project, layout: Layout, batch: int) -> Project:
    """``project`` running ``layout`` (its micro-batches included) at ``batch`` sequences per
    replica, as a sweep row shows it. A project whose batch is "auto" keeps "auto" when ``batch``
    is what "auto" gives on ``layout`` (the sweep's own auto batch), so applying the recommended row
    does not silently pin the batch."""
    if project.workload.batch == "auto":
        from studio.core.errors import StudioError
        from studio.engine.plan.evaluate import evaluate

        moved = project.replace(layout=layout)
        try:
            if evaluate(moved, details=False).batch == int(batch):
                return moved
        except StudioError:
            pass
    return project.replace(layout=layout, workload=project.workload.replace(batch=int(batch)))
