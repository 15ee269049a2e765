"""What the Explorer's Engines tab shows and does, apart from the Explorer's own module.

:func:`refresh_engines` puts the selected sweep row's layout, else the project's layout, at the
project's batch, on each serving engine (:func:`studio.service.explore.engine_compare.compare_engines`) into
the tab's :class:`~studio.gui.explorer.engines_view.EnginesView`; :func:`serve_with` makes one
engine the project's (one undo step, with that engine's default memory fraction).
"""

from __future__ import annotations

from studio.core.errors import StudioError
from studio.core.layout import Layout
from studio.core.project import Project
from studio.gui.document import ProjectDocument
from studio.gui.explorer.engines_view import EnginesView
from studio.service.explore.engine_compare import compare_engines
from studio.service.project_edits.engine_choice import ENGINE_NAMES, with_engine


def refresh_engines(view: EnginesView, project: Project, layout: Layout) -> None:
    """Fill ``view`` with ``layout`` of ``project`` on each engine, at the project's batch (so each
    engine admits what it can)."""
    title = (f"{layout.label} on each serving engine (each with its newest profile and default memory fraction; "
             f"the project's engine as set)")
    try:
        rows = compare_engines(project, layout, details=True)
    except StudioError as exc:
        view.clear_rows(f"{layout.label} cannot be compared across engines: {exc.message}")
        return
    view.set_rows(rows, title, current=project.serving.runtime)


def serve_with(doc: ProjectDocument, engine: str) -> bool:
    """``engine`` as the project's serving engine, newest profile (one undo step)."""
    if engine == doc.project.serving.runtime:
        return False
    return doc.edit(f"Engine {ENGINE_NAMES[engine]}", "serving", lambda p: with_engine(p, engine, None))


__all__ = ["refresh_engines", "serve_with"]
