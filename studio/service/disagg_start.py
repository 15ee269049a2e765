"""Where disaggregated serving starts: the sweep's best pool split for the cluster (Qt-free).

Switching a project to disaggregated serving, or pressing "Balance the pools", asks
:func:`best_pools`: every prefill / decode worker shape and split the drawn GPUs allow
(:func:`studio.engine.disagg.sweep.sweep_disaggregated`), ranked for the project's objective and
targets, and the best row's pools. One prefill and one decode worker of the layout's TP is no
start: on a cluster of two servers its prefill pool is nearly always busy and TTFT is mostly
queueing.
"""

from __future__ import annotations

from dataclasses import dataclass

from studio.core.errors import StudioError
from studio.core.project import Project
from studio.core.serving_mode import ServingMode


@dataclass(frozen=True)
class PoolStart:
    """The pools to serve with (None when no candidate can) and one sentence why."""

    mode: ServingMode | None
    why: str


#: The last answers, newest last: a project switched back and forth (or undone) is not swept again.
_ANSWERS: list[tuple[Project, PoolStart]] = []
_KEEP = 4


def best_pools(project: Project) -> PoolStart:
    """The sweep's best disaggregated pools for ``project`` (its objective and targets), keeping
    the project's KV-transfer backend (the last few answers are kept: a sweep of two servers
    costs about a second)."""
    for known, answer in reversed(_ANSWERS):
        if known == project:
            return answer
    answer = _sweep_best(project)
    _ANSWERS.append((project, answer))
    del _ANSWERS[:-_KEEP]
    return answer


def _sweep_best(project: Project) -> PoolStart:
    from studio.engine.disagg.sweep import sweep_disaggregated

    objective = project.explorer.objective
    try:
        sw = sweep_disaggregated(project, objective=objective, top=1)  # its first row is all it reads
    except StudioError as exc:
        return PoolStart(None, f"no disaggregated split can be costed: {exc.message}")
    if not sw.rows:
        return PoolStart(None, f"none of the {sw.combinations} pool splits of these "
                               f"{project.cluster.num_gpus} GPUs can be placed or costed")
    row = sw.best or sw.rows[0]
    mode = row.mode.replace(transfer_backend=project.serving_mode.transfer_backend)
    met = "meets the targets, " if sw.best is not None and (project.workload.ttft_ms or project.workload.tpot_ms) else ""
    why = (f"{mode.label}: the sweep's best of {sw.n_rows:,} candidates for {objective} "
           f"({met}{row.tokens_per_s_per_gpu:,.0f} tok/s per GPU, TTFT {row.ttft_ms:,.0f} ms, "
           f"limited by the {row.limited_by})")
    return PoolStart(mode, why)
