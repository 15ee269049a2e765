"""Does the layout an export actually runs fit? (The engine may only express a nearby layout.)

An exporter that cannot express the plan's layout for an engine writes the nearest one it can
(``ExportBundle.nearest_layout``). That layout is costed again here, so the export dialog never
says "fits" for files that run something else: it names the layout the files run, whether it fits,
and, when it does not, the recommended layout (the project's objective and targets) as the way out.
"""

from __future__ import annotations

from dataclasses import dataclass

from studio.core.errors import StudioError
from studio.core.layout import Layout
from studio.core.project import Project


@dataclass(frozen=True)
class ExportedLayoutVerdict:
    """The verdict on the layout the files run."""

    layout: Layout
    fits: bool
    reason: str  # the engine's fit reason, or why the layout cannot be costed
    proposal: str | None = None  # label of a layout that fits, when this one does not


def verdict_for(project: Project, layout: Layout) -> ExportedLayoutVerdict:
    """Cost ``layout`` on ``project``; when it does not fit, propose the recommended layout."""
    from studio.engine import evaluate

    try:
        plan = evaluate(project, layout.replace(placement=None), details=False)
        fits, reason = plan.fits, plan.fit_reason
    except StudioError as exc:
        fits, reason = False, str(exc)
    if fits:
        return ExportedLayoutVerdict(layout, True, reason)
    from studio.service.explore.recommend import recommend

    proposal = None
    try:
        sw = recommend(project)
        if sw.recommended is not None:
            proposal = sw.layout(sw.recommended).label
    except StudioError:
        proposal = None
    return ExportedLayoutVerdict(layout, False, reason, proposal)
