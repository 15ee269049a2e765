"""One layout on every serving engine, side by side: :func:`compare_engines`.

Each engine runs the project's layout with its own profile (newest version, or the project's
version for its own engine) and its own default memory fraction, as
:func:`studio.service.project_edits.engine_choice.with_engine` sets them — so the rows differ exactly by what the
engines do differently (scheduler time, graph padding, token budget, sequence limit, KV sizing).
"""

from __future__ import annotations

from dataclasses import dataclass

from studio.core.project import Project
from studio.engine.plan.results import PlanResult
from studio.engine.runtime import ENGINE_NAMES, ENGINES, engine_setup
from studio.service.project_edits.engine_choice import with_engine


@dataclass(frozen=True)
class EngineRow:
    """The plan of one engine."""

    engine: str
    name: str
    profile: str
    memory_fraction: float
    plan: PlanResult


def compare_engines(project: Project) -> list[EngineRow]:
    """The project's layout evaluated on vLLM, TensorRT-LLM and SGLang (the project's own engine
    keeps its version and memory fraction)."""
    from studio.engine import evaluate

    rows = []
    for engine in ENGINES:
        own = engine == project.serving.runtime
        p = project if own else with_engine(project, engine, None)
        rows.append(EngineRow(engine=engine, name=ENGINE_NAMES[engine], profile=engine_setup(p).profile.id,
                              memory_fraction=p.serving.gpu_memory_utilization, plan=evaluate(p, details=False)))
    return rows
