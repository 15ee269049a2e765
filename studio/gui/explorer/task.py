"""The Explorer's sweep as scheduler work (:mod:`studio.service.scheduler`): the engine's
``progress`` callback is the job's, so Cancel stops the sweep at its next layout."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from studio.core.project import Project
from studio.service.scheduler import Job, Work

Sweeper = Callable[..., object]


def sweep_work(sweeper: Sweeper) -> Work:
    """``work((project, kwargs), job)``: ``sweeper(project, progress=job.progress, **kwargs)``."""

    def work(payload: tuple[Project, dict[str, Any]], job: Job) -> object:
        project, kwargs = payload
        return sweeper(project, progress=job.progress, **kwargs)

    return work
