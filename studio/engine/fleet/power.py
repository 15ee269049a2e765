"""Power of one replica from what its iterations do, bounded by the GPU's board power.

Each GPU of a replica draws

``P = P_idle + (P_board − P_idle) · min(1, a_c · u_c + a_m · u_m + a_x · f_x)``

while an iteration runs, and ``P_idle`` between iterations, where

* ``P_board`` is the GPU's board power (``power_w`` of ``presets/gpus.json``, with its source) and
  ``P_idle = idle_fraction · P_board``;
* ``u_c`` is the share of the GPUs' peak tensor-core rate the iteration uses: its FLOPs (2 × active
  parameters per token, plus attention over the context) / (GPUs × peak FLOP/s × iteration time) —
  compute-bound prefill drives it up;
* ``u_m`` is the share of their memory bandwidth it uses: bytes read (the replica's weights once
  per iteration, plus the KV cache of every decoding sequence) / (GPUs × HBM bandwidth × iteration
  time) — memory-bound decode drives it up;
* ``f_x`` is the share of the iteration spent in all-reduces, all-to-alls and stage hand-offs;
* ``a_c``, ``a_m``, ``a_x`` and ``idle_fraction`` are :class:`PowerParams` (``presets/power.json``,
  each with its source).

The iteration (decoding sequences, prompt tokens, time) is the closed-form steady state of
:func:`studio.engine.load.open_loop` at the replica's request rate (or of
:func:`~studio.engine.load.closed_loop` for a fixed batch), on the same iteration model as every
other figure. Below saturation a replica is busy only part of the time: the share
``min(1, λ · S)``, ``S`` the time one request takes alone (its prefill and its decode steps).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from studio.core.errors import StudioError
from studio.core.hardware import GpuSpec
from studio.engine.serving.load import SteadyState, closed_loop, open_loop
from studio.engine.serving.under_load import ServingSetup


@dataclass(frozen=True)
class PowerParams:
    """How GPU power follows activity (``presets/power.json``)."""

    idle_fraction: float  # P_idle / P_board
    compute_activity: float  # a_c
    memory_activity: float  # a_m
    comm_activity: float  # a_x
    sources: dict[str, str]

    def __post_init__(self) -> None:
        for name in ("idle_fraction", "compute_activity", "memory_activity", "comm_activity"):
            v = getattr(self, name)
            if not (0.0 <= v <= (1.0 if name == "idle_fraction" else 10.0)):
                raise StudioError(f"power parameter {name} = {v} is out of range", "presets/power.json", field=name)


@dataclass(frozen=True)
class ReplicaShape:
    """What the power model needs of one replica besides its iteration model."""

    gpus: int
    spec: GpuSpec
    weight_bytes: float  # all GPUs of the replica
    active_params: float
    attn_flops_per_ctx_token: float  # per token, per token of context attended
    kv_bytes_per_token: float  # whole model
    compute_class: str

    @property
    def board_w(self) -> float:
        if self.spec.power_w is None:
            raise StudioError(f"GPU preset '{self.spec.id}' has no board power (power_w) in presets/gpus.json; "
                              "add it with its source to plan power and energy", field="gpu")
        return float(self.spec.power_w)


@dataclass(frozen=True)
class PowerPoint:
    """Power of one replica at one operating point (watts, all its GPUs)."""

    watts: float
    busy_share: float
    compute_util: float
    memory_util: float
    comm_share: float
    output_tokens_per_s: float

    @property
    def j_per_output_token(self) -> float:
        return self.watts / self.output_tokens_per_s if self.output_tokens_per_s > 0 else float("nan")


def _comm_share(s: ServingSetup, st: SteadyState) -> float:
    """Share of the iteration in collectives and hand-offs, from the iteration model's stage times."""
    m = float(s.micro_batches)
    it = s.model.micro_batch_times(st.prefill_tokens / m, st.decode_seqs / m, s.isl + s.osl / 2.0, s.prefill_isl)
    comm = float((it.allreduce + it.alltoall + it.cp + it.p2p).sum())
    total = float((it.stage + it.p2p).sum())
    return comm / total if total > 0 else 0.0


def _busy_watts(s: ServingSetup, shape: ReplicaShape, params: PowerParams, st: SteadyState) -> tuple[float, ...]:
    t_s = float(st.iteration_ms[0]) / 1e3
    d, p = float(st.decode_seqs[0]), float(st.prefill_tokens[0])
    ctx = s.isl + s.osl / 2.0
    tokens = p + d * s.model.budget_per_seq
    flops = 2.0 * shape.active_params * tokens + shape.attn_flops_per_ctx_token * (d * ctx + p * (s.cached + s.prefill_isl / 2.0))
    peak = shape.gpus * shape.spec.peak_tflops(shape.compute_class) * 1e12
    u_c = flops / (peak * t_s) if t_s > 0 else 0.0
    read = shape.weight_bytes + d * ctx * shape.kv_bytes_per_token
    u_m = read / (shape.gpus * shape.spec.hbm_bandwidth_gbps * 1e9 * t_s) if t_s > 0 else 0.0
    f_x = _comm_share(s, st)
    activity = min(1.0, params.compute_activity * u_c + params.memory_activity * u_m + params.comm_activity * f_x)
    board = shape.board_w
    idle = params.idle_fraction * board
    return shape.gpus * (idle + (board - idle) * activity), u_c, u_m, f_x


def idle_watts(shape: ReplicaShape, params: PowerParams) -> float:
    """A replica with nothing to do (all its GPUs idle)."""
    return shape.gpus * params.idle_fraction * shape.board_w


def power_at_rate(s: ServingSetup, shape: ReplicaShape, params: PowerParams, rate_per_s: float) -> PowerPoint:
    """Mean power of one replica fed ``rate_per_s`` requests per second (Poisson, below saturation)."""
    idle = idle_watts(shape, params)
    if rate_per_s <= 0:
        return PowerPoint(idle, 0.0, 0.0, 0.0, 0.0, 0.0)
    st, _ = open_loop(s.model, rate_per_s, s.micro_batches, s.prefill_isl, s.osl, s.budget, s.running_cap,
                      cached=s.cached)
    busy_w, u_c, u_m, f_x = _busy_watts(s, shape, params, st)
    alone_ms = float(s.model.round_ms(float(s.prefill_isl), 0.0, s.isl, s.prefill_isl)[0]) \
        + max(s.osl - 1, 0) / s.model.tokens_per_step * float(s.model.round_ms(0.0, 1.0, s.isl + s.osl / 2.0, s.isl)[0])
    share = min(1.0, rate_per_s * alone_ms / 1e3)
    watts = share * busy_w + (1.0 - share) * idle
    return PowerPoint(watts, share, u_c, u_m, f_x, rate_per_s * s.osl)


def power_at_batch(s: ServingSetup, shape: ReplicaShape, params: PowerParams, batch: int) -> PowerPoint:
    """Power of one replica kept full with ``batch`` sequences (a closed loop, always busy): the
    setting of energy benchmarks that run a server at ``max_num_seqs``."""
    st = closed_loop(s.model, np.array([float(batch)]), np.array([float(s.micro_batches)]), s.prefill_isl, s.osl,
                     s.budget, np.array([float(s.running_cap)]), cached=s.cached)
    busy_w, u_c, u_m, f_x = _busy_watts(s, shape, params, st)
    return PowerPoint(busy_w, 1.0, u_c, u_m, f_x, float(st.output_tokens_per_s[0]))


def power_curve(s: ServingSetup, shape: ReplicaShape, params: PowerParams, max_rate_per_s: float,
                points: int = 17) -> tuple[np.ndarray, np.ndarray]:
    """Replica watts at ``points`` rates from 0 to ``max_rate_per_s`` (for interpolation over a day)."""
    rates = np.linspace(0.0, max_rate_per_s, max(points, 2))
    watts = np.array([power_at_rate(s, shape, params, float(r)).watts for r in rates])
    return rates, watts
