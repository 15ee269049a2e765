"""Fit a link kind's latency and bandwidth to nccl-tests logs: the one workflow behind
``layout-studio calibrate nccl`` and the Calibration panel's NCCL tab, so both accept the same logs,
bound the ranks the same way and warn the same way.

Errors name the rank count by field (``field="ranks"``): the command line puts its flag in front,
the window shows the message beside its own ranks box.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from studio.core.errors import StudioError

if TYPE_CHECKING:
    from studio.core.hardware import Cluster, LinkKind, NodeTemplate
    from studio.engine.search.calibration import LinkKindFit
    from studio.io.importers.nccl_log import NcclLog

#: Fewest ranks a collective runs over.
MIN_FIT_RANKS = 2
#: Most ranks a fit takes: a fit costs the collective ~140 times, each in time linear in the ranks
#: (~9 ms per rank of CPU on the 2-core machine): 4,096 ranks take ~36 s and 320 MB, 8,192 would
#: take over a minute (docs/import-and-calibrate.md).
MAX_FIT_RANKS = 4_096


def one_collective(logs: list[NcclLog]) -> str:
    """The collective every log measured (``all_reduce`` or ``sendrecv``); logs of mixed or unknown
    collectives are refused."""
    collectives = {log.collective for log in logs}
    if len(collectives) != 1 or None in collectives:
        raise StudioError(
            "the logs must all be one collective (all_reduce or sendrecv); found: "
            + ", ".join(sorted(str(c) for c in collectives))
        )
    collective = collectives.pop()
    assert collective is not None
    return collective


def fit_ranks(logs: list[NcclLog], given: int | None) -> int:
    """The ranks of the run: ``given`` when set (0 or ``None``: not set), else what the first log
    says; refused outside :data:`MIN_FIT_RANKS` … :data:`MAX_FIT_RANKS`."""
    ranks = given or (logs[0].group_size if logs else None)
    if not ranks:
        raise StudioError("the log does not say how many ranks ran; give the ranks of the run", field="ranks")
    if not MIN_FIT_RANKS <= ranks <= MAX_FIT_RANKS:
        said = "the run is given" if given else "the log's run has"
        raise StudioError(
            f"{said} {ranks:,} rank{'s' if ranks != 1 else ''}; calibrate nccl fits runs of "
            f"{MIN_FIT_RANKS} to {MAX_FIT_RANKS:,} ranks",
            field="ranks",
        )
    return ranks


def log_points(logs: list[NcclLog]) -> tuple[list[float], list[float]]:
    """Message sizes (bytes) and times (µs) of every row of every log, in order."""
    sizes: list[float] = []
    times: list[float] = []
    for log in logs:
        s, t = log.points()
        sizes += s
        times += t
    return sizes, times


@dataclass(frozen=True)
class NcclFit:
    """A finished fit: what ran, the fitted link and its errors, and the warnings about the logs."""

    collective: str
    ranks: int
    kind_id: str
    gpus: tuple[str, ...]
    fit: LinkKindFit
    #: RMS relative error of the catalogue figures and of the fitted ones.
    before: float
    after: float
    #: One sentence each for a way the logs do not fit the link kind (:mod:`.nccl_fit_checks`).
    warnings: tuple[str, ...]

    @property
    def fit_error(self) -> dict[str, float]:
        """The errors as a calibration profile stores them."""
        return {f"{self.kind_id}.rms_rel_error": self.after, f"{self.kind_id}.default_rms_rel_error": self.before}


def fit_nccl(
    cluster: Cluster,
    logs: list[NcclLog],
    kind_id: str,
    ranks: int | None,
    templates: list[NodeTemplate],
    kind: LinkKind | None = None,
) -> NcclFit:
    """Fit ``kind_id`` so the engine reproduces the logs' times on the first ``ranks`` GPUs of
    ``cluster`` (``ranks`` ``None`` or 0: what the log says).

    Parameters
    ----------
    cluster:
        The GPUs that ran the test (a project's cluster, or a reference cluster of bundled nodes).
    logs:
        Parsed nccl-tests logs (:func:`studio.io.importers.nccl_log.read_nccl_log`), one collective.
    kind_id:
        The link kind the test ran over.
    ranks:
        Ranks of the run when the log does not say.
    templates:
        The bundled node templates, for the link-kind checks.
    kind:
        The link kind the checks compare the logs with (default: the cluster's ``kind_id``; no
        checks when the cluster has none).
    """
    from studio.engine.search.calibration import fit_link_kind, rms
    from studio.service.nccl_fit_checks import log_mismatches

    if not logs:
        raise StudioError("load nccl-tests logs first")
    collective = one_collective(logs)
    n = fit_ranks(logs, ranks)
    gpus = tuple(g.id for g in cluster.gpus)
    if len(gpus) < n:
        raise StudioError(f"the run used {n} ranks but the cluster has {len(gpus)} GPUs")
    kind = kind or cluster.link_kinds.get(kind_id)
    warnings = tuple(log_mismatches(logs, n, kind, templates)) if kind is not None else ()
    sizes, times = log_points(logs)
    fit = fit_link_kind(cluster, list(gpus[:n]), kind_id, sizes, times, collective=collective)
    return NcclFit(
        collective=collective,
        ranks=n,
        kind_id=kind_id,
        gpus=gpus[:n],
        fit=fit,
        before=rms(fit.default_residuals),
        after=fit.link_fit.rms_rel_error,
        warnings=warnings,
    )
