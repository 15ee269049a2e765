"""A single-layout plan in one line, written once for every reader: the window's status bar, the
headless run's first-plan print, the export dialog's header and ``import-topo``'s report.

Each figure follows the plan's status (:class:`studio.engine.plan.results.PlanStatus`): a layout
that does not fit, or was not computed, shows no figures; a saturated open loop has no TTFT. The
disaggregated plan has its own summary, :mod:`studio.engine.disagg.summary`.
"""

from __future__ import annotations

from dataclasses import dataclass

from studio.engine.plan.results import PlanResult
from studio.service import units

#: Status codes under which the plan runs no requests at all.
NOT_RUNNING = ("DOES_NOT_FIT", "NOT_COMPUTED")


@dataclass(frozen=True)
class PlanSummary:
    """The facts of a plan's one-line summary, each already in words.

    ``verdict`` is ``fits``, ``does not fit``, ``not computed`` or ``Saturated at 2.56 req/s``;
    ``reason`` says why when the plan does not run ("" otherwise). A figure the status voids is
    None.
    """

    layout: str
    gpus: int
    idle: int
    code: str
    verdict: str
    reason: str
    ttft: str | None
    tpot: str | None
    throughput: str | None

    @property
    def runs(self) -> bool:
        """Whether the layout runs (fits and was computed)."""
        return self.code not in NOT_RUNNING

    @property
    def idle_text(self) -> str:
        """``3 GPUs idle`` ("" when the layout uses every drawn GPU)."""
        n = self.idle
        return f"{n} GPU{'s' if n != 1 else ''} idle" if n else ""


def plan_summary(r: PlanResult) -> PlanSummary:
    """The summary facts of the single-layout plan ``r``."""
    st = r.status
    runs = st.code not in NOT_RUNNING
    if st.code == "SATURATED":
        verdict = st.headline[:1].upper() + st.headline[1:]
    elif runs:
        verdict = "fits"
    else:
        verdict = st.headline
    return PlanSummary(
        layout=r.layout.label,
        gpus=r.gpus,
        idle=len(r.idle_gpus),
        code=st.code,
        verdict=verdict,
        reason="" if runs else st.reason,
        ttft=units.duration_ms(r.ttft_ms, 0) if runs and st.shows("ttft") else None,
        tpot=units.duration_ms(r.tpot_ms) if runs and st.shows("tpot") else None,
        throughput=f"{r.output_tokens_per_s:,.0f} tok/s" if runs and st.shows("throughput") else None,
    )


def status_line(r: PlanResult) -> str:
    """The short variant, for the status bar: ``TP8×PP2 · 16 GPUs · fits · TTFT 602 ms · TPOT
    12.3 ms · 2 GPUs idle``; ``TP8 · 8 GPUs · does not fit``; ``… · Saturated at 2.56 req/s · no
    TTFT · TPOT …``."""
    s = plan_summary(r)
    head = f"{s.layout} · {s.gpus} GPUs"
    if not s.runs:
        return f"{head} · {s.verdict}"
    parts = [head, s.verdict, f"TTFT {s.ttft}" if s.ttft is not None else "no TTFT"]
    if s.tpot is not None:
        parts.append(f"TPOT {s.tpot}")
    if s.idle_text:
        parts.append(s.idle_text)
    return " · ".join(parts)


def headline(r: PlanResult) -> str:
    """The long variant, for printed reports: ``TP8×PP2 on 16 GPUs, fits; TTFT 602 ms, TPOT 12.3 ms,
    63,400 tok/s``; a plan that does not run says why: ``TP8 on 8 GPUs, does not fit (weights …)``."""
    s = plan_summary(r)
    head = f"{s.layout} on {s.gpus} GPUs"
    if s.idle:
        head += f" ({s.idle_text})"
    if not s.runs:
        return f"{head}, {s.verdict} ({s.reason})" if s.reason else f"{head}, {s.verdict}"
    figs = [f"TTFT {s.ttft}" if s.ttft is not None else "no TTFT"]
    figs += [f"TPOT {s.tpot}"] if s.tpot is not None else []
    figs += [s.throughput] if s.throughput is not None else []
    return f"{head}, {s.verdict}; {', '.join(figs)}"
