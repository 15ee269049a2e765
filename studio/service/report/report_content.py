"""What the report says: the chosen plan, the alternatives it is compared with, the sweep and the
export commands — gathered from the engine, with no drawing."""

from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass

from studio.core.errors import StudioError
from studio.core.layout import Layout
from studio.core.project import Project
from studio.engine import SweepResult, evaluate, sweep
from studio.engine.plan.results import PlanResult
from studio.engine.serving.simulate import SimulationResult
from studio.service.explore.pinned import pinned_plans


#: Engines whose launch commands go into the appendix, with their display names.
def _export_engines() -> tuple[tuple[str, str], ...]:
    """``(engine id, label)`` of every engine the exports target (``studio.io.export.engines``)."""
    from studio.io.export import ENGINE_LABELS

    return tuple(ENGINE_LABELS.items())


MAX_ALTERNATIVES = 3


@dataclass(frozen=True)
class Option:
    """One layout shown in the report: a name, where it came from, and its full plan."""

    name: str
    origin: str  # "chosen", "pinned" or "sweep"
    plan: PlanResult


@dataclass(frozen=True)
class ReportData:
    """Everything the report shows, computed once.

    Attributes
    ----------
    project:
        The project reported on.
    chosen:
        The project's current layout.
    alternatives:
        Up to three other layouts: the pinned ones, else the sweep's best distinct layouts.
    sweep:
        The sweep of the cluster for ``objective`` (the Pareto plot's points).
    exports:
        ``(engine display name, command text or the reason it could not be exported)``.
    simulation:
        The project's load run through the request simulation (p50/p90/p99), when the layout fits.
    """

    project: Project
    objective: str
    chosen: Option
    alternatives: tuple[Option, ...]
    sweep: SweepResult
    exports: tuple[tuple[str, str], ...]
    created: _dt.datetime
    simulation: SimulationResult | None = None  # the project's load, simulated (percentiles)
    simulation_note: str = ""  # why there is no simulation, or how it was sized
    #: The fleet a day of traffic needs (studio.service.fleet.FleetResult), when one was planned.
    fleet: object | None = None
    #: The chosen layout with prefix caching off and no KV tier beyond HBM, when the plan caches
    #: prefixes (what reuse changes, for the report's "Prompt reuse and KV tiers").
    without_reuse: PlanResult | None = None

    @property
    def options(self) -> tuple[Option, ...]:
        """The chosen layout first, then the alternatives."""
        return (self.chosen, *self.alternatives)


def layout_key(layout: Layout) -> tuple[int, int, int, int]:
    """Identity of a layout for "is it the same split": (TP, PP, DP, EP)."""
    return (layout.tp, layout.pp, layout.dp, layout.ep)


def option_name(layout: Layout) -> str:
    """Short display name, e.g. ``TP8×PP2 · M=2``."""
    return f"{layout.label} · M={layout.micro_batches}"


def _pinned_options(project: Project, chosen: Layout) -> list[Option]:
    """The pinned layouts other than the chosen one, each at the batch it was pinned at (the
    workload's when it was pinned without one), as the Explorer's Compare tab and Apply show them
    (:func:`studio.service.explore.pinned.pinned_plans`)."""
    out: list[Option] = []
    for pin in pinned_plans(project):
        if pin.layout == chosen or len(out) == MAX_ALTERNATIVES:
            continue
        if pin.plan is None:
            raise StudioError(f"pinned layout {pin.layout.label} cannot be evaluated: {pin.error}")
        out.append(Option(option_name(pin.plan.layout), "pinned", pin.plan))
    return out


def _sweep_options(result: SweepResult, chosen: Layout) -> list[Option]:
    """The best rows of the sweep whose (TP, PP, DP, EP) differs from the chosen layout's and from
    each other's, in the objective's order."""
    seen = {layout_key(chosen)}
    out: list[Option] = []
    for i in result.order:
        i = int(i)
        if not bool(result.columns["fits"][i]):
            continue
        key = layout_key(result.layout(i))
        if key in seen:
            continue
        seen.add(key)
        plan = result.plan(i)
        out.append(Option(f"{option_name(plan.layout)} · batch {plan.batch}", "sweep", plan))
        if len(out) == MAX_ALTERNATIVES:
            break
    return out


def commands_only(text: str) -> str:
    """An export without its leading comment block of headline figures, assumptions and warnings
    (the report shows those already); the note on what the engine runs differently is kept."""
    lines = text.splitlines()
    first = next((i for i, line in enumerate(lines) if line.strip() and not line.startswith("#")), len(lines))
    differ = next((i for i in range(first) if lines[i].startswith("# What ")), None)
    if differ is None:  # no such note: keep from the blank line that ends the header block
        differ = max((i + 1 for i in range(first) if not lines[i].strip()), default=first)
    return "\n".join(lines[differ:]).strip("\n")


#: Nodes whose launch commands the appendix shows per section; the rest are counted in one line
#: (at 512 nodes the commands ran to hundreds of pages).
MAX_NODES_SHOWN = 4
_NODE_LINE = re.compile(r"# on node (\d{1,6})\b")


def abridge_nodes(text: str, engine: str, keep: int = MAX_NODES_SHOWN) -> str:
    """``text`` with the per-node command blocks (``# on node N: …`` up to the next such line or
    ``# ===`` section header) of only the first ``keep`` nodes of each section, and one line
    saying how many nodes were left out and where to get every command."""
    out: list[str] = []
    kept: list[str] = []  # node numbers shown in this section, in order
    left: set[str] = set()
    skipping = False

    def note() -> None:
        if left:
            out.append(f"# … and {len(left):,} more node{'s' if len(left) != 1 else ''}: the same commands with "
                       f"each node's own rank and host (`layout-studio export --engine {engine}` writes every one)")
            left.clear()

    for line in text.splitlines():
        if line.startswith("# ==="):
            note()
            kept, skipping = [], False
            out.append(line)
            continue
        m = _NODE_LINE.match(line)
        if m:
            node = m.group(1)
            if node not in kept and len(kept) < keep:
                kept.append(node)
            skipping = node not in kept
            if skipping:
                left.add(node)
        if not skipping:
            out.append(line)
    note()
    return "\n".join(out)


def _exports(project: Project, plan: PlanResult) -> tuple[tuple[str, str], ...]:
    from studio.io.export import export_plan

    out = []
    from studio.io.export.checks.check import check

    for engine, title in _export_engines():
        try:
            bundle = export_plan(project, plan, engine=engine, fmt="command")
            text = abridge_nodes(commands_only("\n".join(t.rstrip("\n") for t in bundle.files.values())), engine)
            if bundle.recipe is not None:
                report = check(bundle.recipe)  # the engine's own validation too, where it is installed
                verdict = report.lines()
                if report.engine_checked is None:
                    verdict.append("export --check: the engine's start-up rules only; `layout-studio export "
                                   "--check` also runs the engine's own validators where it is installed (or "
                                   "in the environment of the Python named by --engine-python)")
                text = "".join(f"# {line}\n" for line in verdict) + text
        except StudioError as exc:
            text = f"# {title} cannot run this layout: {exc}"
        out.append((title, text))
    return tuple(out)


def gather(project: Project, objective: str | None = None, now: _dt.datetime | None = None) -> ReportData:
    """Evaluate the project's layout, sweep the cluster and pick the alternatives.

    Parameters
    ----------
    project:
        The project to report on.
    objective:
        The sweep objective that orders the alternatives (``throughput``, ``cost``, ``latency``);
        ``None`` = the project's own (``project.explorer.objective``, the Explorer's).
    now:
        The report's date (default: now).

    Raises
    ------
    StudioError
        The project's layout (or a pinned one) cannot exist on its cluster, or the objective is
        unknown.
    """
    objective = objective or project.explorer.objective
    plan = evaluate(project)
    result = sweep(project, objective=objective)  # type: ignore[arg-type]
    alternatives = _pinned_options(project, project.layout) or _sweep_options(result, plan.layout)
    chosen = Option(option_name(plan.layout), "chosen", plan)
    simulation, note = _simulate(project, plan)
    return ReportData(
        project=project,
        objective=objective,
        chosen=chosen,
        alternatives=tuple(alternatives),
        sweep=result,
        exports=_exports(project, plan),
        created=now or _dt.datetime.now(),
        simulation=simulation,
        simulation_note=note,
        without_reuse=_without_reuse(project) if plan.prefix_cache is not None else None,
    )


def _without_reuse(project: Project) -> PlanResult:
    """The project's layout planned with prefix caching off and no host / NVMe KV tier."""
    from studio.core.settings.reuse import KVTiers

    return evaluate(project.replace(serving=project.serving.replace(kv_tiers=KVTiers(prefix_cache=False))))


#: Most requests the report simulates (the percentiles settle well before; keeps the report quick).
REPORT_REQUESTS = 1000


def _simulate(project: Project, plan: PlanResult) -> tuple[SimulationResult | None, str]:
    """The project's load through the request simulation, for the report's percentiles."""
    from studio.engine.serving.under_load import simulate_plan

    if not plan.fits:
        return None, "the layout does not fit, so nothing is served"
    if plan.load is not None and plan.load.saturated:
        return None, plan.load.note
    load = project.workload.load
    n = min(load.num_requests, REPORT_REQUESTS)
    try:
        sim = simulate_plan(project, load=load.replace(num_requests=n))
    except StudioError as exc:
        return None, str(exc)
    return sim, f"{n:,} requests simulated, seed {load.seed}"
