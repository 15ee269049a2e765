"""SGLang's speculative-decoding settings and their run-time checks (names and rules:
``engines.sglang.speculative`` in ``presets/engines/rules.json``; see :mod:`.spec`)."""

from __future__ import annotations

from typing import Any

from studio.core.project import Project
from studio.core.workload import SpeculativeConfig


def write(project: Project, spec: SpeculativeConfig, cfg: dict[str, object], r: dict[str, Any], method: str,
          k: int, ckpt: str | None, notes: list[str]) -> None:
    """Add SGLang's speculative-decoding keys to ``cfg`` (in place); notes go to ``notes``."""
    cfg[r["algorithm_key"]] = method
    if spec.method != "ngram":
        cfg[r["steps_key"]] = k
        cfg[r["topk_key"]] = 1
    cfg[r["draft_tokens_key"]] = k + 1
    if method in r["needs_model"] and ckpt:
        cfg[r["model_key"]] = ckpt


def check(config: dict[str, object], r: dict[str, Any], src: str, allowed: list[str]) -> list[tuple[str, str, str]]:
    """Problems of the recipe's speculative-decoding keys as ``(key, message, source)`` errors."""
    from studio.io.export.speculative.spec import as_int as _as_int

    out: list[tuple[str, str, str]] = []
    algo = config.get(r["algorithm_key"])
    if algo is None:
        return []
    if algo not in allowed:
        out.append(
            (
                r["algorithm_key"],
                f"'{algo}' is not an algorithm planned here; allowed: {', '.join(allowed)}",
                src,
            )
        )
    if algo in r["needs_model"] and not config.get(r["model_key"]):
        out.append(
            (r["model_key"], f"--{r['algorithm_key']} {algo} needs the draft model path", src)
        )
    steps, topk = _as_int(config.get(r["steps_key"])), _as_int(config.get(r["topk_key"]))
    draft = _as_int(config.get(r["draft_tokens_key"]))
    if (
        algo != "NGRAM"
        and steps is not None
        and topk == 1
        and draft is not None
        and draft != steps + 1
    ):
        out.append(
            (
                r["draft_tokens_key"],
                f"{draft} with {r['topk_key']} 1 must be {r['steps_key']} + 1 = "
                f"{steps + 1} (SGLang resets it, so the verified tokens differ from the plan)",
                src,
            )
        )
    return out
