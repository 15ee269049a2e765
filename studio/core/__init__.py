"""Pure, frozen pydantic domain model: hardware, model architecture, workload, layout, project.

Every value is immutable; edits are pure functions in :mod:`studio.core.edits` that return a new value.
"""

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
