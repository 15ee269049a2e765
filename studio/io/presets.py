"""Bundled presets (GPUs, link kinds, node templates, models, example projects), loaded through
:mod:`importlib.resources` so they are found in an installed wheel as well as in a checkout.

In the wheel the top-level ``presets/`` and ``resources/`` folders live at ``studio/_data/``; in a
source checkout they are read from the repository root.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from studio.core.architecture import LLMArchitecture
from studio.core.errors import StudioError, nearest
from studio.core.hardware import GpuSpec, LinkKind, NodeTemplate


def _data_root(name: str) -> Traversable:
    packaged = resources.files("studio").joinpath("_data", name)
    if packaged.is_dir():
        return packaged
    checkout = Path(__file__).resolve().parents[2] / name
    if checkout.is_dir():
        return checkout  # type: ignore[return-value]
    raise StudioError(f"the bundled '{name}' folder is missing from this installation; reinstall layout-studio")


def presets_root() -> Traversable:
    """Folder holding the bundled presets."""
    return _data_root("presets")


def resources_root() -> Traversable:
    """Folder holding icons and style sheets."""
    return _data_root("resources")


def read_json(node: Traversable, what: str) -> Any:
    """Decode a bundled JSON file; a broken preset is a clear error, not a traceback."""
    try:
        return json.loads(node.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise StudioError(f"cannot read {what}: {exc}", str(node)) from None


def _validate(model: type, data: Any, where: str):
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        e = exc.errors()[0]
        loc = ".".join(str(p) for p in e["loc"])
        raise StudioError(f"field '{loc}': {e['msg']}", where) from None


@dataclass(frozen=True)
class ModelPreset:
    """A model preset: a real Hugging Face ``config.json`` plus where it came from."""

    id: str
    name: str
    hf_model_id: str | None
    architecture: LLMArchitecture
    sources: dict[str, str]
    notes: str = ""


@dataclass(frozen=True)
class Catalog:
    """Every bundled preset, by id."""

    gpus: dict[str, GpuSpec]
    links: dict[str, LinkKind]
    nodes: dict[str, NodeTemplate]
    models: dict[str, ModelPreset]

    def gpu(self, gpu_id: str) -> GpuSpec:
        return _lookup(self.gpus, gpu_id, "GPU")

    def link(self, link_id: str) -> LinkKind:
        return _lookup(self.links, link_id, "link kind")

    def node(self, node_id: str) -> NodeTemplate:
        return _lookup(self.nodes, node_id, "node template")

    def model(self, model_id: str) -> ModelPreset:
        return _lookup(self.models, model_id, "model")

    def template_for_gpu(self, gpu_id: str) -> NodeTemplate:
        """The usual node template of a GPU (its ``default_node_template``)."""
        spec = self.gpu(gpu_id)
        if spec.default_node_template and spec.default_node_template in self.nodes:
            return self.nodes[spec.default_node_template]
        for t in self.nodes.values():
            if t.gpu_type == gpu_id:
                return t
        raise StudioError(f"no node template for GPU '{gpu_id}'; pass --node-template")


def _lookup(table: dict, key: str, what: str):
    if key in table:
        return table[key]
    hint = nearest(key, sorted(table))
    extra = f"; did you mean {', '.join(repr(h) for h in hint)}?" if hint else ""
    raise StudioError(f"unknown {what} '{key}'{extra} (see `layout-studio presets`)")


@lru_cache(maxsize=1)
def load_catalog() -> Catalog:
    """Load and validate every bundled preset (cached)."""
    from studio.io.hf_config import architecture_from_config

    root = presets_root()
    gpus = {
        g.id: g
        for g in (
            _validate(GpuSpec, d, f"presets/gpus.json[{i}]")
            for i, d in enumerate(read_json(root / "gpus.json", "GPU presets")["gpus"])
        )
    }
    links = {
        k.id: k
        for k in (
            _validate(LinkKind, d, f"presets/links.json[{i}]")
            for i, d in enumerate(read_json(root / "links.json", "link presets")["links"])
        )
    }
    nodes = {
        t.id: t
        for t in (
            _validate(NodeTemplate, d, f"presets/nodes.json[{i}]")
            for i, d in enumerate(read_json(root / "nodes.json", "node templates")["nodes"])
        )
    }
    models: dict[str, ModelPreset] = {}
    for entry in sorted((root / "models").iterdir(), key=lambda p: p.name):
        if not entry.name.endswith(".json"):
            continue
        where = f"presets/models/{entry.name}"
        data = read_json(entry, where)
        arch = architecture_from_config(
            data["config"],
            model_id=data["id"],
            name=data["name"],
            source=where,
            hf_model_id=data.get("hf_model_id"),
            sources=tuple(f"{k}: {v}" for k, v in data.get("sources", {}).items()),
        )
        models[data["id"]] = ModelPreset(
            id=data["id"],
            name=data["name"],
            hf_model_id=data.get("hf_model_id"),
            architecture=arch,
            sources=dict(data.get("sources", {})),
            notes=data.get("notes", ""),
        )
    return Catalog(gpus=gpus, links=links, nodes=nodes, models=models)


def example_paths() -> dict[str, Traversable]:
    """Bundled example projects by name (file stem)."""
    root = presets_root() / "examples"
    return {p.name[:-5]: p for p in root.iterdir() if p.name.endswith(".json")}
