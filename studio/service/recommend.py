"""The layout recommendation, one way for every caller: the project's objective and targets.

The Explorer and "Best layout for my targets" both sweep with :func:`sweep_kwargs`, so they can
never recommend different layouts; applying a row sets its layout, micro-batches and batch in one
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


def recommend(project: Project):  # noqa: ANN201 - SweepResult (engine import kept lazy)
    """Sweep ``project`` with its own objective and targets (:func:`sweep_kwargs`)."""
    from studio.engine.sweep import sweep

    return sweep(project, **sweep_kwargs(project))


def with_row(project: Project, layout: Layout, batch: int) -> Project:
    """``project`` running ``layout`` (its micro-batches included) at ``batch`` sequences per
    replica, as a sweep row shows it."""
    return project.replace(layout=layout, workload=project.workload.replace(batch=int(batch)))
