"""What a serving engine keeps out of its KV cache, term by term, as its start-up sizes it.

Each engine sizes its KV cache once, at start-up, from the memory its CUDA runtime reports
(``cudaMemGetInfo`` total, a little less than the driver's ``nvidia-smi`` total) and the reserves
it measures or assumes. :class:`ReserveRule` holds one profile's terms (``memory.reserves`` of
``presets/engines/*.json``, every value cited); :func:`reserve_terms` evaluates them for one
layout:

* **forward** — the tensors alive at the MLP of a profiling forward of the token budget (the
  residual and normed input of width ``hidden``, the gate-up output ``2·width/TP`` and its
  activation ``width/TP``; a fused MoE also holds its ``top_k × hidden`` expert outputs), counted
  where the engine profiles that forward before sizing the cache (vLLM, TensorRT-LLM's PyTorch
  executor); SGLang keeps it in the reserve behind ``mem_fraction_static`` instead;
* **sampler** — vLLM profiles its sampler over ``min(max_num_seqs, budget)`` dummy requests with
  top-k/top-p on: fp32 logits of the whole vocabulary and the sort, softmax and scatter buffers,
  ``sampler_bytes_per_logit`` per (request × vocabulary entry), on the last pipeline stage. The
  profiled activation peak is the larger of the two phases;
* **non-torch** — memory the engine counts outside its tensor allocator (cuBLAS workspaces) and,
  at TP > 1 on an NVLink fabric, the communicators of the TP group (NCCL and custom all-reduce
  buffers, ``tp_comm_gib``);
* **CUDA graphs** — counted before the KV cache only where the engine version estimates them
  first (vLLM from 0.21); elsewhere they come out of the margin the fraction leaves;
* **before start** — memory in use before the engine reads the total it sizes against (SGLang
  reads the free memory after creating its CUDA context, not the device total).
"""

from __future__ import annotations

import numpy as np

from studio.core.units import GIB
from studio.engine.step.records import frozen_result


@frozen_result
class ReserveRule:
    """One engine profile's reserve terms (see the module docstring)."""

    forward_profiled: bool
    sampler_bytes_per_logit: float
    non_torch_gib: float
    tp_comm_gib: float
    graph_gib: float
    graphs_counted_from: tuple[int, ...] | None
    before_start_gib: float
    light_sampler_from: tuple[int, ...] | None = None  # from this version dense models profile a lighter sampler
    light_sampler_bytes_per_logit: float = 0.0


@frozen_result
class ReserveShape:
    """What of one model and layout the reserve terms read."""

    hidden: int
    width: int  # MLP width of one token (dense intermediate, or top_k × expert width + shared)
    moe_top_k: int  # routed experts per token (0: dense)
    vocab: int
    tp: int
    stages: int
    nvlink: bool  # the TP group's GPUs have an NVLink fabric (custom all-reduce on)


def forward_bytes(shape: ReserveShape, tokens: float, bytes_per_element: float = 2.0) -> float:
    """Bytes alive at the MLP of a forward of ``tokens`` tokens on one GPU (see the module docstring)."""
    per_token = 2 * shape.hidden + 3 * shape.width / shape.tp + shape.moe_top_k * shape.hidden
    return float(tokens) * per_token * bytes_per_element


def sampler_rate(rule: ReserveRule, version: tuple[int, ...] | None, moe: bool) -> float:
    """Bytes per (request × vocabulary entry) of the sampler's profiling run at ``version`` (None =
    the newest release): the lighter rate from ``light_sampler_from`` on for a dense model."""
    light = rule.light_sampler_from is not None and (version is None or version >= rule.light_sampler_from)
    return rule.light_sampler_bytes_per_logit if light and not moe else rule.sampler_bytes_per_logit


def sampler_bytes(per_logit: float, shape: ReserveShape, seqs: float) -> float:
    """Bytes of the sampler's profiling run over ``seqs`` dummy requests at ``per_logit`` bytes per
    logit (whole vocabulary on every TP rank: the logits are gathered before sampling)."""
    return per_logit * float(seqs) * shape.vocab


def graphs_counted(rule: ReserveRule, graphs_in_budget: bool, version: tuple[int, ...] | None) -> bool:
    """Whether CUDA-graph memory is taken out before the KV cache is sized: always where the
    profile says so, else from ``graphs_counted_from`` on (``version`` None = the newest release)."""
    if graphs_in_budget:
        return True
    if rule.graphs_counted_from is None:
        return False
    return version is None or version >= rule.graphs_counted_from


def sized_total(rule: ReserveRule | None, visible_bytes: np.ndarray) -> np.ndarray:
    """The total the engine applies its memory fraction to: the CUDA runtime's total, less what
    was in use before the engine read it (SGLang)."""
    if rule is None:
        return visible_bytes
    return visible_bytes - rule.before_start_gib * GIB


def reserve_terms(rule: ReserveRule, shape: ReserveShape, budget: float, seqs: float, counted_graphs: bool,
                  sampler_per_logit: float) -> tuple[np.ndarray, dict[str, float], dict[str, float]]:
    """Activation peak per stage (bytes), the fixed terms (name → bytes) and the activation
    phases of the last stage (name → bytes, for the explanation). ``before_start_gib`` is not a
    fixed term: it comes off the total before the fraction applies (:func:`sized_total`).

    ``budget`` is the token budget of an iteration (the profiling forward's size), ``seqs`` the
    engine's running-sequence limit (vLLM profiles the sampler over ``min(seqs, budget)``),
    ``sampler_per_logit`` the sampler's bytes per logit at this version (:func:`sampler_rate`)."""
    fwd = forward_bytes(shape, budget) if rule.forward_profiled else 0.0
    samp = sampler_bytes(sampler_per_logit, shape, min(seqs, budget)) if sampler_per_logit else 0.0
    # the sampler runs on the hidden states of the requests it samples (kept from the forward)
    samp_phase = samp + (min(seqs, budget) * shape.hidden * 2.0 if samp else 0.0)
    act = np.full(shape.stages, fwd)
    act[-1] = max(fwd, samp_phase)
    terms: dict[str, float] = {}
    terms["non_torch"] = rule.non_torch_gib * GIB
    if shape.tp > 1 and shape.nvlink and rule.tp_comm_gib:
        terms["tp_communicators"] = rule.tp_comm_gib * GIB
    if counted_graphs and rule.graph_gib:
        terms["cuda_graphs"] = rule.graph_gib * GIB
    phases = {"forward": fwd} | ({"sampler": samp_phase} if samp else {})
    return act, terms, phases
