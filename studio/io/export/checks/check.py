"""Check a recipe against the engine's run-time rules, and against the engine's own argument
parser and config classes when the engine is installed, without starting a server.

:func:`check_recipe` applies the rules of :mod:`.rules` (data, with the engine version and the
source file of each rule). :func:`check_with_engine` has the engine's own parser class named in
those rules (vLLM ``EngineArgs``, SGLang ``ServerArgs``, TensorRT-LLM ``TorchLlmArgs``) and its
config classes validate the recipe's arguments, in a separate process run by the engine's Python
(:mod:`.engine_run`); an engine that is not installed is reported, never required.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from studio.core.errors import StudioError
from studio.io.export.checks.findings import Finding
from studio.io.export.checks.rules import EngineRules, rules_for
from studio.io.export.common import EngineRecipe, one_line

#: Most bytes of a config file ``export --check FILE`` reads.
MAX_CONFIG_BYTES = 1 << 20


@dataclass(frozen=True)
class CheckReport:
    """Findings of the rules and, when it ran, of the installed engine."""

    engine: str
    findings: tuple[Finding, ...]
    engine_checked: str | None  # what the engine's own classes said ran ("vllm.engine...EngineArgs")
    engine_missing: str | None  # why the engine's own check did not run

    @property
    def ok(self) -> bool:
        return not any(f.severity == "error" for f in self.findings)

    def lines(self) -> list[str]:
        """The report as printable lines, the verdict first."""
        rules = rules_for(self.engine)
        errors = sum(f.severity == "error" for f in self.findings)
        head = (
            f"{rules.version}: the recipe passes the engine's run-time rules"
            if self.ok
            else f"{rules.version}: {errors} problem(s) would fail at start-up or change the layout"
        )
        out = [head] + [f.line() for f in self.findings]
        if self.engine_checked:
            out.append(f"checked with the engine itself: {self.engine_checked}")
        elif self.engine_missing:
            out.append(f"the engine's own validation was not run: {self.engine_missing}; only the rules "
                       "were applied")
        return out


def _cite(rules: EngineRules, source: str) -> str:
    """Engine version and the source file a rule names first (the whole text when it names none)."""
    first = source.split(" ", 1)[0]
    return f"{rules.version}, {first if '/' in first else source}"


_DTYPE_ALIASES = {"bf16": "bfloat16", "fp16": "float16", "half": "float16", "float": "float32"}


def _as_int(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return None


def _kv(recipe: EngineRecipe, rules: EngineRules) -> list[Finding]:
    kv = rules.kv
    value = recipe.value(kv.key)
    if value is None:
        return []
    text = str(value).lower()
    allowed = kv.allowed + (kv.mla_only if recipe.mla else ())
    where = _cite(rules, kv.source)
    if text not in allowed:
        return [Finding("error", kv.key, f"'{one_line(str(value))}' is refused at model load; allowed: "
                        f"{', '.join(allowed)} (write 'auto' for a KV cache in the model's dtype)", where)]
    if text in kv.must_match_model_dtype and _DTYPE_ALIASES.get(text, text) != recipe.model_dtype:
        return [Finding("error", kv.key, f"'{text}' differs from the model dtype {recipe.model_dtype}, which "
                        "the engine refuses; write 'auto' (the model dtype) or an fp8 format", where)]
    return []


def _chunking(recipe: EngineRecipe, rules: EngineRules) -> list[Finding]:
    ch = rules.chunk
    tokens = _as_int(recipe.value(ch.tokens_key))
    context = _as_int(recipe.value(ch.context_key))
    if tokens is None or context is None or ch.switch_key is None or tokens >= context:
        return []
    on = recipe.value(ch.switch_key)
    if on is None:
        on = ch.default_on
    if on is True or str(on).lower() == "true":
        return []
    return [Finding(
        "error", ch.switch_key,
        f"{ch.tokens_key} {tokens} is below {ch.context_key} {context} with chunked prefill off: every "
        f"prompt longer than {tokens} tokens is refused (HTTP 400); set {ch.switch_key}: true or raise "
        f"{ch.tokens_key} to {context}",
        _cite(rules, ch.source),
    )]


def _batch(recipe: EngineRecipe, rules: EngineRules) -> list[Finding]:
    b = rules.batch
    limit = _as_int(recipe.value(b.key))
    if limit is None or not b.divided_by:
        return []
    ranks = _as_int(recipe.value(b.divided_by)) or 1
    if ranks <= 1:
        return []
    per = limit // ranks
    where = _cite(rules, b.source)
    if per < recipe.sequences_per_rank:
        return [Finding("error", b.key, f"{limit} is divided among the {ranks} ranks of {b.divided_by}: each "
                        f"rank runs {per} sequences, not the planned {recipe.sequences_per_rank}; write "
                        f"{recipe.sequences_per_rank * ranks}", where)]
    if limit % ranks:
        return [Finding("warning", b.key, f"{limit} is rounded down to {per * ranks}, a multiple of "
                        f"{b.divided_by} {ranks}", where)]
    return []


def _listen(recipe: EngineRecipe, rules: EngineRules) -> list[Finding]:
    rule = rules.listen
    if rule.all_interfaces_by_default or recipe.host not in (None, "localhost", "127.0.0.1", "::1"):
        return []
    where = recipe.host or f"the default {rule.default}"
    return [Finding(
        "warning", rule.flag,
        f"the server listens on {where} only; a load balancer, router or client on another machine "
        f"cannot reach it (pass {rule.flag} 0.0.0.0 or the address to serve on)",
        _cite(rules, rule.source),
    )]


def _partition(recipe: EngineRecipe, rules: EngineRules) -> list[Finding]:
    raw: object
    if rules.partition_env:
        key, raw = rules.partition_env, recipe.env.get(rules.partition_env)
    elif rules.partition_key:
        key, raw = rules.partition_key, recipe.value(rules.partition_key)
    else:
        return []
    if raw is None:
        return []
    items = raw if isinstance(raw, list) else str(raw).split(",")
    counts = [_as_int(v if not isinstance(v, str) else v.strip()) for v in items]
    where = _cite(rules, rules.partition_source)
    if any(n is None or n < 1 for n in counts):
        return [Finding("error", key, f"'{one_line(str(raw))}' is not a list of positive layer counts", where)]
    total = sum(n for n in counts if n is not None)
    if len(counts) != recipe.pp or total != recipe.num_layers:
        return [Finding("error", key, f"{len(counts)} stages holding {total} layers; the recipe has "
                        f"{recipe.pp} pipeline stages and the model {recipe.num_layers} layers", where)]
    return []


def _speculative(recipe: EngineRecipe, rules: EngineRules) -> list[Finding]:
    from studio.io.export.speculative.spec import check_speculative

    return [Finding("error", key, message, _cite(rules, source))
            for key, message, source in check_speculative(recipe.engine, recipe.config)]


_CHECKS: tuple[Callable[[EngineRecipe, EngineRules], list[Finding]], ...] = (
    _kv, _chunking, _batch, _listen, _partition, _speculative,
)


def check_recipe(recipe: EngineRecipe) -> list[Finding]:
    """Findings of the engine's run-time rules on ``recipe`` (errors first)."""
    from studio.io.export.checks.startup import check_plan_values, check_startup

    rules = rules_for(recipe.engine)
    found = [f for check in _CHECKS for f in check(recipe, rules)]
    found += check_startup(recipe) + check_plan_values(recipe, rules.version)
    return sorted(found, key=lambda f: f.severity != "error")


# ----------------------------------------------------------------------------- the engine itself
def check_with_engine(recipe: EngineRecipe, *, python: str | None = None,
                      timeout_s: float | None = None) -> tuple[list[Finding], str | None, str | None]:
    """Feed ``recipe`` to the engine's own parser and config classes, in a separate process run by
    ``python`` (:func:`studio.io.export.checks.engine_run.choose_python`).

    Returns
    -------
    (findings, checked, missing)
        ``checked`` says which engine version and classes ran; ``missing`` says why nothing ran
        (engine not installed, failed to import, its class elsewhere, too slow).
    """
    from studio.io.export.checks.engine_run import DEFAULT_TIMEOUT_S, engine_verdict

    rules = rules_for(recipe.engine)
    verdict = engine_verdict(recipe, python=python, timeout_s=timeout_s or DEFAULT_TIMEOUT_S)
    label = f"{rules.parser_module.split('.')[0]} {verdict.version}".strip()
    if verdict.status == "not_run":
        return [], None, one_line(verdict.message)
    checked = f"{label}: {verdict.checked}" if verdict.checked else label
    if verdict.status == "accepted":
        return [], one_line(checked), None
    where = f"installed {rules.parser_module}.{rules.parser_class} ({label})"
    return [Finding("error", rules.parser_class, f"the engine refuses the recipe: {one_line(verdict.message)[:500]}",
                    where)], one_line(checked), None


def check(recipe: EngineRecipe, *, with_engine: bool = True, python: str | None = None,
          timeout_s: float | None = None) -> CheckReport:
    """Rules, then (``with_engine``) the engine's own classes (run by ``python``, see
    :func:`check_with_engine`)."""
    findings = check_recipe(recipe)
    checked = missing = None
    if with_engine:
        more, checked, missing = check_with_engine(recipe, python=python, timeout_s=timeout_s)
        findings += more
    return CheckReport(engine=recipe.engine, findings=tuple(findings), engine_checked=checked,
                       engine_missing=missing)


def recipe_with_config_file(recipe: EngineRecipe, path: str) -> EngineRecipe:
    """``recipe`` with its config replaced by the engine config file at ``path`` (the YAML an
    export wrote, possibly edited).

    Raises
    ------
    StudioError
        The file cannot be read, is not YAML (also: nested too deep, several documents, NaN), or
        its top level is not a mapping.
    """
    from studio.io.safe import loads_yaml_limited, read_text_limited

    text = read_text_limited(path, MAX_CONFIG_BYTES, "engine config file")
    data = loads_yaml_limited(text, path, what="engine config file")
    if not isinstance(data, dict) or not all(isinstance(k, str) for k in data):
        raise StudioError("the top level must be a mapping of config keys", path)
    from studio.io.export.engines import engine_spec

    if engine_spec(recipe.engine).dashed_keys:
        data = {k.replace("_", "-"): v for k, v in data.items()}
    return replace(recipe, config=data)
