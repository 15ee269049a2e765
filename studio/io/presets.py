"""Bundled presets (GPUs, link kinds, node templates, models, example projects), loaded through
:mod:`importlib.resources` so they are found in an installed wheel as well as in a checkout.

In the wheel the top-level ``presets/`` and ``resources/`` folders live at ``studio/_data/``; in a
source checkout they are read from the repository root.

The catalogue is read per kind on first use and validated once per process; the validated values
of each file (and the bundled example projects, :func:`load_example`) are kept on disk between
processes by :mod:`studio.io.preset_cache`, keyed by the file's bytes and the code that validates
them: a command line that uses a GPU, its node template, the link kinds, one model and the bundled
example skips ~10 ms of decoding and validating. Errors are never cached: a broken file is read and
refused every time, with the same message.
"""

from __future__ import annotations

import json
import sys
import threading
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from studio.core.architecture import LLMArchitecture
from studio.core.errors import StudioError, nearest
from studio.core.hardware import GpuSpec, LinkKind, NodeTemplate
from studio.core.packaged import data_root
from studio.io.preset_cache import cached

if TYPE_CHECKING:
    from studio.core.project import Project

    if sys.version_info >= (3, 11):
        from importlib.resources.abc import Traversable
    else:
        from importlib.abc import Traversable


def presets_root() -> Traversable:
    """Folder holding the bundled presets."""
    return data_root("presets")


def resources_root() -> Traversable:
    """Folder holding icons and style sheets."""
    return data_root("resources")


def read_json(node: Traversable, what: str) -> Any:
    """Decode a bundled JSON file; a broken preset is a clear error, not a traceback."""
    return _decode_json(_read_bytes(node, what), node, what)


def _read_bytes(node: Traversable, what: str) -> bytes:
    try:
        return node.read_bytes()
    except OSError as exc:
        raise StudioError(f"cannot read {what}: {exc}", str(node)) from None


def _decode_json(raw: bytes, node: Traversable, what: str) -> Any:
    try:
        return json.loads(raw.decode("utf-8"))
    except ValueError as exc:
        raise StudioError(f"cannot read {what}: {exc}", str(node)) from None


def _validate(model: type[BaseModel], data: Any, where: str) -> Any:
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


class Catalog:
    """Every bundled preset, by id; each kind is read and validated on first use, once.

    ``load_catalog().gpu("h100-sxm")`` reads ``gpus.json`` only; :meth:`model` reads the one model
    file it needs (``presets/models/<id>.json``) unless every model was asked for already. Kinds
    given to the constructor are used as they are (tests build small catalogues that way).

    Parameters
    ----------
    gpus, links, nodes, models:
        Presets to use instead of the bundled ones of that kind.
    root:
        Folder to read the other kinds from (default :func:`presets_root`).
    """

    def __init__(
        self,
        gpus: dict[str, GpuSpec] | None = None,
        links: dict[str, LinkKind] | None = None,
        nodes: dict[str, NodeTemplate] | None = None,
        models: dict[str, ModelPreset] | None = None,
        *,
        root: Traversable | None = None,
    ) -> None:
        self._root = root
        self._gpus, self._links, self._nodes, self._models = gpus, links, nodes, models
        self._some_models: dict[str, ModelPreset] = {}
        self._lock = threading.RLock()  # the GUI's worker thread and the window may ask at once

    @property
    def root(self) -> Traversable:
        if self._root is None:
            self._root = presets_root()
        return self._root

    @property
    def gpus(self) -> dict[str, GpuSpec]:
        """GPU presets by id (``presets/gpus.json``)."""
        with self._lock:
            if self._gpus is None:
                self._gpus = _load_list(self.root, "gpus.json", "gpus", GpuSpec, "GPU presets")
            return self._gpus

    @property
    def links(self) -> dict[str, LinkKind]:
        """Link kinds by id (``presets/links.json``)."""
        with self._lock:
            if self._links is None:
                self._links = _load_list(self.root, "links.json", "links", LinkKind, "link presets")
            return self._links

    @property
    def nodes(self) -> dict[str, NodeTemplate]:
        """Node templates by id (``presets/nodes.json``)."""
        with self._lock:
            if self._nodes is None:
                self._nodes = _load_list(self.root, "nodes.json", "nodes", NodeTemplate, "node templates")
            return self._nodes

    @property
    def models(self) -> dict[str, ModelPreset]:
        """Every model preset by id (``presets/models/*.json``, in file-name order)."""
        with self._lock:
            if self._models is None:
                models: dict[str, ModelPreset] = {}
                for entry in sorted((self.root / "models").iterdir(), key=lambda p: p.name):
                    if entry.name.endswith(".json"):
                        preset = self._some_models.get(entry.name[:-5]) or _load_model(entry)
                        models[preset.id] = preset
                self._models = models
            return self._models

    def gpu(self, gpu_id: str) -> GpuSpec:
        return _lookup(self.gpus, gpu_id, "GPU")

    def link(self, link_id: str) -> LinkKind:
        return _lookup(self.links, link_id, "link kind")

    def node(self, node_id: str) -> NodeTemplate:
        return _lookup(self.nodes, node_id, "node template")

    def model(self, model_id: str) -> ModelPreset:
        """The model preset ``model_id``, reading only its own file when it has one."""
        with self._lock:
            if self._models is None:
                if model_id in self._some_models:
                    return self._some_models[model_id]
                entry = self.root / "models" / f"{model_id}.json"
                if "/" not in model_id and entry.is_file():
                    preset = _load_model(entry)
                    if preset.id == model_id:
                        self._some_models[model_id] = preset
                        return preset
        return _lookup(self.models, model_id, "model")

    def template_for_gpu(self, gpu_id: str) -> NodeTemplate:
        """The usual node template of a GPU (its ``default_node_template``)."""
        spec = self.gpu(gpu_id)
        if spec.default_node_template and spec.default_node_template in self.nodes:
            return self.nodes[spec.default_node_template]
        for t in self.nodes.values():
            if t.gpu_type == gpu_id:
                return t
        raise StudioError(f"no node template for GPU '{gpu_id}'; name a node template", field="node_template")


def _load_list(root: Traversable, file: str, key: str, model: type, what: str) -> dict[str, Any]:
    """Validate every entry of ``root/file``'s ``key`` list; returns them by id (cached on disk)."""
    node = root / file
    raw = _read_bytes(node, what)

    def build() -> dict[str, Any]:
        entries = _decode_json(raw, node, what)[key]
        values = (_validate(model, d, f"presets/{file}[{i}]") for i, d in enumerate(entries))
        return {v.id: v for v in values}

    table = cached(key, raw, dict, build)
    if not all(type(v) is model for v in table.values()):  # an entry of other code: load it afresh
        table = build()
    return table


def _load_model(entry: Traversable) -> ModelPreset:
    """Read one ``presets/models/<id>.json``: its ``config.json`` and where it came from (cached on
    disk)."""
    where = f"presets/models/{entry.name}"
    raw = _read_bytes(entry, where)
    return cached(f"model-{entry.name.removesuffix('.json')}", raw, ModelPreset,
                  lambda: _model_from_data(_decode_json(raw, entry, where), where))


def _model_from_data(data: Any, where: str) -> ModelPreset:
    from studio.io.importers.hf_config import architecture_from_config

    arch = architecture_from_config(
        data["config"],
        model_id=data["id"],
        name=data["name"],
        source=where,
        hf_model_id=data.get("hf_model_id"),
        sources=tuple(f"{k}: {v}" for k, v in data.get("sources", {}).items()),
    )
    return ModelPreset(
        id=data["id"],
        name=data["name"],
        hf_model_id=data.get("hf_model_id"),
        architecture=arch,
        sources=dict(data.get("sources", {})),
        notes=data.get("notes", ""),
    )


def _lookup(table: dict, key: str, what: str):
    if key in table:
        return table[key]
    hint = nearest(key, sorted(table))
    extra = f"; did you mean {', '.join(repr(h) for h in hint)}?" if hint else ""
    raise StudioError(f"unknown {what} '{key}'{extra} (see `layout-studio presets`)")


@lru_cache(maxsize=1)
def load_catalog() -> Catalog:
    """The bundled presets (one shared :class:`Catalog`; each kind is read on first use)."""
    return Catalog()


def example_paths() -> dict[str, Traversable]:
    """Bundled example projects by name (file stem)."""
    root = presets_root() / "examples"
    return {p.name[:-5]: p for p in root.iterdir() if p.name.endswith(".json")}


def load_example(node: Traversable, source: str) -> Project:
    """The bundled example project ``node`` (one of :func:`example_paths`), decoded, migrated and
    validated as :func:`studio.io.project_file.project_from_json` does, ``source`` naming it in
    errors; the validated project is cached on disk (:mod:`studio.io.preset_cache`)."""
    from studio.core.project import Project

    raw = node.read_bytes()

    def build() -> Project:
        from studio.io.project_file import project_from_json

        return project_from_json(raw.decode("utf-8"), source)

    return cached(f"example-{node.name.removesuffix('.json')}", raw, Project, build)
