"""KV-cache capacity against the engines' own start-up logs (``kv-capacity-cases.json``).

:func:`load_cases` reads the cases; :func:`predict` plans one through ``layout-studio plan --json``
(the figure a user sees) and returns the KV capacity in the case's metric: tokens per replica
(``kv_cache.capacity_tokens``) or the KV pool per GPU in GiB (tokens × KV bytes per token per GPU).
"""

from __future__ import annotations

import contextlib
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from studio.cli import main

HERE = Path(__file__).resolve().parent
CASES = HERE / "kv-capacity-cases.json"
TOLERANCE = 0.05  # issue 29: within 5 % of what the engine's own log reports


@dataclass(frozen=True)
class Case:
    """One engine start-up log with the setup it ran."""

    id: str
    metric: str  # "tokens" or "kv_gib"
    reported: float
    record: dict[str, Any]

    @property
    def unreached(self) -> str | None:
        """Why the plan cannot come within the tolerance of this log (None: it should)."""
        return self.record.get("unreached")


def load_cases(path: Path = CASES) -> list[Case]:
    """The cases of ``path``, in file order; a case without its metric's figure is refused."""
    data = json.loads(path.read_text(encoding="utf-8"))
    out = []
    for rec in data["cases"]:
        metric = rec["metric"]
        if metric not in ("tokens", "kv_gib") or metric not in rec["reported"]:
            raise ValueError(f"{path.name}: case '{rec['id']}' compares '{metric}' but reports {sorted(rec['reported'])}")
        out.append(Case(rec["id"], metric, float(rec["reported"][metric]), rec))
    return out


@dataclass(frozen=True)
class Bound:
    """A start or a refusal: vLLM starts only when its KV cache holds ``context`` tokens."""

    id: str
    context: int
    serves: bool
    record: dict[str, Any]


def load_bounds(path: Path = CASES) -> list[Bound]:
    """The ``bounds`` of ``path`` (longest context a run started with, the next one it refused)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    out = []
    for rec in data.get("bounds", []):
        if rec["expect"] not in ("serves", "refuses"):
            raise ValueError(f"{path.name}: bound '{rec['id']}' expects {rec['expect']!r}; allowed: serves, refuses")
        out.append(Bound(rec["id"], int(rec["context"]), rec["expect"] == "serves",
                         rec | {"isl": int(rec["context"]) - 256, "osl": 256}))
    return out


def capacity_tokens(record: dict[str, Any]) -> int:
    """KV capacity (tokens per replica) the plan gives the run ``record`` describes."""
    return int(_plan(record)["capacity_tokens"])


def plan_args(record: dict[str, Any]) -> list[str]:
    """The ``layout-studio plan`` arguments that describe a case's run."""
    r = record
    model = (["--model-config", str(HERE / r["model_config"])] if r.get("model_config")
             else ["--model", r["model"]])
    return ["plan", *model, "--gpu", r["gpu"], "--nodes", "1", "--gpus-per-node", str(r["tp"] * r["pp"]),
            "--tp", str(r["tp"]), "--pp", str(r["pp"]), "--weight-dtype", r["weight_dtype"],
            "--kv-dtype", r["kv_dtype"], "--gpu-memory-utilization", str(r["memory_fraction"]),
            "--isl", str(r["isl"]), "--osl", str(r["osl"]), "--runtime", r["engine"],
            "--runtime-version", r["version"], "--json"]


def _plan(record: dict[str, Any]) -> dict[str, Any]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(plan_args(record))
    if code != 0:
        raise RuntimeError(f"case '{record['id']}': layout-studio {' '.join(plan_args(record))} exited {code}")
    kv: dict[str, Any] = json.loads(out.getvalue())["kv_cache"]
    return kv


def predict(case: Case) -> float:
    """The plan's KV capacity for ``case``, in the case's metric."""
    kv = _plan(case.record)
    tokens = float(kv["capacity_tokens"])
    if case.metric == "tokens":
        return tokens
    return tokens * float(kv["bytes_per_token_per_gpu"]) / 2**30


def error(case: Case, ours: float) -> float:
    """Signed relative error of ``ours`` against the log (0.03 = 3 % above)."""
    return ours / case.reported - 1.0
