"""The pinned layouts of a project as plans, each at the batch it was pinned at (the workload's
when it was pinned without one): what the Explorer's Compare tab shows, what Apply applies and
what the report lists as the alternatives, computed once here."""

from __future__ import annotations

from dataclasses import dataclass

from studio.core.errors import StudioError
from studio.core.layout import Layout
from studio.core.project import Project
from studio.engine import evaluate
from studio.engine.plan.results import PlanResult


@dataclass(frozen=True)
class PinnedPlan:
    """One pinned layout: its plan at the pinned batch, or why the engine refused it."""

    layout: Layout
    #: The batch it was pinned at (``None``: pinned without one; the workload's batch is used).
    batch: int | None
    plan: PlanResult | None
    #: The engine's refusal when there is no plan.
    error: str = ""

    @property
    def title(self) -> str:
        """``TP8×PP2 M=2 batch 24`` (no batch when pinned without one)."""
        lay = self.layout
        return f"{lay.label} M={lay.micro_batches}" + (f" batch {self.batch}" if self.batch is not None else "")


def at_pinned_batch(project: Project, layout: Layout) -> Project:
    """``project`` with the workload's batch set to the one ``layout`` was pinned at (unchanged
    when it was pinned without one)."""
    batch = project.pinned_batch(layout)
    return project if batch is None else project.replace(workload=project.workload.replace(batch=batch))


def pinned_plans(project: Project) -> list[PinnedPlan]:
    """Every pinned layout of ``project`` in pin order, evaluated at its pinned batch."""
    out = []
    for layout in project.pinned:
        batch = project.pinned_batch(layout)
        try:
            out.append(PinnedPlan(layout, batch, evaluate(at_pinned_batch(project, layout), layout)))
        except StudioError as exc:
            out.append(PinnedPlan(layout, batch, None, str(exc)))
    return out
