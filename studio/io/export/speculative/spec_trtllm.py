"""TensorRT-LLM's speculative-decoding settings and their run-time checks (names and rules:
``engines.trtllm.speculative`` in ``presets/engines/rules.json``; see :mod:`.spec`)."""

from __future__ import annotations

from typing import Any

from studio.core.project import Project
from studio.core.workload import SpeculativeConfig


def write(project: Project, spec: SpeculativeConfig, cfg: dict[str, object], r: dict[str, Any], method: str,
          k: int, ckpt: str | None, notes: list[str]) -> None:
    """Add TensorRT-LLM's speculative-decoding keys to ``cfg`` (in place); notes go to ``notes``.

    Raises
    ------
    StudioError
        EAGLE-1, which the PyTorch backend cannot run (startup rule ``trtllm.spec.eagle3_only``).
    """
    from studio.core.errors import StudioError
    from studio.io.export.checks.startup_rules import rule

    eagle = rule("trtllm.spec.eagle3_only")
    if spec.method in eagle.params["refused_methods"]:
        raise StudioError(
            f"TensorRT-LLM export of speculative decoding '{spec.method}' (EAGLE-1): {eagle.says} "
            f"({eagle.cite()}). Plan eagle3 with an EAGLE-3 head, or export EAGLE-1 to vLLM or SGLang",
            field="spec",
        )
    sc: dict[str, object] = {"decoding_type": method}
    if spec.method == "mtp":
        sc[r["mtp_layers_key"]] = k
        if k > project.model.mtp_layers:
            notes.append(
                f"TensorRT-LLM MTP drafts num_nextn_predict_layers = {k} tokens; the model has "
                f"{project.model.mtp_layers} MTP layer(s), which TensorRT-LLM reuses for the others."
            )
    else:
        sc[r["draft_len_key"]] = k
    if method in r["needs_model"] and ckpt:
        sc[r["model_key"]] = ckpt
    if spec.method == "ngram":
        sc[r["ngram_key"]] = spec.ngram_max
    cfg[r["key"]] = sc


def check(config: dict[str, object], r: dict[str, Any], src: str, allowed: list[str]) -> list[tuple[str, str, str]]:
    """Problems of the recipe's speculative-decoding keys as ``(key, message, source)`` errors."""
    from studio.io.export.speculative.spec import as_int as _as_int

    out: list[tuple[str, str, str]] = []
    sc = config.get(r["key"])
    if sc is None:
        return []
    if not isinstance(sc, dict):
        return [(r["key"], "must be a mapping with decoding_type", src)]
    kind = sc.get("decoding_type")
    if kind not in allowed:
        out.append(
            (
                r["key"],
                f"decoding_type '{kind}' is not one planned here; allowed: {', '.join(allowed)}",
                src,
            )
        )
    length_key = r["mtp_layers_key"] if kind == "MTP" else r["draft_len_key"]
    n = _as_int(sc.get(length_key))
    if n is None or n < 1:
        out.append((f"{r['key']}.{length_key}", "must be a whole number ≥ 1", src))
    if kind in r["needs_model"] and not sc.get(r["model_key"]):
        out.append(
            (
                f"{r['key']}.{r['model_key']}",
                f"decoding_type {kind} needs the draft weights",
                src,
            )
        )
    if kind == "NGram" and _as_int(sc.get(r["ngram_key"])) is None:
        out.append((f"{r['key']}.{r['ngram_key']}", "decoding_type NGram needs it", src))
    return out
