"""The storage format of a Hugging Face checkpoint, per module group, from its ``config.json``.

``quantization_config`` (FP8 block/per-tensor, MXFP4, AWQ, GPTQ, compressed-tensors) or a ModelOpt
``hf_quant_config.json`` next to the config decides which groups (attention, MLP, experts,
embeddings, LM head) are stored quantized; the checkpoint's ``torch_dtype`` the rest. Module
patterns that exclude groups (``ignore``, ``modules_to_not_convert``, ``re:`` patterns) are matched
in linear time and bounded in number and cost (:func:`_excluded_groups`).
"""

from __future__ import annotations

from collections.abc import Iterable
from fnmatch import fnmatchcase
from typing import Any

from studio.core.architecture import ModulePrecision
from studio.core.errors import StudioError
from studio.core.precision import DType
from studio.io.safe_regex import MAX_STATES, PatternTooLarge, SafePattern, UnsafePattern

SUPPORTED_QUANT_METHODS = ("fp8", "mxfp4", "awq", "gptq", "compressed-tensors", "modelopt")

_TORCH_DTYPES = {
    "bfloat16": DType.BF16,
    "float16": DType.FP16,
    "half": DType.FP16,
    "float32": DType.FP32,
    "float": DType.FP32,
}
# A representative module name of each precision group, as the HF checkpoints name them.
_GROUP_MODULES = {
    "attention": ("model.layers.0.self_attn", "model.layers.0.self_attn.q_proj"),
    "mlp": ("model.layers.0.mlp", "model.layers.0.mlp.down_proj"),
    "experts": ("model.layers.0.mlp.experts", "model.layers.0.mlp.experts.0.down_proj"),
    "embeddings": ("model.embed_tokens",),
    "lm_head": ("lm_head",),
}


def _base_dtype(cfg: dict[str, Any]) -> DType:
    raw = cfg.get("torch_dtype", cfg.get("dtype"))
    return _TORCH_DTYPES.get(raw, DType.BF16) if isinstance(raw, str) else DType.BF16


#: Longest module-name pattern considered (longer ones cannot name a module and are skipped).
MAX_MODULE_PATTERN_CHARS = 1000
#: Most module-name patterns read from one config (real lists name a few thousand modules).
MAX_MODULE_PATTERNS = 100_000
#: Most wildcard patterns (globs with ``* ? [`` and ``re:`` patterns) matched for one config; plain
#: module names, however many, cost a set lookup each and are not counted.
MAX_WILDCARD_PATTERNS = 1_000
#: Most automaton states the ``re:`` patterns of one config compile to together (one pattern may
#: have up to :data:`~studio.io.safe_regex.MAX_STATES`; 200,000 compile in well under a second).
MAX_PATTERN_STATES = 200_000

_GLOB_CHARS = frozenset("*?[")


def _spans(module: str) -> frozenset[str]:
    """Every run of whole dot-separated parts of ``module`` ("a.b.c": a, a.b, a.b.c, b, b.c, c).

    A glob or name ``p`` names a module when it matches it as ``p``, ``p.*``, ``*.p`` or ``*.p.*``,
    which is exactly when ``p`` matches one of these runs."""
    parts = module.split(".")
    return frozenset(".".join(parts[i:j]) for i in range(len(parts)) for j in range(i + 1, len(parts) + 1))


_GROUP_SPANS = {g: frozenset().union(*(_spans(m) for m in mods)) for g, mods in _GROUP_MODULES.items()}


def _excluded_groups(patterns: Iterable[Any], groups: Iterable[str], source: str | None = None) -> set[str]:
    """The ``groups`` that some module-name pattern (name, glob or ``re:`` regex) names.

    Each distinct pattern is looked at once. A plain name is a set lookup; globs go through
    :func:`fnmatch.fnmatchcase` and ``re:`` patterns through
    :class:`~studio.io.safe_regex.SafePattern` (linear time, so ``re:(.*)*X`` cannot hang).
    Patterns it cannot match safely (look-arounds, back-references, a single automaton over
    :data:`~studio.io.safe_regex.MAX_STATES` states), over-long patterns and non-strings are
    skipped like invalid ones.

    Raises
    ------
    StudioError
        More than :data:`MAX_WILDCARD_PATTERNS` wildcard patterns, or ``re:`` patterns compiling to
        more than :data:`MAX_PATTERN_STATES` states together: checking them would take minutes.
    """
    wanted = set(groups)
    found: set[str] = set()
    seen: set[str] = set()
    wildcards = 0
    states = 0
    for pat in patterns:
        if found == wanted:
            break
        if not isinstance(pat, str) or not pat or len(pat) > MAX_MODULE_PATTERN_CHARS or pat in seen:
            continue
        seen.add(pat)
        is_re = pat.startswith("re:")
        if not is_re and _GLOB_CHARS.isdisjoint(pat):
            found.update(g for g in wanted if pat in _GROUP_SPANS[g])
            continue
        wildcards += 1
        if wildcards > MAX_WILDCARD_PATTERNS:
            raise StudioError(
                f"quantization_config holds more than {MAX_WILDCARD_PATTERNS:,} wildcard or re: module "
                "patterns; at most that many are matched (plain module names are not limited)",
                source,
            )
        todo = wanted - found
        if is_re:
            budget = MAX_PATTERN_STATES - states
            try:
                compiled = SafePattern(pat[3:], max_states=budget)
            except PatternTooLarge:
                if budget < MAX_STATES:
                    raise StudioError(
                        f"quantization_config: the re: module patterns compile to more than "
                        f"{MAX_PATTERN_STATES:,} automaton states together (their repeats are too large); "
                        "at most that many are matched",
                        source,
                    ) from None
                states += MAX_STATES  # built, then refused: that work counts too
                continue
            except UnsafePattern:
                continue
            states += compiled.states
            found.update(g for g in todo if any(compiled.search(m) for m in _GROUP_MODULES[g]))
        else:
            found.update(g for g in todo if any(fnmatchcase(span, pat) for span in _GROUP_SPANS[g]))
    return found


def _apply(dtype: DType, base: DType, excluded: list[Any], quantize_embeddings: bool = False,
           quantize_lm_head: bool = False, source: str | None = None) -> ModulePrecision:
    quantized = [
        g for g in _GROUP_MODULES
        if g in ("attention", "mlp", "experts") or (g == "lm_head" and quantize_lm_head)
        or (g == "embeddings" and quantize_embeddings)
    ]
    skipped = _excluded_groups(excluded, quantized, source)
    return ModulePrecision(**{g: dtype if g in quantized and g not in skipped else base for g in _GROUP_MODULES})


def _patterns(qc: dict[str, Any], *keys: str, source: str | None = None) -> list[Any]:
    out: list[Any] = []
    for k in keys:
        v = qc.get(k)
        if isinstance(v, list):
            if len(out) + len(v) > MAX_MODULE_PATTERNS:
                raise StudioError(
                    f"quantization_config.{k} holds {len(v):,} module patterns; at most "
                    f"{MAX_MODULE_PATTERNS:,} are read",
                    source,
                )
            out.extend(v)
    return out


def precision_of_config(cfg: dict[str, Any], modelopt: dict[str, Any] | None, source: str) -> ModulePrecision:
    """Storage format per module group from ``quantization_config`` or ``hf_quant_config.json``."""
    base = _base_dtype(cfg)
    if isinstance(modelopt, dict) and isinstance(modelopt.get("quantization"), dict):
        return _modelopt(modelopt["quantization"], base, source)
    qc = cfg.get("quantization_config")
    if qc is None:
        return ModulePrecision.uniform(base)
    if not isinstance(qc, dict):
        raise StudioError("field 'quantization_config' must be an object", source)
    method = qc.get("quant_method")
    skip = _patterns(qc, "modules_to_not_convert", "ignored_layers", "ignore", source=source)
    if method == "fp8":
        return _apply(DType.FP8, base, skip, source=source)
    if method == "mxfp4":
        return _apply(DType.FP4, base, skip, source=source)
    if method in ("awq", "gptq"):
        bits = qc.get("bits", qc.get("w_bit"))
        dtype = {4: DType.INT4, 8: DType.INT8}.get(bits) if isinstance(bits, int) else None
        if dtype is None:
            raise StudioError(
                f"quantization_config.bits is {bits!r:.20} for {method}; supported: 4, 8", source
            )
        return _apply(dtype, base, skip, quantize_lm_head=qc.get("lm_head") is True, source=source)
    if method == "compressed-tensors":
        return _compressed_tensors(qc, base, skip, source)
    if method == "modelopt" and isinstance(qc.get("quantization"), dict):
        return _modelopt(qc["quantization"], base, source)
    raise StudioError(
        f"quantization_config.quant_method '{method!s:.40}' is not supported; supported: "
        + ", ".join(SUPPORTED_QUANT_METHODS),
        source,
    )


def _compressed_tensors(qc: dict[str, Any], base: DType, skip: list[Any], source: str) -> ModulePrecision:
    groups = qc.get("config_groups")
    weights = None
    if isinstance(groups, dict):
        for group in groups.values():
            if isinstance(group, dict) and isinstance(group.get("weights"), dict):
                weights = group["weights"]
                break
    if weights is None:
        raise StudioError(
            "quantization_config.config_groups holds no 'weights' scheme (compressed-tensors)", source
        )
    bits, kind = weights.get("num_bits"), weights.get("type", "int")
    table = {(8, "float"): DType.FP8, (8, "int"): DType.INT8, (4, "int"): DType.INT4, (4, "float"): DType.FP4}
    dtype = table.get((bits, kind)) if isinstance(bits, int) and isinstance(kind, str) else None
    if dtype is None:
        raise StudioError(
            f"compressed-tensors weights num_bits={bits!r:.20} type={kind!r:.20} is not supported; "
            "supported: 8 float (FP8), 8 int, 4 int, 4 float (FP4)",
            source,
        )
    return _apply(dtype, base, skip, source=source)


def _modelopt(q: dict[str, Any], base: DType, source: str) -> ModulePrecision:
    algo = str(q.get("quant_algo", "")).upper()
    table = {"FP8": DType.FP8, "FP8_PB_WO": DType.FP8, "NVFP4": DType.FP4, "MXFP4": DType.FP4,
             "W4A16_AWQ": DType.INT4, "INT4_AWQ": DType.INT4, "W4A8_AWQ": DType.INT4,
             "W8A16": DType.INT8, "W8A8_SQ_PER_CHANNEL": DType.INT8, "INT8": DType.INT8}
    if algo not in table:
        raise StudioError(
            f"hf_quant_config.json quant_algo '{algo:.40}' is not supported; supported: "
            + ", ".join(sorted(table)),
            source,
        )
    return _apply(
        table[algo], base, _patterns(q, "exclude_modules", source=source), quantize_lm_head=True, source=source
    )
