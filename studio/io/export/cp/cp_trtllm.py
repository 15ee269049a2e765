"""TensorRT-LLM's context parallelism: refused for an aggregated server with the engine's reasons
(Helix runs in disaggregated generation servers on Blackwell; RING is not in the PyTorch backend)."""

from __future__ import annotations

from studio.core.errors import StudioError
from studio.core.layout import Layout
from studio.core.project import Project
from studio.io.export.checks.startup_rules import rule
from studio.io.export.cp.context_parallel import CpExport
from studio.io.export.serving import is_blackwell


def cp_settings(project: Project, lay: Layout, servers: str, group: Layout | None) -> CpExport:
    """Always refused here.

    Raises
    ------
    StudioError
        The reason, with the start-up rules it comes from.
    """
    raise StudioError(_trtllm_refusal(project, lay))


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
