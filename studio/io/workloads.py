"""Bundled request-length distributions (``presets/workloads/*.json``) and ``--lengths ID``.

A workload preset gives the input and output length distributions of a dataset or trace users
benchmark with, each derived from published data and cited (``source``, ``derived``). Two kinds of
id are accepted by :func:`lengths_for`:

* a bundled preset id (``layout-studio presets workloads`` lists them), e.g. ``azure-conv-2023``;
* ``random:ISL:OSL[:RATIO]`` — vLLM ``bench serve --dataset-name random``: lengths uniform on
  ``[L × (1 − RATIO), L × (1 + RATIO)]`` (``--random-range-ratio``, default 0, 0 ≤ RATIO < 1;
  vllm/benchmarks/datasets.py RandomDataset).

A bad preset file or id raises :class:`~studio.core.errors.StudioError` naming the file or the id,
the field and what is allowed (a histogram of zeros, negative or fractional lengths, an unknown id
with the known ones).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from studio.core.errors import StudioError, nearest
from studio.core.workload import LengthDistribution
from studio.io.presets import presets_root

if TYPE_CHECKING:
    from studio.io.presets import Traversable

RANDOM = "random"


@dataclass(frozen=True)
class WorkloadPreset:
    """One bundled distribution: input and output lengths and where they come from."""

    id: str
    name: str
    description: str
    source: str
    derived: str
    isl: LengthDistribution
    osl: LengthDistribution
    isl_mean: int
    osl_mean: int


def _dist(raw: Any, where: str, field: str, nominal: int | None = None) -> LengthDistribution:
    if not isinstance(raw, dict):
        raise StudioError(f"field '{field}' must be an object with 'kind' (histogram or uniform)", where)
    kind = raw.get("kind")
    if kind == "histogram":
        hist = raw.get("histogram")
        if not isinstance(hist, list) or not hist:
            raise StudioError(f"field '{field}.histogram' must be a non-empty list of [length, weight] pairs", where)
        pairs = []
        for i, pair in enumerate(hist):
            ok = isinstance(pair, list) and len(pair) == 2 and all(
                isinstance(x, (int, float)) and not isinstance(x, bool) for x in pair)
            if not ok:
                raise StudioError(f"field '{field}.histogram[{i}]' is {pair!r}; allowed: [length, weight]", where)
            length, weight = pair
            if length != int(length) or not 1 <= length <= 10_000_000:
                raise StudioError(f"field '{field}.histogram[{i}]': length {length} is not a whole number of "
                                  "tokens in 1..10000000", where)
            if weight < 0:
                raise StudioError(f"field '{field}.histogram[{i}]': weight {weight} is negative; allowed: ≥ 0", where)
            pairs.append((int(length), float(weight)))
        if sum(w for _, w in pairs) <= 0:
            raise StudioError(f"field '{field}.histogram': the weights add up to 0; at least one length needs "
                              "a weight > 0", where)
        return LengthDistribution(kind="histogram", histogram=tuple(pairs))
    if kind == "uniform":
        spread = raw.get("spread")
        if isinstance(spread, bool) or not isinstance(spread, (int, float)) or not 0 <= spread < 1:
            raise StudioError(f"field '{field}.spread' is {spread!r}; allowed: a range ratio 0 ≤ r < 1", where)
        return LengthDistribution(kind="uniform", spread=float(spread)) if spread else LengthDistribution()
    raise StudioError(f"field '{field}.kind' is {kind!r}; allowed: 'histogram', 'uniform'", where)


def preset_from_dict(data: Any, where: str) -> WorkloadPreset:
    """One decoded workload file; errors name ``where`` and the field."""
    if not isinstance(data, dict):
        raise StudioError("must hold a JSON object", where)
    for key in ("id", "name", "source"):
        if not isinstance(data.get(key), str) or not data[key].strip():
            raise StudioError(f"field '{key}' is missing (every workload preset names its {key})", where)
    try:
        isl = _dist(data.get("isl"), where, "isl")
        osl = _dist(data.get("osl"), where, "osl")
    except ValidationError as exc:
        raise StudioError(str(exc.errors()[0].get("msg", exc)), where) from None
    return WorkloadPreset(
        id=data["id"], name=data["name"], description=str(data.get("description", "")), source=data["source"],
        derived=str(data.get("derived", "")), isl=isl, osl=osl,
        isl_mean=max(1, round(isl.mean(1))), osl_mean=max(1, round(osl.mean(1))),
    )


def workload_presets() -> dict[str, WorkloadPreset]:
    """Every bundled workload preset by id, sorted. The files are read once per process and folder
    (the window's Load editor asks on every edit which preset the project's lengths are); a broken
    file is refused every time."""
    folder = presets_root().joinpath("workloads")
    hit = _READ.get(str(folder))
    if hit is None:
        hit = _READ[str(folder)] = _read_presets(folder)
    return dict(hit)


#: Presets read, by the path of their folder (the presets are frozen).
_READ: dict[str, dict[str, WorkloadPreset]] = {}


def _read_presets(folder: Traversable) -> dict[str, WorkloadPreset]:
    out: dict[str, WorkloadPreset] = {}
    if not folder.is_dir():
        return out
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(".json"):
            continue
        where = f"presets/workloads/{entry.name}"
        try:
            data = json.loads(entry.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise StudioError(f"is not valid JSON (line {exc.lineno}: {exc.msg})", where) from None
        p = preset_from_dict(data, where)
        out[p.id] = p
    return out


def _random(spec: str) -> tuple[LengthDistribution, LengthDistribution, int, int]:
    parts = spec.split(":")[1:]
    usage = ("random:ISL:OSL[:RATIO] with whole ISL, OSL ≥ 1 and 0 ≤ RATIO < 1 "
             "(vLLM bench serve --random-input-len, --random-output-len, --random-range-ratio)")
    if len(parts) not in (2, 3):
        raise StudioError(f"lengths '{spec}': expected {usage}", field="lengths")
    try:
        isl, osl = int(parts[0]), int(parts[1])
        ratio = float(parts[2]) if len(parts) == 3 else 0.0
    except ValueError:
        raise StudioError(f"lengths '{spec}': expected {usage}", field="lengths") from None
    if isl < 1 or osl < 1 or not 0 <= ratio < 1:
        raise StudioError(f"lengths '{spec}': expected {usage}", field="lengths")
    dist = LengthDistribution(kind="uniform", spread=ratio) if ratio else LengthDistribution()
    return dist, dist, isl, osl


def lengths_for(spec: str) -> tuple[LengthDistribution, LengthDistribution, int, int, str]:
    """``(isl_dist, osl_dist, isl_mean, osl_mean, label)`` of a preset id or ``random:ISL:OSL[:R]``.

    Raises
    ------
    StudioError
        An unknown id (with the nearest known ids) or a malformed ``random:`` spec.
    """
    spec = spec.strip()
    if spec == RANDOM or spec.startswith(RANDOM + ":"):
        isl_d, osl_d, isl, osl = _random(spec)
        return isl_d, osl_d, isl, osl, f"vLLM random {isl}/{osl}, range ratio {isl_d.spread:g}"
    presets = workload_presets()
    if spec not in presets:
        known = list(presets) + ["random:ISL:OSL[:RATIO]"]
        hint = nearest(spec, list(presets))
        raise StudioError(
            f"lengths '{spec}' is not a bundled workload" + (f" (did you mean {', '.join(hint)}?)" if hint else "")
            + f"; known: {', '.join(known)} (see `layout-studio presets workloads`)", field="lengths")
    p = presets[spec]
    return p.isl, p.osl, p.isl_mean, p.osl_mean, p.name
