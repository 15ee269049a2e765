"""The Explorer's disaggregated candidates: beside the aggregated sweep, every prefill/decode pool
split of the cluster (:func:`studio.engine.disagg.sweep.sweep_disaggregated`) under the same
objective and targets, so that both kinds sit on one Pareto plot.

:func:`with_pools` wraps the Explorer's work (:func:`studio.service.explore.explorer_work.explore_work`):
a payload ``(project, sweep_kwargs, targets, disaggregated)`` with ``disaggregated`` true also
sweeps the pools and answers an :class:`ExploredPools`; without it the wrapped work's answer comes
back unchanged.

The Explorer's table lists the candidates as rows beside the layouts: :func:`disagg_cell` is a
candidate's value in each column (NaN where a column is a layout's own: TP, PP, M, bubble…),
:func:`merged_order` ranks both kinds together under the sweep's objective.
"""

from __future__ import annotations

import heapq
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from studio.core.errors import StudioError
from studio.core.project import Project
from studio.core.serving_mode import ServingMode
from studio.service.scheduler import Job, Work
from studio.service.slo import Explored


@dataclass(frozen=True)
class ExploredPools(Explored):
    """:class:`Explored` with the disaggregated candidates swept beside it."""

    disagg: Any = None  # studio.engine.disagg.sweep.DisaggSweep
    disagg_error: str = ""  # why the disaggregated sweep could not run ("" when it did)
    #: The candidates' p99 TTFT check at the SLO's rate (:func:`studio.service.disagg_slo.check_disagg_slo`;
    #: None without a p99 TTFT target).
    disagg_slo: dict[str, Any] | None = None


def with_pools(work: Work) -> Work:
    """``work`` that also sweeps the disaggregated candidates when the payload's fourth item is true."""

    def run(payload: tuple, job: Job) -> Any:
        project, kwargs, targets, *rest = payload
        out = work((project, kwargs, targets), job)
        if not (rest and rest[0]) or job.cancelled or getattr(out, "cancelled", False):
            return out
        from studio.engine.disagg.sweep import sweep_disaggregated

        try:
            pools = sweep_disaggregated(
                project,
                objective=kwargs.get("objective", "throughput"),
                ttft_ms=kwargs.get("ttft_ms"),
                tpot_ms=kwargs.get("tpot_ms"),
                cancel=lambda: job.cancelled,
            )
        except StudioError as exc:
            return ExploredPools(out.sweep, out.slo, out.slo_error, disagg_error=exc.message)
        slo = None
        if targets is not None and targets.ttft_p99_ms is not None and not job.cancelled:
            from studio.service.disagg_slo import SIMULATED_POOLS, check_disagg_slo

            slo = check_disagg_slo(project, pools, targets.ttft_p99_ms, targets.rate_per_s, SIMULATED_POOLS,
                                   cancel=lambda: job.cancelled)
        return ExploredPools(out.sweep, out.slo, out.slo_error, disagg=pools, disagg_slo=slo)

    return run


def applied_pools(project: Project, mode: ServingMode, batch: int) -> Project:
    """``project`` served as the disaggregated candidate ``mode`` at ``batch`` sequences per decode
    worker (the project's KV-transfer backend kept), as the Explorer's "Apply pools" makes it."""
    assert mode.prefill is not None and mode.decode is not None
    new = mode.replace(
        decode=mode.decode.replace(max_batch=batch),
        transfer_backend=project.serving_mode.transfer_backend,
    )
    return project.replace(serving_mode=new)


#: Words a disaggregated candidate answers to in the Explorer's filter, beside its pools' label.
DISAGG_WORDS = ("disagg", "disaggregated", "pools")
_NAN = float("nan")


def disagg_cell(row: Any, key: str, verdicts: dict[str, str] | None = None) -> object:
    """The Explorer table's raw value of column ``key`` for disaggregated candidate ``row`` (a
    :class:`studio.engine.disagg.sweep.DisaggRow`): its figure where the column applies, NaN where
    the column is a single layout's (TP, PP, EP, DP, CP, M, GiB/GPU, KV tokens, bubble, warnings);
    for the percentile SLO its pool split's verdict in ``verdicts`` (pool spec → verdict,
    :func:`studio.service.disagg_slo.slo_verdicts`), ``—`` when it was not checked."""
    if key == "layout":
        return row.label
    if key == "reason":
        return row.why()
    if key == "slo":
        return (verdicts or {}).get(row.mode.spec(), "—")
    if key == "fits":
        return True  # the sweep keeps only pools whose workers fit
    if key == "meets_targets":
        return bool(row.meets_targets)
    values = {
        "batch": row.batch,
        "ttft_ms": row.ttft_ms,
        "tpot_ms": row.tpot_ms,
        "tokens_per_s": row.tokens_per_s,
        "tokens_per_s_per_gpu": row.tokens_per_s_per_gpu,
        "tokens_per_s_per_user": row.tokens_per_s_per_user,
        "usd_per_million": row.usd_per_million,
    }
    return values.get(key, _NAN)


def label_words(label: str, disaggregated: bool = False) -> list[str]:
    """The words the Explorer's filter matches: ``TP8×PP2`` → tp8, pp2; ``2P(TP4)+1D(TP8)`` → 2p,
    tp4, 1d, tp8 and :data:`DISAGG_WORDS`."""
    words = [w for w in re.split(r"[^a-z0-9]+", label.lower().replace("=", "")) if w]
    return words + list(DISAGG_WORDS) if disaggregated else words


def _objective_key(objective: str, per_gpu: float, usd: float, tpot: float) -> float:
    """The figure the sweep ranks by first within a tier (as :func:`studio.engine.search.sweep._order`
    and the disaggregated sweep do)."""
    v = usd if objective == "cost" else tpot if objective == "latency" else -per_gpu
    return v if math.isfinite(v) or v == math.inf else math.inf


def merged_order(
    result: Any, agg_rows: Sequence[int], disagg_rows: Sequence[Any], objective: str
) -> list[tuple[bool, int]]:
    """Both kinds in one ranking: ``(is_disaggregated, index)`` per table row. Each kind keeps
    its own order (``agg_rows``: sweep rows best first; ``disagg_rows``: the disaggregated
    sweep's, best first); they merge by tier (fits and meets the targets, fits, does not fit) and
    then by the objective's first figure (tok/s per GPU, $ per million tokens, or TPOT)."""
    cols = result.columns

    def agg() -> Iterable[tuple[tuple[int, float], bool, int]]:
        for i in agg_rows:
            i = int(i)
            fits = bool(cols["fits"][i])
            tier = 0 if fits and bool(cols["meets_targets"][i]) else 1 if fits else 2
            key = _objective_key(objective, float(cols["tokens_per_s_per_gpu"][i]),
                                 float(cols["usd_per_million"][i]), float(cols["tpot_ms"][i]))
            yield (tier, key), False, i

    def dis() -> Iterable[tuple[tuple[int, float], bool, int]]:
        for k, r in enumerate(disagg_rows):
            key = _objective_key(objective, r.tokens_per_s_per_gpu, r.usd_per_million, r.tpot_ms)
            yield (0 if r.meets_targets else 1, key), True, k

    return [(kind, i) for _key, kind, i in heapq.merge(agg(), dis(), key=lambda t: t[0])]
