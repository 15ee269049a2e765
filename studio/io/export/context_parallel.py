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
from studio.io.export.serving import is_blackwell
from studio.io.export.startup_rules import rule


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
    from studio.io.export.engines import ENGINE_LABELS

    name = ENGINE_LABELS.get(engine, engine)
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
        return _vllm_prefill(project, lay, servers, group)
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
        raise StudioError(_trtllm_refusal(project, lay))
    raise StudioError(f"unknown engine '{engine}' for context parallelism (vllm, sglang, trtllm)")


def vllm_dcp_allowed(project: Project, tp: int, dcp: int) -> bool:
    """Whether vLLM accepts ``--decode-context-parallel-size dcp`` at ``tp`` for this model
    (startup rule ``vllm.cp.dcp_gqa``: MLA, or GQA with TP above the KV heads, DCP ≤ TP / KV heads
    and the query heads per KV head divisible by DCP)."""
    m = project.model
    if m.mla is not None:
        return True
    kv = m.num_kv_heads
    return tp > kv and dcp <= tp // kv and (m.num_attention_heads // kv) % dcp == 0


def _vllm_prefill(project: Project, lay: Layout, servers: str, group: Layout | None) -> CpExport:
    """vLLM prefill CP: PCP with DCP = PCP (the KV cache split over the PCP ranks, as planned) where
    vLLM's DCP rule allows it, else PCP alone, which keeps a whole KV copy on every PCP rank."""
    split = vllm_dcp_allowed(project, lay.tp, lay.cp)
    cfg: dict[str, object] = {"prefill-context-parallel-size": lay.cp}
    if split:
        cfg["decode-context-parallel-size"] = lay.cp
        notes = [f"Prefill context parallelism: --prefill-context-parallel-size {lay.cp} with "
                 f"--decode-context-parallel-size {lay.cp} so the KV cache is split over the PCP ranks as "
                 f"planned; vLLM runs PCP without data parallelism, so this is {servers}."]
    else:
        r = rule("vllm.cp.dcp_gqa")
        notes = [f"Prefill context parallelism: --prefill-context-parallel-size {lay.cp} alone. vLLM refuses "
                 f"--decode-context-parallel-size {lay.cp} for this model at TP {lay.tp} ({r.says}; "
                 f"{r.cite()}), so every PCP rank keeps a whole copy of the KV cache: the KV capacity per "
                 f"server is 1/{lay.cp} of the plan's. vLLM runs PCP without data parallelism, so this is "
                 f"{servers}."]
    if project.model.is_moe and lay.ep > 1:
        notes.append(f"vLLM's expert-parallel group spans TP x PCP = {lay.tp * lay.cp} GPUs.")
    return CpExport(cfg, tuple(notes), group)


def _trtllm_refusal(project: Project, lay: Layout) -> str:
    """Why TensorRT-LLM cannot run the plan's context parallelism (the startup rules' words)."""
    if lay.cp_mode == "prefill":
        r = rule("trtllm.cp.pytorch_types")
        return (f"TensorRT-LLM export of CP={lay.cp} (prefill): the planned KV split is TensorRT-LLM's RING "
                f"context parallelism, which its PyTorch backend does not run ({r.says}; {r.cite()}). "
                "Export prefill CP to vLLM, or plan CP = 1")
    where = rule("trtllm.cp.helix_disagg_generation")
    why = [f"{where.says} ({where.cite()})"]
    if not is_blackwell(project):
        bw = rule("trtllm.cp.helix_blackwell")
        why.append(f"{bw.says}, and these GPUs are not ({bw.cite()})")
    return (f"TensorRT-LLM export of CP={lay.cp} (decode): decode context parallelism is TensorRT-LLM's Helix; "
            + "; ".join(why) + ". An aggregated server cannot run it: export decode CP to vLLM "
            "(--decode-context-parallel-size) or SGLang (--dcp-size, MLA models), or plan CP = 1")
