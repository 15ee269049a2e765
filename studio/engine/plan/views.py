"""The parts of a plan that only its views read: the explanation of every figure (:class:`Explanation`,
:class:`Term`) and the pipeline timelines (:class:`Timeline`).

They are part of :class:`~studio.engine.plan.results.PlanResult`'s contract (which names them
for type checking only); they live here so that a command that evaluates plans
without them (``evaluate(..., details=False)``: ``sweep --json``) does not define them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

#: Segment kinds of a pipeline timeline, in drawing order; ``Timeline.kind`` indexes this tuple.
SEGMENT_KINDS: tuple[str, ...] = (
    "compute", "allreduce", "alltoall", "p2p", "idle", "cp", "kv_transfer",
)
#: Kinds only a disaggregated request timeline has (:mod:`studio.engine.disagg.timeline`).
REQUEST_ONLY_KINDS: frozenset[str] = frozenset({"kv_transfer"})


@dataclass(frozen=True, slots=True)
class Term:
    """One term of a breakdown: ``name = value unit`` with an optional note."""

    name: str
    value: float
    unit: str
    note: str = ""


@dataclass(frozen=True, slots=True)
class Explanation:
    """Why a figure has its value: the formula in words and the terms that went into it."""

    figure: str
    value: float
    unit: str
    formula: str
    terms: tuple[Term, ...] = ()
    notes: tuple[str, ...] = ()

    def as_text(self) -> str:
        lines = [f"{self.figure} = {_fmt(self.value)} {self.unit}", f"  = {self.formula}"]
        lines += [f"  {t.name}: {_fmt(t.value)} {t.unit}" + (f"  ({t.note})" if t.note else "") for t in self.terms]
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


def _fmt(v: float) -> str:
    if v == 0:
        return "0"
    a = abs(v)
    if a >= 1e6 or a < 1e-3:
        return f"{v:.4g}"
    if a >= 100:
        return f"{v:,.1f}"
    return f"{v:.4g}"


@dataclass(frozen=True)
class Timeline:
    """Pipeline timeline as arrays ready to draw: one row per segment.

    ``lane`` indexes ``lanes`` (stage labels, or GPU labels when per GPU), ``kind`` indexes
    :data:`SEGMENT_KINDS`, times in ms from the start of the step.
    """

    phase: Literal["prefill", "decode", "request"]
    lanes: tuple[str, ...]
    lane: np.ndarray
    start: np.ndarray
    duration: np.ndarray
    kind: np.ndarray
    micro_batch: np.ndarray
    total_ms: float
    bubble_fraction: float

    def segments_of(self, kind: str) -> np.ndarray:
        """Boolean mask of the segments of ``kind``."""
        return self.kind == SEGMENT_KINDS.index(kind)
