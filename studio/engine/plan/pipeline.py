"""Pipeline schedule as drawable arrays: M micro-batches over P stages (fill, steady, drain)."""

from __future__ import annotations

import numpy as np

from studio.core.errors import StudioError
from studio.engine.plan.views import SEGMENT_KINDS, Timeline

_COMPUTE, _AR, _A2A, _P2P, _IDLE, _CP = (
    SEGMENT_KINDS.index(k) for k in ("compute", "allreduce", "alltoall", "p2p", "idle", "cp"))
MAX_DRAWN_MICRO_BATCHES = 256


def timeline(
    phase: str,
    compute_ms: np.ndarray,
    allreduce_ms: np.ndarray,
    p2p_ms: np.ndarray,
    micro_batches: int,
    alltoall_ms: np.ndarray | None = None,
    cp_ms: np.ndarray | None = None,
) -> Timeline:
    """GPipe-style schedule of one step.

    Micro-batch ``m`` starts on stage ``s`` when stage ``s`` is done with ``m − 1`` and its
    activations from stage ``s − 1`` have arrived. Each (stage, micro-batch) cell is drawn as a
    compute segment, an all-reduce segment (the stage's TP all-reduces, gathered), an all-to-all
    segment (the stage's MoE expert-parallel dispatch and combine, gathered) and a p2p segment
    (hand-off to the next stage); gaps on a lane are idle segments.

    Parameters
    ----------
    compute_ms, allreduce_ms, p2p_ms:
        Per-stage times (ms) of one micro-batch; ``p2p_ms[s]`` is the hand-off to stage ``s + 1``.
    alltoall_ms:
        Per-stage EP all-to-all time (ms) of one micro-batch; ``None`` = none (dense model).
    cp_ms:
        Per-stage context-parallel communication (ms) of one micro-batch, drawn as a ``cp``
        segment after the all-to-all; ``None`` = no context parallelism.
    """
    if phase not in ("prefill", "decode"):
        raise StudioError(f"timeline phase must be 'prefill' or 'decode' (got {phase!r})")
    p = len(compute_ms)
    m = max(1, min(int(micro_batches), MAX_DRAWN_MICRO_BATCHES))
    a2a = np.zeros(p) if alltoall_ms is None else np.asarray(alltoall_ms, float)
    cpm = np.zeros(p) if cp_ms is None else np.asarray(cp_ms, float)
    work = np.asarray(compute_ms, float) + np.asarray(allreduce_ms, float) + a2a + cpm
    hand = np.asarray(p2p_ms, float)
    start = np.zeros((p, m))
    for s in range(p):
        for k in range(m):
            ready = start[s - 1, k] + work[s - 1] + hand[s - 1] if s else 0.0
            free = start[s, k - 1] + work[s] + (hand[s] if s < p - 1 else 0.0) if k else 0.0
            start[s, k] = max(ready, free)
    end_last = start[p - 1, m - 1] + work[p - 1]
    lane: list[int] = []
    st: list[float] = []
    dur: list[float] = []
    kind: list[int] = []
    mb: list[int] = []

    def segment(s: int, t0: float, d: float, kd: int, k: int) -> None:
        lane.append(s)
        st.append(t0)
        dur.append(d)
        kind.append(kd)
        mb.append(k)

    for s in range(p):
        cursor = 0.0
        for k in range(m):
            t0 = start[s, k]
            if t0 > cursor + 1e-12:
                segment(s, cursor, t0 - cursor, _IDLE, -1)
            for kd, d in ((_COMPUTE, compute_ms[s]), (_AR, allreduce_ms[s]), (_A2A, a2a[s]), (_CP, cpm[s])):
                if d > 0:
                    segment(s, t0, d, kd, k)
                    t0 += d
            if s < p - 1 and hand[s] > 0:
                segment(s, t0, hand[s], _P2P, k)
                t0 += hand[s]
            cursor = t0
        if end_last > cursor + 1e-12:
            segment(s, cursor, end_last - cursor, _IDLE, -1)
    return Timeline(
        phase=phase,  # type: ignore[arg-type]  # callers pass 'prefill' or 'decode'
        lanes=tuple(f"stage {s}" for s in range(p)),
        lane=np.asarray(lane, dtype=np.int32),
        start=np.asarray(st, dtype=float),
        duration=np.asarray(dur, dtype=float),
        kind=np.asarray(kind, dtype=np.int8),
        micro_batch=np.asarray(mb, dtype=np.int32),
        total_ms=float(end_last),
        bubble_fraction=(p - 1) / (m + p - 1),
    )
