"""The timeline of one request under disaggregated serving: prefill worker, KV transfer, decode.

:func:`request_timeline` lays one request of a :class:`~studio.engine.disagg.results.DisaggResult`
on three lanes, from the start of the prefill batch its prompt runs in (t = 0; the wait for that
batch, ``queue_ms``, is in the caption, since at a busy prefill pool it dwarfs everything else):

* prefill worker: the prefill batch the prompt runs in (``prefill_ms``);
* KV transfer: the prompt's KV cache moving to the decode worker (``transfer.time_ms``; the
  caption names the slowest hop);
* decode worker: the first decode iterations, one output token per TPOT (decode-only iterations,
  no prefill interference), after the transfer ends.

The first token's time is TTFT = queue + prefill + transfer, as :mod:`studio.engine.disagg.evaluate`
computes it (the first decode iteration starts at TTFT − queue on this axis). Only the first ``decode_steps`` output tokens are drawn (the handoff is what the view
shows); the rest of the OSL follow at the same TPOT.
"""

from __future__ import annotations

import numpy as np

from studio.engine.disagg.results import DisaggResult
from studio.engine.plan.views import SEGMENT_KINDS, Timeline

#: Output tokens drawn on the decode lane.
DECODE_STEPS = 8


def request_timeline(res: DisaggResult, osl: int, decode_steps: int = DECODE_STEPS) -> Timeline:
    """One request of ``res`` on the prefill-worker, KV-transfer and decode-worker lanes.

    ``osl`` is the workload's output length; ``min(osl, decode_steps)`` decode iterations are drawn.
    """
    p, d, t = res.prefill, res.decode, res.transfer
    lanes = (
        f"prefill worker {p.pool.worker_label()}",
        f"KV transfer {t.time_ms:.3g} ms",
        f"decode worker {d.pool.worker_label()}",
    )
    rows: list[tuple[int, float, float, str, int]] = []  # lane, start, duration, kind, token
    rows.append((0, 0.0, res.prefill_ms, "compute", -1))
    sent = res.prefill_ms
    rows.append((1, sent, t.time_ms, "kv_transfer", -1))
    start = sent + t.time_ms
    steps = max(0, min(int(osl), int(decode_steps)))
    for k in range(steps):
        rows.append((2, start + k * res.tpot_ms, res.tpot_ms, "compute", k))
    total = start + steps * res.tpot_ms
    kinds = {k: i for i, k in enumerate(SEGMENT_KINDS)}
    return Timeline(
        phase="request",
        lanes=lanes,
        lane=np.array([r[0] for r in rows], dtype=int),
        start=np.array([r[1] for r in rows], dtype=float),
        duration=np.array([r[2] for r in rows], dtype=float),
        kind=np.array([kinds[r[3]] for r in rows], dtype=int),
        micro_batch=np.array([r[4] for r in rows], dtype=int),
        total_ms=float(total),
        bubble_fraction=0.0,
    )


def request_note(res: DisaggResult, osl: int, decode_steps: int = DECODE_STEPS) -> str:
    """The caption of :func:`request_timeline`: TTFT and its parts, the hop, TPOT, what is drawn."""
    shown = max(0, min(int(osl), int(decode_steps)))
    t = res.transfer
    # short lines: the caption sits inside the chart, which is narrow beside the canvas
    over = f"KV transfer over {t.bottleneck_name}\n" if t.bottleneck_name else ""
    return (
        f"TTFT {res.ttft_ms:,.1f} ms = wait {res.queue_ms:,.1f} (not drawn) + prefill "
        f"{res.prefill_ms:,.1f} + KV transfer {t.time_ms:.3g}\n"
        f"{over}TPOT {res.tpot_ms:.3g} ms, no prefill interference · first {shown} of "
        f"{osl:,} tokens drawn"
    )
