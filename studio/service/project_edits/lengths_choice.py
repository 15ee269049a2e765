"""Choosing the request lengths of a project from a bundled workload: one edit for the window.

:func:`with_lengths` sets the workload's ISL/OSL to the distributions' means and the load's length
distributions to the workload's own (``presets/workloads``, or ``random:ISL:OSL[:RATIO]``); ``None``
goes back to fixed lengths at the current ISL/OSL. :func:`lengths_id` names the bundled workload a
project's load uses, if any.
"""

from __future__ import annotations

from studio.core.project import Project
from studio.core.workload import LengthDistribution
from studio.io.workloads import lengths_for, workload_presets


def with_lengths(project: Project, spec: str | None) -> Project:
    """``project`` drawing request lengths from ``spec`` (None = fixed at its ISL/OSL)."""
    wl = project.workload
    if spec is None:
        load = wl.load.replace(isl_dist=LengthDistribution(), osl_dist=LengthDistribution())
        return project.replace(workload=wl.replace(load=load))
    isl_d, osl_d, isl, osl, _ = lengths_for(spec)
    return project.replace(workload=wl.replace(isl=isl, osl=osl, load=wl.load.replace(isl_dist=isl_d, osl_dist=osl_d)))


def lengths_id(project: Project) -> str | None:
    """The bundled workload whose distributions the project's load holds, else None."""
    ld = project.workload.load
    for wid, p in workload_presets().items():
        if ld.isl_dist == p.isl and ld.osl_dist == p.osl:
            return wid
    return None
