"""Context parallelism in the engines' own flags, or a refusal that says why an engine cannot run it.

What each engine runs (the run-time rules are data: ``context_parallel`` in
``presets/engines/rules.json``; the flag spellings are here):

* **vLLM** — decode CP: ``--decode-context-parallel-size`` (DCP, inside the TP group, MLA and GQA).
  Prefill CP: ``--prefill-context-parallel-size`` with ``--decode-context-parallel-size`` equal to
  it, so the KV cache is split over the PCP ranks as planned; PCP widens the engine's world to
  TP × PP × PCP and does not run with data parallelism, so each CP group is one server.
* **SGLang** — decode CP: ``--dcp-size`` for MLA models. Its prefill CP (``--attn-cp-size`` with
  ``--enable-prefill-cp``) sits inside the TP group and keeps the whole KV cache on every CP rank:
  a different layout, refused with the reason.
* **TensorRT-LLM** — decode CP is Helix (``context_parallel_size`` with ``cp_config.cp_type:
  HELIX``; attention TP = TP / CP, the FFN uses all TP × CP ranks; MLA models on Blackwell, in the
  generation servers of disaggregated serving). Prefill CP: ``context_parallel_size`` with
  ``cp_type: RING`` (a prototype field), one server per CP group.
"""

from __future__ import annotations

from dataclasses import dataclass

from studio.core.errors import StudioError
from studio.core.layout import Layout
from studio.core.project import Project
from studio.engine.plan.results import PlanResult
from studio.io.export.rules import rules_for

ENGINE_NAMES = {"vllm": "vLLM", "sglang": "SGLang", "trtllm": "TensorRT-LLM"}


@dataclass(frozen=True)
class CpExport:
    """How one engine is told about a plan's context parallelism."""

    config: dict[str, object]  # keys in the engine's spelling, added to its config
    notes: tuple[str, ...]
    #: prefill CP: one server per CP group (TP × CP GPUs a stage, DP = replicas)
    server_layout: Layout | None
    #: the engine's TP when it differs from the plan's (Helix: TP / CP)
    tensor_parallel: int | None = None


def cp_export(engine: str, project: Project, plan: PlanResult) -> CpExport | None:
    """The context-parallel settings of ``plan`` for ``engine`` (``None`` without CP).

    Raises
    ------
    StudioError
        The engine has no variant for the plan's CP mode, or not for the model's attention; the
        message names the rule and its source.
    """
    lay = plan.layout
    if lay.cp <= 1:
        return None
    name = ENGINE_NAMES.get(engine, engine)
    rule = rules_for(engine).cp
    if rule is None:
        raise StudioError(
            f"{name} export: this engine version has no context-parallelism rules; plan with CP = 1"
        )
    variant = rule.decode if lay.cp_mode == "decode" else rule.prefill
    if variant is None:
        why = rule.prefill_refusal or f"{name} has no {lay.cp_mode} context parallelism"
        raise StudioError(f"{name} export of CP={lay.cp} ({lay.cp_mode}): {why}")
    kind = "mla" if project.model.mla is not None else "gqa"
    if kind not in variant.attention:
        raise StudioError(
            f"{name} export of CP={lay.cp} ({lay.cp_mode}): {name} runs it for "
            f"{' and '.join(a.upper() for a in variant.attention)} attention only and "
            f"'{project.model.name}' uses {kind.upper()} (source: {variant.source})"
        )
    group = None
    if lay.cp_mode == "prefill":
        group = Layout(tp=lay.tp * lay.cp, pp=lay.pp, dp=lay.replicas)
    servers = f"one server per CP group of {lay.tp * lay.pp * lay.cp} GPUs" + (
        f", {lay.replicas} servers (put a load balancer in front)" if lay.replicas > 1 else ""
    )
    if engine == "vllm":
        if lay.cp_mode == "decode":
            return CpExport(
                {"decode-context-parallel-size": lay.cp},
                (
                    f"Decode context parallelism: each GPU of a TP group keeps every {lay.cp}-th token of the KV "
                    "cache (--decode-context-parallel-size).",
                ),
                None,
            )
        notes = [
            f"Prefill context parallelism: --prefill-context-parallel-size {lay.cp} with "
            f"--decode-context-parallel-size {lay.cp} so the KV cache is split over the PCP ranks as "
            f"planned; vLLM runs PCP without data parallelism, so this is {servers}."
        ]
        if project.model.is_moe and lay.ep > 1:
            notes.append(f"vLLM's expert-parallel group spans TP x PCP = {lay.tp * lay.cp} GPUs.")
        return CpExport(
            {"prefill-context-parallel-size": lay.cp, "decode-context-parallel-size": lay.cp},
            tuple(notes),
            group,
        )
    if engine == "sglang":
        return CpExport(
            {"dcp-size": lay.cp},
            (
                f"Decode context parallelism: --dcp-size {lay.cp} stripes each request's MLA KV cache over the "
                "ranks of the TP group.",
            ),
            None,
        )
    if engine == "trtllm":
        if project.model.is_moe and lay.ep > lay.tp:
            raise StudioError(
                f"TensorRT-LLM export of CP={lay.cp}: EP={lay.ep} reaches across replicas (attention data "
                "parallelism), which Layout Studio does not export together with context parallelism; plan EP ≤ TP"
            )
        if lay.cp_mode == "decode":
            gpu_names = " ".join(s.name for s in project.cluster.gpu_specs.values())
            notes = [
                f"Helix decode context parallelism: tensor_parallel_size {lay.tp // lay.cp} (attention heads) x "
                f"context_parallel_size {lay.cp} (KV cache) = the plan's TP {lay.tp}; the FFN/MoE layers use "
                "all of them. TensorRT-LLM runs Helix in the generation servers of disaggregated serving; "
                "set cp_config.tokens_per_block to kv_cache_config.tokens_per_block."
            ]
            if not any(k in gpu_names for k in ("B200", "B300", "GB200", "GB300", "Blackwell")):
                notes.append(
                    "TensorRT-LLM documents Helix on Blackwell GPUs only; these GPUs are not Blackwell."
                )
            return CpExport(
                {"context_parallel_size": lay.cp, "cp_config": {"cp_type": variant.cp_type}},
                tuple(notes),
                None,
                tensor_parallel=lay.tp // lay.cp,
            )
        return CpExport(
            {"context_parallel_size": lay.cp, "cp_config": {"cp_type": variant.cp_type}},
            (
                f"Prefill context parallelism: context_parallel_size {lay.cp} with cp_config.cp_type "
                f"{variant.cp_type} (a prototype field in TensorRT-LLM 1.4); {servers}.",
            ),
            group,
        )
    raise StudioError(f"unknown engine '{engine}' for context parallelism (vllm, sglang, trtllm)")
