"""Fixtures of the importer tests: the bundled GPU and link presets (not the models, which these
tests do not need) and the sample files under ``tests/data``."""

from __future__ import annotations

from pathlib import Path

import pytest

from studio.core.hardware import GpuSpec, LinkKind
from studio.io.presets import Catalog, presets_root, read_json

DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.fixture(scope="session")
def catalog() -> Catalog:
    root = presets_root()
    gpus = {d["id"]: GpuSpec.model_validate(d) for d in read_json(root / "gpus.json", "gpus")["gpus"]}
    links = {d["id"]: LinkKind.model_validate(d) for d in read_json(root / "links.json", "links")["links"]}
    return Catalog(gpus=gpus, links=links, nodes={}, models={})


def data_text(*parts: str) -> str:
    return DATA.joinpath(*parts).read_text(encoding="utf-8")


@pytest.fixture(scope="session")
def catalog_full():
    """The whole bundled catalogue (node templates and models too)."""
    from studio.io.presets import load_catalog

    return load_catalog()
