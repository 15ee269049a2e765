"""Per-stage prefill and decode times of micro-batches: the two views a plan's timeline and
bubble read (a whole prompt in one pass; one decode token each at the mean context), from the
iteration model (:class:`~studio.engine.step.iteration.IterationModel`), vectorised over rows.
"""

from __future__ import annotations

import numpy as np

from studio.engine.step.constants import Constants
from studio.engine.step.costing import LayoutCosts
from studio.engine.step.iteration import IterationModel
from studio.engine.step.records import Record

_NO_STAGES = np.zeros((0, 0))
_NO_ROWS = np.zeros(0)


class StepTimes(Record):
    """Per-stage times (ms) for one micro-batch; arrays shaped (stages, N)."""

    prefill_compute: np.ndarray
    prefill_allreduce: np.ndarray
    prefill_alltoall: np.ndarray
    prefill_p2p: np.ndarray  # to the next stage (0 on the last)
    decode_compute: np.ndarray
    decode_allreduce: np.ndarray
    decode_alltoall: np.ndarray
    decode_p2p: np.ndarray
    ar_us_prefill: np.ndarray  # one all-reduce, worst stage, (N,)
    ar_us_decode: np.ndarray
    p2p_us_prefill: np.ndarray  # one boundary, worst, (N,)
    p2p_us_decode: np.ndarray
    prefill_cp: np.ndarray = _NO_STAGES  # context parallelism (defaults: shared, never written)
    decode_cp: np.ndarray = _NO_STAGES
    cp_us_prefill: np.ndarray = _NO_ROWS  # one layer, worst stage, (N,)
    cp_us_decode: np.ndarray = _NO_ROWS

    @property
    def prefill_stage(self) -> np.ndarray:
        return self.prefill_compute + self.prefill_allreduce + self.prefill_alltoall + self.prefill_cp

    @property
    def decode_stage(self) -> np.ndarray:
        return self.decode_compute + self.decode_allreduce + self.decode_alltoall + self.decode_cp


def step_times(lc: LayoutCosts, micro_batch: np.ndarray, isl: int, osl: int, c: Constants,
               cached: float = 0.0) -> StepTimes:
    """Stage times of a micro-batch of ``micro_batch`` sequences (array (N,)): the prefill view
    (their whole prompts in one pass) and the decode view (one token each at context
    ``isl + cached + osl / 2``, ``cached`` being prompt tokens served from the prefix cache), both
    from :class:`~studio.engine.step.iteration.IterationModel`."""
    b = np.atleast_1d(np.asarray(micro_batch, dtype=float))
    n = b.shape[0]
    # both views in one call (~0.1 ms of numpy calls each, ~70 calls in a sweep): every row is
    # computed on its own, so each half is what a call of its own returns
    both = IterationModel(lc, c).micro_batch_times(
        np.concatenate((b * isl, np.zeros(n))), np.concatenate((np.zeros(n), b)), isl + cached + osl / 2.0, isl
    )
    pf, dec = both.columns(0, n), both.columns(n, 2 * n)
    return StepTimes(
        prefill_compute=pf.compute, prefill_allreduce=pf.allreduce, prefill_alltoall=pf.alltoall,
        prefill_p2p=pf.p2p, decode_compute=dec.compute, decode_allreduce=dec.allreduce,
        decode_alltoall=dec.alltoall, decode_p2p=dec.p2p, ar_us_prefill=pf.ar_us,
        ar_us_decode=dec.ar_us, p2p_us_prefill=pf.p2p_us, p2p_us_decode=dec.p2p_us,
        prefill_cp=pf.cp, decode_cp=dec.cp, cp_us_prefill=pf.cp_us, cp_us_decode=dec.cp_us,
    )


def bubble_fraction(pp: int | np.ndarray, micro_batches: int | np.ndarray) -> np.ndarray | float:
    """(P − 1) / (M + P − 1)."""
    p = np.asarray(pp, dtype=float)
    m = np.asarray(micro_batches, dtype=float)
    out = (p - 1) / (m + p - 1)
    return float(out) if out.ndim == 0 else out
