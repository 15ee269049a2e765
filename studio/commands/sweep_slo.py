"""``sweep --ttft-p99 MS --tpot-p99 MS --at-rate R``: a latency SLO as percentiles at a request rate.

The CLI side only (flags, the text table); the check itself is :mod:`studio.service.slo`, the
same one the Explorer runs. Without any of these flags, the SLO stored in a project file's
Explorer settings (``explorer.ttft_p99_ms``, ``tpot_p99_ms``, ``slo_rate_per_s``) is checked.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from studio.commands.options.arg_types import positive_float, positive_int
from studio.commands.output import fmt, format_table

if TYPE_CHECKING:
    from studio.service.slo import SloReport, SloTargets

__all__ = ["add_slo_args", "format_slo", "slo_targets"]


def add_slo_args(parser: argparse.ArgumentParser) -> None:
    """Add ``--ttft-p99``, ``--tpot-p99``, ``--at-rate`` and ``--slo-check`` to ``sweep``."""
    g = parser.add_argument_group("latency SLO as percentiles (see docs/load.md)")
    g.add_argument(
        "--ttft-p99", type=positive_float, metavar="MS", help="p99 TTFT target, ms, at --at-rate"
    )
    g.add_argument(
        "--tpot-p99", type=positive_float, metavar="MS", help="p99 TPOT target, ms, at --at-rate"
    )
    g.add_argument(
        "--at-rate",
        type=positive_float,
        metavar="R",
        help="request rate (req/s, all replicas, Poisson) the SLO is checked at (default: --rate)",
    )
    g.add_argument(
        "--slo-check",
        type=positive_int,
        default=5,
        metavar="K",
        help="layouts passing the closed form that are simulated (default 5)",
    )


def slo_targets(args: argparse.Namespace, project) -> SloTargets | None:
    """The SLO of the flags; without any, the project's (its Explorer settings); None if neither.

    Raises
    ------
    StudioError
        ``--at-rate`` without a p99 target, or a target without any request rate.
    """
    ttft, tpot, rate = (getattr(args, n, None) for n in ("ttft_p99", "tpot_p99", "at_rate"))
    if ttft is None and tpot is None and rate is None:
        path = getattr(args, "project", None)
        if path is None:  # the bundled example has no SLO (and a sweep without one loads no SLO code)
            return None
        from studio.service.slo import project_targets

        # the SLO saved in the PROJECT file (the Explorer's, kept by project_from_args); the rate
        # may come from --rate
        return project_targets(project)
    from studio.service.slo import resolve_targets

    return resolve_targets(
        project, ttft, tpot, rate, names=("--ttft-p99", "--tpot-p99", "--at-rate")
    )


def format_slo(report: SloReport) -> str:
    """The SLO section of the readable sweep."""
    t = report.targets
    head = (
        f"SLO: {t.text} (Poisson; closed form screens, {report.requests:,} simulated requests "
        "check)"
    )
    rows = [
        [
            e.layout,
            str(e.micro_batches),
            fmt(e.saturation_rate_per_s),
            fmt(e.ttft_mean_ms),
            fmt(e.ttft_p99_ms),
            fmt(e.tpot_mean_ms),
            fmt(e.tpot_p99_ms),
            e.verdict,
        ]
        for e in report.checked
    ]
    table = format_table(
        ["layout", "M", "sat. req/s", "TTFT mean", "TTFT p99", "TPOT mean", "TPOT p99", "verdict"],
        rows,
        right={1, 2, 3, 4, 5, 6},
    )
    best = report.best
    if best is None:
        tail = "Best meeting the SLO: none of the layouts checked (lower the rate, raise the target or add GPUs)"
    else:
        e = report.checked[best]
        tail = (
            f"Best meeting the SLO: {e.layout}, M={e.micro_batches} (p99 TTFT {fmt(e.ttft_p99_ms)} ms, "
            f"p99 TPOT {fmt(e.tpot_p99_ms)} ms)"
        )
    return "\n\n".join([head, table, tail])
