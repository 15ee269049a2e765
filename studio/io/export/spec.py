"""Speculative-decoding settings of the exports, and their run-time checks.

The plan's :class:`~studio.core.workload.SpeculativeConfig` becomes, per engine (names and rules in
``presets/engines/rules.json`` under ``speculative``, each with its source):

* vLLM: ``--speculative-config`` JSON with ``method`` (``draft_model`` / ``eagle`` / ``eagle3`` /
  ``mtp`` / ``ngram``), ``num_speculative_tokens`` = k, ``model`` (the draft or EAGLE head) and,
  for n-gram, ``prompt_lookup_max`` / ``prompt_lookup_min``;
* SGLang: ``--speculative-algorithm`` (``STANDALONE`` / ``EAGLE`` / ``EAGLE3`` / ``NEXTN`` /
  ``NGRAM``), ``--speculative-num-steps`` k, ``--speculative-eagle-topk 1`` (chain drafting, as
  planned), ``--speculative-num-draft-tokens`` k + 1 and ``--speculative-draft-model-path``;
* TensorRT-LLM: ``speculative_config`` in the LLM API YAML with ``decoding_type``
  (``Draft_Target`` / ``Eagle`` / ``Eagle3`` / ``MTP`` / ``NGram``), ``max_draft_len`` k,
  ``speculative_model``; MTP as ``num_nextn_predict_layers``, n-gram's ``max_matching_ngram_size``.

The draft checkpoint is the setting's ``draft_checkpoint``, else the draft model preset's Hugging
Face id, else a published EAGLE head for the model (``presets/speculative.json``); a method that
needs one and has none is exported with a note and refused by :func:`check_speculative`.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from studio.core.errors import StudioError
from studio.core.project import Project


@lru_cache(maxsize=1)
def _rules() -> dict[str, dict[str, Any]]:
    from studio.io.export.rules import RULES_FILE
    from studio.io.presets import presets_root, read_json

    data = read_json(presets_root().joinpath(*RULES_FILE.split("/")), RULES_FILE)
    out: dict[str, dict[str, Any]] = {}
    for name, d in data.get("engines", {}).items():
        if isinstance(d, dict) and isinstance(d.get("speculative"), dict):
            out[name] = d["speculative"]
    return out


def spec_rules(engine: str) -> dict[str, Any]:
    """The ``speculative`` rules of ``engine``.

    Raises
    ------
    StudioError
        The rules file has none for this engine.
    """
    rules = _rules().get(engine)
    if rules is None:
        raise StudioError(f"engines.{engine}.speculative is missing", "presets/engines/rules.json")
    return rules


def draft_checkpoint(project: Project) -> str | None:
    """Hugging Face id or path of the draft weights the engines load (None: none needed or known)."""
    spec = project.serving.speculative
    if spec is None or spec.method in ("mtp", "ngram"):
        return None
    if spec.draft_checkpoint:
        from studio.io.export.safety import check_model_argument

        # as --model-path is: a project file's value goes into launch lines and YAML too
        return check_model_argument(spec.draft_checkpoint, "serving.speculative.draft_checkpoint")
    if spec.method == "draft":
        return spec.draft.hf_model_id if spec.draft is not None else None
    from studio.engine.step.speculative import speculative_presets

    heads = speculative_presets().get("eagle_heads", {}).get(spec.method, {})
    return heads.get(project.model.hf_model_id or "") if isinstance(heads, dict) else None


def _missing_note(project: Project, engine: str) -> list[str]:
    spec = project.serving.speculative
    assert spec is not None
    if spec.method in ("mtp", "ngram") or draft_checkpoint(project):
        return []
    return [
        f"{engine}: speculative decoding ({spec.method}) needs the draft weights: no published "
        f"{'EAGLE head' if spec.method.startswith('eagle') else 'checkpoint'} is known for this model; "
        "give one as the project's serving.speculative.draft_checkpoint (on the command line: "
        "layout-studio export --draft-checkpoint); the engine refuses to start without it."
    ]


def apply(engine: str, project: Project, cfg: dict[str, object]) -> list[str]:
    """Add the speculative-decoding keys of ``engine`` to ``cfg`` (in place); returns notes."""
    spec = project.serving.speculative
    if spec is None:
        return []
    r = spec_rules(engine)
    k = spec.num_tokens
    ckpt = draft_checkpoint(project)
    method = r["methods"][spec.method]
    notes = _missing_note(project, engine)
    if engine == "vllm":
        sc: dict[str, object] = {"method": method, r["tokens_field"]: k}
        if method in r["needs_model"] and ckpt:
            sc[r["model_field"]] = ckpt
        if spec.method == "ngram":
            sc[r["ngram_fields"]["max"]] = spec.ngram_max
            sc[r["ngram_fields"]["min"]] = spec.ngram_min
        cfg[r["key"]] = json.dumps(sc)
    elif engine == "sglang":
        cfg[r["algorithm_key"]] = method
        if spec.method != "ngram":
            cfg[r["steps_key"]] = k
            cfg[r["topk_key"]] = 1
        cfg[r["draft_tokens_key"]] = k + 1
        if method in r["needs_model"] and ckpt:
            cfg[r["model_key"]] = ckpt
    elif engine == "trtllm":
        sc = {"decoding_type": method}
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
    return notes


def _as_int(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return None


def check_speculative(engine: str, config: dict[str, object]) -> list[tuple[str, str, str]]:
    """Problems of a recipe's speculative-decoding keys as ``(key, message, source)`` errors."""
    r = _rules().get(engine)
    if r is None:
        return []
    src = r["source"]
    out: list[tuple[str, str, str]] = []
    allowed = sorted(set(r["methods"].values()))
    if engine == "vllm":
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
    elif engine == "sglang":
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
    elif engine == "trtllm":
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
