"""Choosing the serving engine of a project: one edit that the window and the command line share.

:func:`with_engine` sets ``serving.runtime`` and ``serving.runtime_version`` and, unless the caller
keeps its own, the memory fraction that engine starts with on the project's GPU and layout (vLLM
``gpu_memory_utilization``, TensorRT-LLM ``free_gpu_memory_fraction``, SGLang's
``mem_fraction_static`` from its reserve rule) — so a switch of engine is one undo step that moves
every number the engine decides. :func:`engine_versions` lists the versions a selector offers.
"""

from __future__ import annotations

from studio.core.project import Project
from studio.engine.runtime import ENGINE_NAMES, engine_profiles, engine_setup


def with_engine(project: Project, runtime: str, version: str | None, *, keep_fraction: bool = False) -> Project:
    """``project`` served by ``runtime`` at ``version`` (None = the newest profile).

    Raises
    ------
    StudioError
        For an engine that is not one of vllm, trtllm, sglang (via the profile loader); a malformed
        version is refused by the project's validation (ValueError naming ``runtime_version``).
    """
    engine_profiles(runtime)  # an unknown engine is refused with the allowed ones
    sv = project.serving.replace(runtime=runtime, runtime_version=version)
    out = project.replace(serving=sv)
    if not keep_fraction:
        out = out.replace(serving=sv.replace(gpu_memory_utilization=engine_setup(out).default_fraction))
    return out


def engine_versions(runtime: str) -> list[tuple[str, str]]:
    """``(version, label)`` of each bundled profile of ``runtime``, newest first: the first version
    each profile covers and its label."""
    out = []
    for p in reversed(engine_profiles(runtime)):
        out.append((".".join(str(x) for x in p.version_from), p.label))
    return out


__all__ = ["ENGINE_NAMES", "engine_versions", "with_engine"]
