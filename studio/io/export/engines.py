"""The engines an export can target, as data: ``engines.<id>.export`` in ``presets/engines/rules.json``
names each engine's label, the formats it writes, the module that builds its files and the one
that builds its disaggregated recipe. Adding an engine is one module (with :class:`EngineExporter`'s
``build``) and one such entry; the CLI, the export dialog and the report read the matrix from here.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Protocol

from studio.core.errors import StudioError

if TYPE_CHECKING:
    from studio.core.project import Project
    from studio.engine.plan.results import PlanResult
    from studio.io.export.bundle import ExportBundle
    from studio.io.export.deployment import Deployment

RULES_FILE = "engines/rules.json"


class EngineExporter(Protocol):
    """What an engine's export module provides."""

    def build(self, project: Project, plan: PlanResult, fmt: str, model: str, dep: Deployment,
              notes: list[str]) -> ExportBundle:
        """The engine's files of one plan in format ``fmt``."""
        ...


@dataclass(frozen=True)
class EngineSpec:
    """One engine's entry: label, version, formats and modules."""

    id: str
    label: str
    version: str
    formats: tuple[str, ...]
    module: str
    disagg: str | None
    disagg_formats: tuple[str, ...]
    vendor_only: bool  # no recipe at all for a GPU vendor the engine has no image for
    dashed_keys: bool = False  # config-file keys are flag names (vLLM, SGLang), not snake_case
    speculative: str = ""  # module writing and checking the speculative-decoding settings
    context_parallel: str = ""  # module turning the plan's CP into the engine's settings (or refusing it)

    def exporter(self) -> EngineExporter:
        """The module that builds this engine's files."""
        module: EngineExporter = importlib.import_module(self.module)
        return module


def _strings(value: object, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise StudioError(f"field '{where}' must be a list of names", RULES_FILE)
    return tuple(value)


@lru_cache(maxsize=1)
def _table() -> tuple[dict[str, EngineSpec], dict[str, str]]:
    from studio.io.presets import presets_root, read_json

    data = read_json(presets_root().joinpath(*RULES_FILE.split("/")), RULES_FILE)
    formats = data.get("formats")
    if not isinstance(formats, dict) or not formats:
        raise StudioError("field 'formats' must map each format to its label", RULES_FILE)
    specs: dict[str, EngineSpec] = {}
    for eid, block in data.get("engines", {}).items():
        e = block.get("export") if isinstance(block, dict) else None
        if not isinstance(e, dict):
            raise StudioError(f"field 'engines.{eid}.export' is missing", RULES_FILE)
        w = f"engines.{eid}.export"
        fmts = _strings(e.get("formats"), w + ".formats")
        unknown = sorted(set(fmts) - set(formats))
        if unknown:
            raise StudioError(f"field '{w}.formats' names {', '.join(unknown)}; allowed: {', '.join(formats)}",
                              RULES_FILE)
        specs[eid] = EngineSpec(
            id=eid, label=str(e.get("label", eid)), version=str(block.get("version", eid)), formats=fmts,
            module=str(e["module"]), disagg=e.get("disagg"),
            disagg_formats=_strings(e.get("disagg_formats", []), w + ".disagg_formats"),
            vendor_only=bool(e.get("vendor_only", False)), dashed_keys=e.get("config_keys") == "dashed",
            speculative=str(e.get("speculative", "")),
            context_parallel=str(e.get("context_parallel", "")),
        )
    return specs, {str(k): str(v) for k, v in formats.items()}


def engine_specs() -> dict[str, EngineSpec]:
    """Every engine by id, in the rules file's order."""
    return dict(_table()[0])


def format_labels() -> dict[str, str]:
    """Every export format and its label."""
    return dict(_table()[1])


def engine_spec(engine: str) -> EngineSpec:
    """The entry of ``engine``.

    Raises
    ------
    StudioError
        An engine without an entry (the message lists the engines there are).
    """
    specs = _table()[0]
    if engine not in specs:
        raise StudioError(f"engine '{engine}' is not supported; allowed: {', '.join(specs)}")
    return specs[engine]


def format_refusal(engine: str, fmt: str) -> str | None:
    """Why ``engine`` cannot be exported as ``fmt`` (``None`` when it can)."""
    spec, labels = engine_spec(engine), _table()[1]
    if fmt not in labels:
        return f"format '{fmt}' is not supported; allowed: {', '.join(labels)}"
    if fmt in spec.formats:
        return None
    return (f"format '{fmt}' is available for engines "
            f"{' and '.join(e for e, s in _table()[0].items() if fmt in s.formats)}; for {engine} use "
            + ", ".join(spec.formats[:-1]) + f" or {spec.formats[-1]}")


ENGINES: tuple[str, ...] = tuple(engine_specs())
FORMATS: tuple[str, ...] = tuple(format_labels())
ENGINE_LABELS: dict[str, str] = {e: s.label for e, s in engine_specs().items()}
ENGINE_VERSIONS: dict[str, str] = {e: s.version for e, s in engine_specs().items()}
ENGINE_FORMATS: dict[str, tuple[str, ...]] = {e: s.formats for e, s in engine_specs().items()}
FORMAT_LABELS: dict[str, str] = format_labels()
