"""Fixtures of the GUI tests: a small real project (2 × DGX H100 from the bundled presets,
Llama-3.1-70B from its Hugging Face config.json in tests/data/gui) and a document around it."""

from __future__ import annotations

from pathlib import Path

import pytest

from studio.core.builders import build_cluster
from studio.core.layout import Layout
from studio.core.project import Project
from studio.core.workload import Workload
from studio.io.hf_config import load_model_config
from studio.io.presets import load_catalog

DATA = Path(__file__).resolve().parents[1] / "data" / "gui"


def engine_evaluate():
    """The real engine's ``evaluate``, or skip the test while it is not installed."""
    import studio.engine as engine

    fn = getattr(engine, "evaluate", None)
    if fn is None:
        pytest.skip("studio.engine.evaluate is not available yet")
    return fn


@pytest.fixture(scope="session")
def catalog():
    return load_catalog()


@pytest.fixture(scope="session")
def model():
    return load_model_config(DATA / "llama-3.1-70b.config.json")


def make_project(catalog, model, nodes: int = 2, template: str = "dgx-h100", layout: Layout | None = None) -> Project:
    t = catalog.node(template)
    cluster = build_cluster(t, nodes, catalog.gpu(t.gpu_type), catalog.links, name=f"{nodes}× {t.name}")
    return Project(
        name="GUI test plan",
        cluster=cluster,
        model=model,
        workload=Workload(isl=1024, osl=256, batch=8),
        layout=layout or Layout(tp=8, pp=2, micro_batches=2),
    )


@pytest.fixture
def project(catalog, model) -> Project:
    return make_project(catalog, model)
