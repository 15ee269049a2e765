"""Fixtures of the explorer tests: the bundled example projects and a document around them."""

from __future__ import annotations

from pathlib import Path

import pytest

from studio.core.project import Project
from studio.io.project_file import load_project

EXAMPLES = Path(__file__).resolve().parents[2] / "presets" / "examples"


def example(name: str) -> Project:
    return load_project(EXAMPLES / f"{name}.json")


@pytest.fixture(scope="session")
def dgx405() -> Project:
    """2 × DGX H100, Llama-3.1-405B BF16."""
    return example("dgx-h100-2node-llama-405b")


@pytest.fixture(scope="session")
def l40s70() -> Project:
    """8 × L40S PCIe, Llama-3.1-70B FP8."""
    return example("l40s-8x-llama-70b-fp8")


@pytest.fixture(scope="session")
def bridge70() -> Project:
    """8 × H100 PCIe with NVLink-bridge pairs, Llama-3.1-70B."""
    return example("h100-pcie-bridge-llama-70b")


def rewire_bridges(project: Project, pairs: list[tuple[int, int]]) -> Project:
    """The bridge box with its NVLink bridges moved to other GPU pairs (an irregular wiring where
    cluster order is not the best placement)."""
    cl = project.cluster
    bridges = [lk for lk in cl.links if lk.kind.startswith("nvlink-bridge")]
    others = [lk for lk in cl.links if not lk.kind.startswith("nvlink-bridge")]
    moved = [lk.model_copy(update={"id": f"n0/gpu{a}~n0/gpu{b}", "a": f"n0/gpu{a}", "b": f"n0/gpu{b}"})
             for lk, (a, b) in zip(bridges, pairs, strict=True)]
    return project.replace(cluster=cl.replace(links=others + moved))


@pytest.fixture(autouse=True, scope="session")
def _protect_none():
    from studio.gui.toolkit.qtfix import protect_none_refcount

    protect_none_refcount()
