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

from functools import lru_cache
from typing import Any

from studio.core.errors import StudioError
from studio.core.project import Project


@lru_cache(maxsize=1)
def _rules() -> dict[str, dict[str, Any]]:
    from studio.io.export.checks.rules import RULES_FILE
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


def spec_module(engine: str) -> Any:
    """The engine's speculative-decoding module (``engines.<engine>.export.speculative``): ``write``
    and ``check``."""
    import importlib

    from studio.io.export.engines import engine_spec

    return importlib.import_module(engine_spec(engine).speculative)


def draft_checkpoint(project: Project) -> str | None:
    """Hugging Face id or path of the draft weights the engines load (None: none needed or known)."""
    spec = project.serving.speculative
    if spec is None or spec.method in ("mtp", "ngram"):
        return None
    if spec.draft_checkpoint:
        from studio.io.export.checks.safety import check_model_argument

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
    spec_module(engine).write(project, spec, cfg, r, method, k, ckpt, notes)
    return notes


def as_int(value: object) -> int | None:
    """``value`` as a whole number, or ``None``."""
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
    allowed = sorted(set(r["methods"].values()))
    return spec_module(engine).check(config, r, src, allowed)
