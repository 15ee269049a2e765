"""vLLM's speculative-decoding settings and their run-time checks (names and rules:
``engines.vllm.speculative`` in ``presets/engines/rules.json``; see :mod:`.spec`)."""

from __future__ import annotations

import json
from typing import Any

from studio.core.project import Project
from studio.core.workload import SpeculativeConfig


def write(project: Project, spec: SpeculativeConfig, cfg: dict[str, object], r: dict[str, Any], method: str,
          k: int, ckpt: str | None, notes: list[str]) -> None:
    """Add vLLM's speculative-decoding keys to ``cfg`` (in place); notes go to ``notes``."""
    sc: dict[str, object] = {"method": method, r["tokens_field"]: k}
    if method in r["needs_model"] and ckpt:
        sc[r["model_field"]] = ckpt
    if spec.method == "ngram":
        sc[r["ngram_fields"]["max"]] = spec.ngram_max
        sc[r["ngram_fields"]["min"]] = spec.ngram_min
    cfg[r["key"]] = json.dumps(sc)


def check(config: dict[str, object], r: dict[str, Any], src: str, allowed: list[str]) -> list[tuple[str, str, str]]:
    """Problems of the recipe's speculative-decoding keys as ``(key, message, source)`` errors."""
    from studio.io.export.speculative.spec import as_int as _as_int

    out: list[tuple[str, str, str]] = []
    raw = config.get(r["key"])
    if raw is None:
        return []
    try:
        sc = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return [(r["key"], "is not valid JSON", src)]
    if not isinstance(sc, dict):
        return [(r["key"], "must be a JSON object", src)]
    method = sc.get("method")
    if method not in allowed:
        out.append(
            (
                r["key"],
                f"method '{method}' is not one vLLM runs here; allowed: {', '.join(allowed)}",
                src,
            )
        )
    n = _as_int(sc.get(r["tokens_field"]))
    if n is None or n < 1:
        out.append((r["key"], f"{r['tokens_field']} must be a whole number ≥ 1", src))
    if method in r["needs_model"] and not sc.get(r["model_field"]):
        out.append(
            (r["key"], f"method '{method}' needs '{r['model_field']}' (the draft weights)", src)
        )
    if method == "ngram" and _as_int(sc.get(r["ngram_fields"]["max"])) is None:
        out.append((r["key"], f"method 'ngram' needs {r['ngram_fields']['max']}", src))
    return out
