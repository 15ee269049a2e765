"""The project file: one cluster, one model, one workload, one current layout, pinned alternatives.

Stored as JSON with a ``schema_version``. :func:`migrate` upgrades a decoded file of any earlier
version step by step (each step a pure ``dict -> dict`` function registered in ``MIGRATIONS``) before
validation; a file from a newer version is refused with a message saying so.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any, Literal

from pydantic import (
    Field,
    ModelWrapValidatorHandler,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

from studio.core.architecture import LLMArchitecture
from studio.core.base import Frozen
from studio.core.errors import StudioError
from studio.core.hardware import Cluster
from studio.core.layout import Layout
from studio.core.serving_mode import ServingMode
from studio.core.settings.fleet import FleetSettings
from studio.core.workload import ServingConfig, Workload

SCHEMA_VERSION = 4

#: What the layout recommendation optimises (the Explorer and "Best layout for my targets").
Objective = Literal["throughput", "cost", "latency"]


class LinkFit(Frozen):
    """Fitted latency-bandwidth model of one link kind (α-β model)."""

    latency_us: float = Field(ge=0, le=1e6)
    bandwidth_gbps: float = Field(gt=0, le=1e6, description="achieved bus bandwidth, GB/s")
    points: int = Field(0, ge=0)
    rms_rel_error: float = Field(0.0, ge=0)


class CalibrationProfile(Frozen):
    """Named set of fitted figures that replace the engine's defaults."""

    name: str = Field(min_length=1, max_length=120)
    description: str = ""
    link_fits: dict[str, LinkFit] = Field(default_factory=dict, description="by link kind id")
    efficiency: dict[str, float] = Field(
        default_factory=dict, description="engine efficiency factors by name (see engine constants)"
    )
    fit_error: dict[str, float] = Field(default_factory=dict, description="error of the fit, by measure")
    source_files: tuple[str, ...] = ()


class ExplorerSettings(Frozen):
    """How layouts are ranked. The TTFT / TPOT targets are the workload's
    (``Workload.ttft_ms`` / ``tpot_ms``), so the Explorer and "Best layout for my targets" rank
    the same way. The percentile SLO under load (p99 TTFT / TPOT at a request rate) is checked by
    :mod:`studio.service.slo`."""

    objective: Objective = Field("throughput", description="throughput per GPU, $ per M tokens, or latency")
    # A latency SLO as percentiles under load (optional; files without them load as before):
    ttft_p99_ms: float | None = Field(None, gt=0, le=1e9, description="p99 TTFT target, ms, at slo_rate_per_s")
    tpot_p99_ms: float | None = Field(None, gt=0, le=1e9, description="p99 TPOT target, ms, at slo_rate_per_s")
    slo_rate_per_s: float | None = Field(
        None, gt=0, le=1e7, description="request rate (req/s, all replicas, Poisson) the p99 targets hold at; "
        "None = the workload's load rate"
    )

    @model_serializer(mode="wrap")
    def _omit_unset_slo(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """An SLO field that is not set is left out of the file, so a project without an SLO is
        written exactly as before the fields existed."""
        data = handler(self)
        for name in _SLO_FIELDS:
            if data.get(name, 0) is None:
                del data[name]
        return data


_SLO_FIELDS = ("ttft_p99_ms", "tpot_p99_ms", "slo_rate_per_s")


class PinnedBatch(Frozen):
    """The batch a pinned layout was pinned at (the Explorer's row: sequences per replica), so
    that the comparison and Apply show it as it was swept."""

    layout: Layout
    batch: int = Field(ge=1, le=1_000_000, description="concurrent sequences per replica")


#: Most pinned layouts a project keeps (the comparison table and the report show a handful).
MAX_PINNED = 100


class Project(Frozen):
    """A planning document."""

    schema_version: int = Field(SCHEMA_VERSION, ge=1)
    name: str = Field("Untitled plan", max_length=200)
    description: str = ""
    cluster: Cluster
    model: LLMArchitecture
    model_ref: str | None = Field(None, description="preset id or path the model came from")
    workload: Workload = Workload()
    serving: ServingConfig = ServingConfig()
    layout: Layout = Layout()
    pinned: tuple[Layout, ...] = Field((), description="alternatives kept for comparison")
    pinned_batches: tuple[PinnedBatch, ...] = Field(
        (), description="the batch each pinned layout was pinned at; a pinned layout without one runs "
        "at the workload's batch"
    )
    explorer: ExplorerSettings = ExplorerSettings()
    calibrations: dict[str, CalibrationProfile] = Field(default_factory=dict)
    serving_mode: ServingMode = Field(
        default_factory=ServingMode, description="aggregated, or disaggregated prefill/decode pools"
    )
    fleet: FleetSettings = Field(
        default_factory=FleetSettings, description="the Fleet view's traffic, SLO, prices and facility figures"
    )

    @field_validator("pinned")
    @classmethod
    def _pinned_once_each(cls, v: tuple[Layout, ...]) -> tuple[Layout, ...]:
        """At most :data:`MAX_PINNED` pinned layouts, none twice: the window pins a layout once
        (pinning it again keeps its place), so a file listing one 5,000 times is not the studio's."""
        if len(v) > MAX_PINNED:
            raise ValueError(f"{len(v):,} pinned layouts; at most {MAX_PINNED} are kept for comparison")
        first: dict[Layout, int] = {}
        for i, lay in enumerate(v):
            if lay in first:
                raise ValueError(f"pinned[{i}] ({lay.label}) repeats pinned[{first[lay]}]; pin each layout once")
            first[lay] = i
        return v

    @model_serializer(mode="wrap")
    def _omit_default_serving_mode(self, handler):
        """A project served the default way (aggregated) is written without ``serving_mode``, so
        files of projects that never used disaggregated serving stay as they were."""
        data = handler(self)
        if isinstance(data, dict) and self.serving_mode == _AGGREGATED:
            data.pop("serving_mode", None)
        if isinstance(data, dict) and not self.pinned_batches:
            data.pop("pinned_batches", None)  # files of projects that never pinned a batch stay as they were
        if isinstance(data, dict) and self.fleet == _FLEET_DEFAULT:
            data.pop("fleet", None)  # nor do files of projects whose Fleet view kept its defaults
        return data

    @model_validator(mode="wrap")
    @classmethod
    def _keep_batches_of_pinned(cls, data: Any, handler: ModelWrapValidatorHandler[Project]) -> Project:
        """A pinned batch is kept only while its layout is pinned (the first per layout): an edit
        that unpins or drops a layout (unpin, a cluster or model change) drops its batch too."""
        project = handler(data)
        seen: set[Layout] = set()
        keep = []
        for b in project.pinned_batches:
            if b.layout in project.pinned and b.layout not in seen:
                seen.add(b.layout)
                keep.append(b)
        if len(keep) != len(project.pinned_batches):
            return project.model_copy(update={"pinned_batches": tuple(keep)})
        return project

    def pinned_batch(self, layout: Layout) -> int | None:
        """The batch ``layout`` was pinned at, or ``None`` (not pinned, or pinned without one)."""
        return next((b.batch for b in self.pinned_batches if b.layout == layout), None)

    def with_pin(self, layout: Layout, batch: int | None = None) -> Project:
        """This project with ``layout`` pinned last (at ``batch`` when given); a layout already
        pinned keeps its place and gets the new batch."""
        pinned = self.pinned if layout in self.pinned else (*self.pinned, layout)
        batches = tuple(b for b in self.pinned_batches if b.layout != layout)
        if batch is not None:
            batches += (PinnedBatch(layout=layout, batch=int(batch)),)
        return self.replace(pinned=pinned, pinned_batches=batches)


_AGGREGATED = ServingMode()
_FLEET_DEFAULT = FleetSettings()

Migration = Callable[[dict[str, Any]], dict[str, Any]]

#: ``MIGRATIONS[v]`` upgrades a decoded version-``v`` file to version ``v + 1``. A step is a pure
#: ``dict -> dict`` function: it gets data no caller still holds, must not read the version
#: field (``migrate`` sets it) and should raise ``KeyError``/``TypeError``/``ValueError`` on data it
#: cannot upgrade (turned into a :class:`StudioError` naming the step).


def _v1_to_v2(data: dict[str, Any]) -> dict[str, Any]:
    """Version 2 stores how the Explorer ranks layouts (``explorer.objective``); a version-1 file
    ranked by throughput, the Explorer's default then."""
    if not isinstance(data.get("explorer", {}), dict):
        raise TypeError("'explorer' must be an object")
    data.setdefault("explorer", {})
    data["explorer"].setdefault("objective", "throughput")
    return data


def _v2_to_v3(data: dict[str, Any]) -> dict[str, Any]:
    """Version 3 may name the serving engine's version (``serving.runtime_version``); a version-2
    file names none, which means the newest bundled profile of its runtime — what its numbers were
    computed with before engine profiles existed come closest to that."""
    if not isinstance(data.get("serving", {}), dict):
        raise TypeError("'serving' must be an object")
    return data


def _v3_to_v4(data: dict[str, Any]) -> dict[str, Any]:
    """Version 4 may store the Fleet view's settings (``fleet``: traffic, p99 SLO, headroom, prices,
    storage bandwidth, PUE, carbon intensity), prompt reuse (``workload.reuse``) and the KV tiers
    (``serving.kv_tiers``); a version-3 file has none of them, which means the Fleet view's defaults,
    no prompt repeats and the engine's own prefix-cache default with no host or NVMe tier: its
    figures stay as they were."""
    for part in ("fleet", "workload", "serving"):
        if not isinstance(data.get(part, {}), dict):
            raise TypeError(f"'{part}' must be an object")
    return data


MIGRATIONS: dict[int, Migration] = {1: _v1_to_v2, 2: _v2_to_v3, 3: _v3_to_v4}


def migrate(data: dict[str, Any], source: str | None = None, *, in_place: bool = False) -> dict[str, Any]:
    """Upgrade a decoded project file to :data:`SCHEMA_VERSION`.

    The input is never modified; the steps work on a deep copy. ``in_place=True`` (the caller
    decoded ``data`` itself and hands it over, as a project file's loader does) skips the copy,
    which took most of the time of loading an old file: the steps then change ``data`` itself.

    Raises
    ------
    StudioError
        If the version is missing or not an integer, newer than this program understands, no
        migration path exists, or a step fails on this file.
    """
    if not isinstance(data, dict):
        raise StudioError(
            f"a project file must hold a JSON object at the top level, not {_json_kind(data)}", source
        )
    version = data.get("schema_version")
    if version is None:
        raise StudioError("field 'schema_version' is missing (expected an integer ≥ 1)", source)
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise StudioError(f"field 'schema_version' is {version!r}; expected an integer ≥ 1", source)
    if version > SCHEMA_VERSION:
        raise StudioError(
            f"this file was written by a newer Layout Studio (schema_version {version}); this version "
            f"reads up to {SCHEMA_VERSION}. Update Layout Studio to open it.",
            source,
        )
    if version == SCHEMA_VERSION:
        return data
    if not in_place:
        data = copy.deepcopy(data)
    while version < SCHEMA_VERSION:
        step = MIGRATIONS.get(version)
        if step is None:
            raise StudioError(
                f"cannot upgrade schema_version {version}: no migration to version {version + 1}", source
            )
        try:
            out = step(data)
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
            raise StudioError(
                f"cannot upgrade this file from schema_version {version} to {version + 1}: "
                f"{type(exc).__name__}: {exc}",
                source,
            ) from None
        if not isinstance(out, dict):
            raise StudioError(
                f"migration from schema_version {version} returned {_json_kind(out)}, not an object",
                source,
            )
        data = out
        version += 1
        data["schema_version"] = version
    return data


def _json_kind(value: Any) -> str:
    names = {list: "an array", str: "a string", bool: "a boolean", int: "a number", float: "a number"}
    if value is None:
        return "null"
    return names.get(type(value), type(value).__name__)


# ----------------------------------------------------------------------------- pinned layouts
def _list(values: list[int], limit: int = 12) -> str:
    shown = ", ".join(str(v) for v in values[:limit])
    return shown + (", …" if len(values) > limit else "")


def pinned_problem(project: Project, k: int) -> tuple[str, str] | None:
    """Why pinned layout ``k`` cannot run on the project's model and cluster: ``(field, reason
    with what is allowed)``, e.g. ``("tp", "TP=3 does not divide the 16 GPUs; allowed TP: 1, 2,
    4, 8, 16")``, or ``None`` when it can.

    The rules are :mod:`studio.core.parallelism`'s (the one place layout rules live), checked in
    the order a user sets them: TP, PP, DP, EP; then the layer split and the placement.
    """
    from studio.core import parallelism as par

    lay = project.pinned[k]
    model, gpus = project.model, par.gpus_used(project.pinned[k], project.cluster.num_gpus)
    if gpus == 0:
        return "tp", "the cluster has no GPUs, so no layout can run on it"
    why = par.tp_reason(model, lay.tp, gpus)
    if why:
        return "tp", f"{why}; allowed TP: {_list(par.tp_options(model, gpus))}"
    why = par.pp_reason(model, lay.pp, lay.tp, gpus)
    if why:
        return "pp", f"{why}; allowed PP after TP={lay.tp}: {_list(par.pp_options(model, lay.tp, gpus))}"
    if lay.world_size != gpus:
        return "dp", (f"TP×PP×DP = {lay.tp}×{lay.pp}×{lay.dp} = {lay.world_size:,} GPUs; the cluster has "
                      f"{gpus:,}; allowed DP: {par.dp_for(lay.tp, lay.pp, gpus):,}")
    why = par.ep_reason(model, lay.ep, lay.tp, lay.dp)
    if why:
        return "ep", f"{why}; allowed EP: {_list(par.ep_options(model, lay.tp, lay.dp))}"
    if lay.layers_per_stage is not None and sum(lay.layers_per_stage) != model.num_layers:
        return "layers_per_stage", (f"the stages hold {sum(lay.layers_per_stage):,} layers; the model has "
                                    f"{model.num_layers:,} (the entries must add up to {model.num_layers:,})")
    if lay.placement is not None:
        known = {g.id for n in project.cluster.nodes for g in n.gpus}
        for i, gpu in enumerate(lay.placement):
            if gpu not in known:
                return f"placement[{i}]", f"GPU '{gpu}' is not in the cluster; a placement names the cluster's GPUs"
    return None


def check_pinned(project: Project) -> None:
    """Refuse a project whose pinned layouts cannot run on its model and cluster.

    Raises
    ------
    PinnedLayoutError
        Naming the first such layout's field (``pinned[2].tp``), why, and what is allowed.
    """
    bad = [k for k in range(len(project.pinned)) if pinned_problem(project, k) is not None]
    if bad:
        raise PinnedLayoutError(project, bad)


def drop_unrunnable_pinned(project: Project) -> Project:
    """``project`` without the pinned layouts that cannot run on its model and cluster (after a
    cluster or model edit), so that a saved file always opens again."""
    keep = tuple(lay for k, lay in enumerate(project.pinned) if pinned_problem(project, k) is None)
    return project if len(keep) == len(project.pinned) else project.replace(pinned=keep)


class PinnedLayoutError(StudioError):
    """A project's pinned layouts that cannot run; :attr:`without` is the project with them left
    out (the GUI offers to open that, leaving the file as it is)."""

    def __init__(self, project: Project, bad: list[int], source: str | None = None) -> None:
        self.project = project
        self.bad = tuple(bad)
        k = bad[0]
        field, why = pinned_problem(project, k) or ("", "")
        lay = project.pinned[k]
        more = f" ({len(bad) - 1} more pinned layout{'s' if len(bad) > 2 else ''} cannot run either)" if len(bad) > 1 else ""
        super().__init__(f"field 'pinned[{k}].{field}': pinned layout {lay.label} cannot run: {why}{more}", source)

    @property
    def without(self) -> Project:
        """The project without the pinned layouts that cannot run."""
        return self.project.replace(pinned=tuple(lay for k, lay in enumerate(self.project.pinned) if k not in self.bad))

    def with_source(self, source: str) -> PinnedLayoutError:
        """The same error naming ``source`` (the file)."""
        return PinnedLayoutError(self.project, list(self.bad), source)
