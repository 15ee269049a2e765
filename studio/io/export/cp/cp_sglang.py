"""SGLang's context parallelism: decode CP as ``--dcp-size`` (MLA models); its prefill CP runs a
different layout and is refused by the rules (``context_parallel.prefill_refusal``)."""

from __future__ import annotations

from studio.core.layout import Layout
from studio.core.project import Project
from studio.io.export.cp.context_parallel import CpExport


def cp_settings(project: Project, lay: Layout, servers: str, group: Layout | None) -> CpExport:
    """SGLang's flags for the plan's decode CP."""
    return CpExport(
        {"dcp-size": lay.cp},
        (f"Decode context parallelism: --dcp-size {lay.cp} stripes each request's MLA KV cache over the "
         "ranks of the TP group.",),
        None,
    )
