"""What the serving engine adds to one scheduler iteration: CPU time the GPU waits for, and
CUDA-graph padding of decode batches.

:class:`RuntimeStep` rides on :class:`~studio.engine.step.costing.LayoutCosts` (``lc.runtime``) and
:meth:`~studio.engine.step.iteration.IterationModel.round_ms` applies it, so every figure built on an
iteration — TPOT, TTFT, throughput, the request simulation, the sweep — sees the same engine:

* a pure-decode micro-batch of ``d`` sequences runs as the next captured graph size (its GEMMs,
  logits and all-reduces see the padded rows; the KV cache and attention only the real ones);
  beyond the largest captured size it runs eagerly at its own size;
* the iteration then waits for the part of the scheduler's CPU work the GPU step does not hide
  (:meth:`~studio.engine.runtime.profile.SchedulerCost.exposed_us`), and under pipeline parallelism
  for the per-request host work an engine's pipeline loop cannot hide
  (:meth:`~studio.engine.runtime.profile.SchedulerCost.pipeline_exposed_us`).
"""

from __future__ import annotations

import numpy as np

from studio.engine.runtime.profile import GraphSizes, SchedulerCost
from studio.engine.step.records import Record


class RuntimeStep(Record, frozen=True):
    """The engine's per-iteration terms for one layout."""

    scheduler: SchedulerCost
    graph_sizes: tuple[int, ...]
    padding: bool

    def decode_rows(self, prefill_tokens: np.ndarray, decode_seqs: np.ndarray) -> np.ndarray:
        """Decode rows the GPU runs per micro-batch: padded to the captured size for pure-decode
        micro-batches (prompt tokens present = a mixed batch, run without the decode graph)."""
        d = np.asarray(decode_seqs, dtype=float)
        x = np.asarray(prefill_tokens, dtype=float)
        if x.shape != d.shape:
            x = np.broadcast_to(x, d.shape)
        padded = GraphSizes.padded(d, self.graph_sizes, self.padding)
        return np.where(x > 0, d, padded)

    def exposed_ms(self, running: np.ndarray, gpu_ms: np.ndarray) -> np.ndarray:
        """Scheduler time (ms) an iteration with ``running`` sequences adds to a GPU step of
        ``gpu_ms``."""
        return np.asarray(self.scheduler.exposed_us(running, np.asarray(gpu_ms) * 1e3), dtype=float) / 1e3

    def pipeline_ms(self, running: np.ndarray, micro_batches: np.ndarray | float, pp: int) -> np.ndarray:
        """Host time (ms) a round of ``micro_batches`` micro-batch iterations of a ``pp``-stage
        pipeline adds (0 without PP; see :meth:`SchedulerCost.pipeline_exposed_us`)."""
        if pp <= 1:
            return np.zeros_like(np.asarray(running, dtype=float))
        return self.scheduler.pipeline_exposed_us(running, micro_batches) / 1e3
