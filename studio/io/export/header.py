"""The comment block every export starts with: the plan's headline figures, the memory the engine
will reserve (from the plan's own figures), the assumptions, the warnings and the engine notes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from studio.core.project import Project
from studio.core.units import fixed, gib_1
from studio.engine.plan.results import PlanResult
from studio.io.export.bundle import ENGINE_VERSIONS


@dataclass(frozen=True)
class Reserve:
    """What the engine reserves on each GPU from the exported memory fraction.

    ``fraction`` × ``base`` bytes, where ``base`` is the plan's own device memory (``capacity``)
    or the memory left after weights, activations and overhead (``free``), of the busiest GPU.
    """

    setting: str  # the engine's name for the fraction
    fraction: float
    base: str  # "capacity" or "free"
    what: str  # what the reserved memory holds


def reserve_lines(plan: PlanResult, reserve: Reserve) -> list[str]:
    """Header lines stating the memory the engine will reserve, from the plan's own figures."""
    if not plan.memory:
        return []
    m = plan.peak_memory
    if reserve.base == "capacity":
        base, of = m.capacity, "the plan's device memory"
    else:
        base, of = max(m.capacity - m.weights - m.activations - m.overhead, 0.0), (
            "memory left after weights, activations and overhead"
        )
    reserved = reserve.fraction * base
    return [
        f"Engine memory: {reserve.setting} {reserve.fraction:g} x {gib_1(base)} ({of}, busiest GPU "
        f"{m.gpu_id}) = {gib_1(reserved)} per GPU for {reserve.what}",
    ]


def header(
    project: Project, plan: PlanResult, engine: str, model: str, notes: Sequence[str],
    reserve: Reserve | None = None,
) -> list[str]:
    """Lines of the comment block every export starts with: the plan's headline figures, the
    memory the engine will reserve, the plan's assumptions, its warnings and the engine notes."""
    lay = plan.layout
    wl = project.workload
    stages = ",".join(str(s.layers) for s in plan.stages) or ",".join(
        str(n) for n in lay.stage_layers(project.model.num_layers)
    )
    lines = [
        f"Layout Studio export for {ENGINE_VERSIONS[engine]}",
        f"Project: {project.name}",
        f"Model: {project.model.name} -> {model}",
        f"Cluster: {project.cluster.name} ({project.cluster.num_gpus} GPUs on "
        f"{len(project.cluster.nodes)} node{'s' if len(project.cluster.nodes) != 1 else ''})",
        f"Layout: {lay.label} = {lay.world_size} GPUs; layers per stage {stages}; "
        f"micro-batches {lay.micro_batches}",
        f"Fits: {'yes' if plan.fits else 'NO'}" + (f" - {plan.fit_reason}" if plan.fit_reason else ""),
        f"Workload: {wl.isl} input + {wl.osl} output tokens; batch {plan.batch} per replica"
        + (" (auto)" if plan.batch_auto else ""),
    ]
    if plan.memory:
        m = plan.peak_memory
        lines.append(
            f"Per-GPU memory (busiest GPU {m.gpu_id}): weights {gib_1(m.weights)}, KV cache "
            f"{gib_1(m.kv_cache)}, activations {gib_1(m.activations)}, overhead {gib_1(m.overhead)}; "
            f"total {gib_1(m.total)} of {gib_1(m.capacity)} ({gib_1(m.usable)} usable)"
        )
    if reserve is not None:
        lines += reserve_lines(plan, reserve)
    lines += [
        f"KV cache: {plan.kv_capacity_tokens:,} tokens per replica; "
        f"{plan.max_concurrent_sequences:,} sequences of {wl.isl + wl.osl} tokens",
        f"TTFT {fixed(plan.ttft_ms)} ms; TPOT {fixed(plan.tpot_ms, 2)} ms; "
        f"request {fixed(plan.request_latency_ms)} ms",
        f"Throughput: {fixed(plan.output_tokens_per_s)} output tokens/s "
        f"({fixed(plan.output_tokens_per_s_per_gpu)} per GPU, "
        f"{fixed(plan.tokens_per_s_per_user)} per user)",
        f"Cost: ${fixed(plan.usd_per_hour, 2)}/h; ${fixed(plan.usd_per_million_output_tokens, 3)} "
        "per million output tokens",
    ]
    if plan.calibration:
        lines.append(f"Calibration: {plan.calibration}")
    if plan.assumptions:
        lines.append("Assumptions:")
        lines += [f"  - {a}" for a in plan.assumptions]
    if plan.warnings:
        lines.append("Warnings:")
        lines += [f"  - [{w.severity}] {w.code}: {w.message} Fix: {w.fix}" for w in plan.warnings]
    if notes:
        lines.append(f"What {ENGINE_VERSIONS[engine].split(' (')[0]} runs differently from the plan:")
        lines += [f"  - {n}" for n in notes]
    return lines
