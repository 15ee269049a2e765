"""Context parallelism in the engines' own flags, or a refusal that says why an engine cannot run it.

The checks common to every engine read ``context_parallel`` in ``presets/engines/rules.json`` (which
CP modes and attention kinds an engine runs); the flags are the engine's own module
(``engines.<id>.export.context_parallel``):

* **vLLM** (:mod:`.cp_vllm`) — decode CP: ``--decode-context-parallel-size``. Prefill CP:
  ``--prefill-context-parallel-size``, with DCP = PCP where vLLM's DCP rule allows it (else PCP alone,
  a whole KV copy per PCP rank); one server per CP group.
* **SGLang** (:mod:`.cp_sglang`) — decode CP: ``--dcp-size`` for MLA models; its prefill CP runs a
  different layout and is refused with the reason.
* **TensorRT-LLM** (:mod:`.cp_trtllm`) — refused: Helix runs in disaggregated generation servers on
  Blackwell only, RING is not implemented in the PyTorch backend.
"""

from __future__ import annotations

from dataclasses import dataclass

from studio.core.errors import StudioError
from studio.core.layout import Layout
from studio.core.project import Project
from studio.engine.plan.results import PlanResult
from studio.io.export.checks.rules import rules_for


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
    import importlib

    from studio.io.export.engines import engine_spec

    module = importlib.import_module(engine_spec(engine).context_parallel)
    settings: CpExport = module.cp_settings(project, lay, servers, group)
    return settings
