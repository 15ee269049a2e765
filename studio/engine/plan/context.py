"""The intermediate figures of one evaluation, shared by the rules and the explanations."""

from __future__ import annotations

import numpy as np

from studio.core.architecture import ModulePrecision
from studio.core.project import Project
from studio.engine.fabric.topology import Topology
from studio.engine.plan.results import LoadSummary
from studio.engine.step.constants import Constants
from studio.engine.step.costing import LayoutCosts
from studio.engine.step.records import Record
from studio.engine.step.step_times import StepTimes


class PlanContext(Record):
    """Everything :func:`studio.engine.evaluate` computed before assembling the result."""

    project: Project
    precision: ModulePrecision
    constants: Constants
    topo: Topology
    lc: LayoutCosts
    st: StepTimes
    seq_len: int
    seq_bytes: np.ndarray  # KV bytes per GPU per sequence of isl+osl, per stage
    pool: np.ndarray  # KV pool per GPU per stage (usable − weights − activations − overhead)
    max_seqs: int
    capacity_tokens: int
    kv_per_token_gpu: float
    batch: int
    batch_auto: bool
    micro_batches: int
    micro_batch_size: int
    fits: bool
    fit_reason: str
    ttft_ms: float
    tpot_ms: float
    request_ms: float
    tokens_per_s: float
    usd_per_hour: float
    bubble: float
    load: LoadSummary | None = None
    prefix_cache: dict[str, float] | None = None

    @property
    def kv_batch_bytes(self) -> np.ndarray:
        """KV bytes per GPU of the running batch, per stage: ``batch`` sequences of isl+osl, the
        system prompt's blocks held once when prefix caching shares them (as the batch was sized)."""
        kv = self.batch * self.seq_bytes
        shared = min(self.prefix_cache["shared_tokens"], self.seq_len - 1.0) if self.prefix_cache else 0.0
        if shared > 0 and self.batch > 1:
            kv = kv - (self.batch - 1) * shared * self.seq_bytes / self.seq_len
        return kv


def tp_message_bytes(ctx: PlanContext) -> float:
    """Bytes of one decode TP all-reduce of the plan's micro-batch (hidden × activation bytes per
    sequence): the message whose slowest hop the plan reports."""
    return ctx.micro_batch_size * ctx.lc.hidden * ctx.constants.activation_bytes
