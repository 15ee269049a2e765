"""Pure, frozen pydantic domain model: hardware, model architecture, workload, layout, project.

Every value is immutable; edits are pure functions in :mod:`studio.core.edits` that return a new value.

The names below are imported on first use (``from studio.core import Project`` works as before), so
that importing one light module such as :mod:`studio.core.errors` does not build every pydantic
model of the package.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from studio.core.architecture import LLMArchitecture, MLAConfig, ModulePrecision, MoEConfig
    from studio.core.errors import StudioError
    from studio.core.hardware import (
        Cluster,
        GpuInstance,
        GpuSpec,
        Link,
        LinkFamily,
        LinkKind,
        Nic,
        Node,
        NodeTemplate,
        Switch,
    )
    from studio.core.layout import Layout
    from studio.core.precision import DType
    from studio.core.project import SCHEMA_VERSION, Project
    from studio.core.workload import ServingConfig, Workload

#: Public name -> the submodule that defines it.
_EXPORTS: dict[str, str] = {
    "SCHEMA_VERSION": "studio.core.project",
    "Cluster": "studio.core.hardware",
    "DType": "studio.core.precision",
    "GpuInstance": "studio.core.hardware",
    "GpuSpec": "studio.core.hardware",
    "LLMArchitecture": "studio.core.architecture",
    "Layout": "studio.core.layout",
    "Link": "studio.core.hardware",
    "LinkFamily": "studio.core.hardware",
    "LinkKind": "studio.core.hardware",
    "MLAConfig": "studio.core.architecture",
    "MoEConfig": "studio.core.architecture",
    "ModulePrecision": "studio.core.architecture",
    "Nic": "studio.core.hardware",
    "Node": "studio.core.hardware",
    "NodeTemplate": "studio.core.hardware",
    "Project": "studio.core.project",
    "ServingConfig": "studio.core.workload",
    "StudioError": "studio.core.errors",
    "Switch": "studio.core.hardware",
    "Workload": "studio.core.workload",
}

__all__ = [
    "SCHEMA_VERSION",
    "Cluster",
    "DType",
    "GpuInstance",
    "GpuSpec",
    "LLMArchitecture",
    "Layout",
    "Link",
    "LinkFamily",
    "LinkKind",
    "MLAConfig",
    "MoEConfig",
    "ModulePrecision",
    "Nic",
    "Node",
    "NodeTemplate",
    "Project",
    "ServingConfig",
    "StudioError",
    "Switch",
    "Workload",
]


def __getattr__(name: str) -> Any:
    """Import the submodule defining ``name`` on first access and keep the value (PEP 562)."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'studio.core' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
