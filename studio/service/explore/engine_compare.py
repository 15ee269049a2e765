"""One layout on every serving engine, side by side: :func:`compare_engines`.

Each engine runs the layout with its own profile (newest version, or the project's version for its
own engine) and its own default memory fraction, as
:func:`studio.service.project_edits.engine_choice.with_engine` sets them — so the rows differ exactly
by what the engines do differently (scheduler time, graph padding, token budget, sequence limit, KV
sizing). Each row carries the headline figures (:data:`FIGURES`) and the profile values behind them
(:class:`ProfileValue`, read from the plan's ``engine`` explanation with the source the profile
cites); :func:`differing` names the values that are not the same on every engine. The command
line (``plan --compare-engines``) and the Explorer's Engines tab show the same rows.
"""

from __future__ import annotations

from dataclasses import dataclass

from studio.core.layout import Layout
from studio.core.project import Project
from studio.engine.plan.results import PlanResult
from studio.engine.runtime import ENGINE_NAMES, ENGINES, engine_setup
from studio.service.project_edits.engine_choice import with_engine

#: The headline figures of a comparison: (label, PlanResult attribute, unit, higher is better).
FIGURES: tuple[tuple[str, str, str, bool], ...] = (
    ("TPOT", "tpot_ms", "ms", False),
    ("TTFT", "ttft_ms", "ms", False),
    ("Throughput", "output_tokens_per_s", "tok/s", True),
    ("KV capacity", "kv_capacity_tokens", "tokens", True),
    ("Batch", "batch", "sequences", True),
)

#: The terms of the plan's engine explanation a comparison shows, in this order.
PROFILE_TERMS = ("token budget", "running-sequence limit", "memory fraction", "KV pool (tightest stage)",
                 "CUDA-graph sizes captured", "graph padding", "scheduler CPU", "scheduler exposed",
                 "chunked prefill", "prefix caching")


@dataclass(frozen=True)
class ProfileValue:
    """One engine value behind a plan: ``name = value unit``, and where it comes from."""

    name: str
    value: float
    unit: str
    source: str


@dataclass(frozen=True)
class EngineRow:
    """The plan of one engine."""

    engine: str
    name: str
    profile: str
    memory_fraction: float
    memory_mode: str
    plan: PlanResult
    values: tuple[ProfileValue, ...] = ()
    note: str | None = None  # the version fallback note, when the engine's version had no profile

    def figure(self, attr: str) -> float:
        """A headline figure of the plan (:data:`FIGURES`)."""
        return float(getattr(self.plan, attr))

    def value(self, name: str) -> ProfileValue | None:
        """The profile value called ``name``, if the row has it."""
        return next((v for v in self.values if v.name == name), None)


def _values(plan: PlanResult) -> tuple[ProfileValue, ...]:
    ex = plan.explanations.get("engine")
    if ex is None:
        return ()
    terms = {t.name: t for t in ex.terms}
    return tuple(ProfileValue(n, float(terms[n].value), terms[n].unit, terms[n].note)
                 for n in PROFILE_TERMS if n in terms)


def compare_engines(project: Project, layout: Layout | None = None, *, details: bool = False) -> list[EngineRow]:
    """``layout`` (default: the project's) evaluated on vLLM, TensorRT-LLM and SGLang; the project's
    own engine keeps its version and memory fraction.

    ``details`` also fills each row's :attr:`EngineRow.values` (the plan's engine explanation).

    Raises
    ------
    StudioError
        If the layout cannot be costed on this cluster (as :func:`studio.engine.evaluate`).
    """
    from studio.engine import evaluate

    rows = []
    for engine in ENGINES:
        own = engine == project.serving.runtime
        p = project if own else with_engine(project, engine, None)
        lay = layout if layout is not None else p.layout
        setup = engine_setup(p, lay.tp, lay.pp)
        plan = evaluate(p, layout, details=details)
        rows.append(EngineRow(engine=engine, name=ENGINE_NAMES[engine], profile=setup.profile.id,
                              memory_fraction=p.serving.gpu_memory_utilization, memory_mode=setup.memory_mode,
                              plan=plan, values=_values(plan) if details else (), note=setup.resolved.note))
    return rows


def differing(rows: list[EngineRow]) -> list[str]:
    """Names of the profile values that are not the same on every row, in :data:`PROFILE_TERMS`
    order: the engine values behind the differences of the figures."""
    out = []
    for name in PROFILE_TERMS:
        seen = {round(v.value, 6) for r in rows if (v := r.value(name)) is not None}
        if len(seen) > 1:
            out.append(name)
    return out


__all__ = ["FIGURES", "PROFILE_TERMS", "EngineRow", "ProfileValue", "compare_engines", "differing"]
