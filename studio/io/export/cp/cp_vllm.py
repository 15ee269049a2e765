"""vLLM's context parallelism: ``--decode-context-parallel-size`` (DCP, inside the TP group), and
prefill CP as ``--prefill-context-parallel-size`` with DCP = PCP where vLLM's DCP rule allows it
(startup rules ``vllm.cp.dcp_gqa``, ``vllm.cp.dcp_with_pcp``), one server per CP group."""

from __future__ import annotations

from studio.core.layout import Layout
from studio.core.project import Project
from studio.io.export.checks.startup_rules import rule
from studio.io.export.cp.context_parallel import CpExport


def cp_settings(project: Project, lay: Layout, servers: str, group: Layout | None) -> CpExport:
    """vLLM's flags for the plan's CP (already checked against ``context_parallel`` of the rules)."""
    if lay.cp_mode == "decode":
        return CpExport(
            {"decode-context-parallel-size": lay.cp},
            (f"Decode context parallelism: each GPU of a TP group keeps every {lay.cp}-th token of the KV "
             "cache (--decode-context-parallel-size).",),
            None,
        )
    return _vllm_prefill(project, lay, servers, group)


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
