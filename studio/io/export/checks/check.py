"""Check a recipe against the engine's run-time rules, and against the engine's own argument
parser and config classes when the engine is installed, without starting a server.

:func:`check_recipe` applies the rules of :mod:`.rules` (data, with the engine version and the
source file of each rule). :func:`check_with_engine` imports the engine's parser class named in
those rules (vLLM ``EngineArgs``, SGLang ``ServerArgs``, TensorRT-LLM ``TorchLlmArgs``) and feeds
it the recipe's arguments; an engine that is not installed is reported, never required.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from types import ModuleType
from typing import Any

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
            out.append(f"checked with the installed engine: {self.engine_checked}")
        elif self.engine_missing:
            out.append(f"not checked with the engine itself: {self.engine_missing}")
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
def _cli_words(recipe: EngineRecipe, bool_negation: bool) -> list[str]:
    """The recipe's config as command-line words (the engine's own config-file rules)."""
    words: list[str] = []
    for key, value in recipe.config.items():
        flag = "--" + key
        if value is True:
            words.append(flag)
        elif value is False:
            if bool_negation:
                words.append("--no-" + key)
        elif isinstance(value, (list, tuple)):
            if value:
                words += [flag, *(str(v) for v in value)]
        elif isinstance(value, dict):
            words += [flag, json.dumps(value)]  # the engines' config-file rule for mappings
        elif value is not None:
            words += [flag, str(value)]
    return words


def _parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            return parser.parse_args(argv)
    except SystemExit:
        lines = [ln.strip() for ln in err.getvalue().splitlines() if ln.strip()]
        start = next((i for i, ln in enumerate(lines) if "error:" in ln), len(lines) - 1)
        said = [ln for ln in lines[start:] if not ln.startswith("For further information")]
        raise ValueError(" ".join(said) if said else "the argument parser refused the arguments") from None


def _vllm(module: ModuleType, cls: Any, recipe: EngineRecipe) -> None:
    """vLLM's own parser, ``EngineArgs.from_cli_args``, then the parallel, cache, scheduler and
    KV-transfer config classes built from those arguments (their validators are vLLM's start-up
    checks that need no model and no GPU)."""
    parser_cls: Any = argparse.ArgumentParser
    for where in ("vllm.utils.argparse_utils", "vllm.utils"):
        try:
            parser_cls = importlib.import_module(where).FlexibleArgumentParser
            break
        except (ImportError, AttributeError):
            continue
    from studio.io.export.features import frontend_keys

    parser = cls.add_cli_args(parser_cls())
    front = frontend_keys("vllm")  # parsed by vllm serve's API server, not by EngineArgs
    engine_only = replace(recipe, config={k: v for k, v in recipe.config.items() if k not in front})
    ns = _parse(parser, ["--model", recipe.model, *_cli_words(engine_only, bool_negation=True)])
    args = cls.from_cli_args(ns)
    config = _optional_module("vllm.config")
    if config is None:
        return
    more: dict[str, object] = {"nnodes": recipe.nodes} if recipe.nodes > 1 else {}
    for name in ("ParallelConfig", "CacheConfig", "KVTransferConfig"):
        klass = getattr(config, name, None)
        if klass is not None:
            _build_from(klass, args, more if name == "ParallelConfig" else {})


def _engine_message(exc: Exception) -> str:
    """The engine's own words: a pydantic validation error's messages (vLLM's and TensorRT-LLM's
    config classes), else the exception text."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        try:
            msgs = [str(e.get("msg", "")) for e in errors()]
        except Exception:  # noqa: BLE001 - not pydantic's errors(): fall back to the text
            msgs = []
        if msgs:
            return one_line("; ".join(m.removeprefix("Value error, ") for m in msgs))
    return one_line(str(exc)).strip() or type(exc).__name__


def _optional_module(name: str) -> ModuleType | None:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def _build_from(klass: Any, args: Any, more: dict[str, object]) -> None:
    """``klass(**fields)`` with every field of the config class that the engine arguments hold (not
    ``None``): the class's validators raise what the engine would refuse at start-up."""
    import dataclasses as dc

    if not (isinstance(klass, type) and dc.is_dataclass(klass)):
        return
    build: Any = klass
    if klass.__name__ == "KVTransferConfig":
        value = getattr(args, "kv_transfer_config", None)
        if isinstance(value, dict):
            build(**value)
        return
    kwargs = {f.name: getattr(args, f.name) for f in dc.fields(klass)
              if f.init and not f.name.startswith("_") and getattr(args, f.name, None) is not None}
    build(**{**kwargs, **more})


def _vllm_platform(recipe: EngineRecipe) -> Callable[[], None] | None:
    """On a machine without a GPU platform, a CUDA platform stand-in reporting the recipe's GPUs per
    node (startup rule ``vllm.check.no_device``): vLLM's parser builds ``VllmConfig`` defaults,
    whose ``DeviceConfig`` raises 'Failed to infer device type' without one. No device is created;
    returns the undo (``None`` when vLLM found a platform itself)."""
    platforms = _optional_module("vllm.platforms")
    interface = _optional_module("vllm.platforms.interface")
    if platforms is None or interface is None:
        return None
    try:
        found = getattr(platforms.current_platform, "device_type", "")
    except Exception:  # noqa: BLE001 - a platform plugin that fails to load: no usable platform
        found = ""
    if found:
        return None
    gpus = max(1, recipe.gpus_per_node)

    api: Any = interface
    registry: Any = platforms

    class _CheckPlatform(api.Platform):  # vLLM's base class, known at run time
        _enum = api.PlatformEnum.CUDA
        device_name = "cuda"
        device_type = "cuda"
        dispatch_key = "CUDA"

        @classmethod
        def device_count(cls) -> int:
            return gpus

    before = registry._current_platform
    registry._current_platform = _CheckPlatform()

    def undo() -> None:
        registry._current_platform = before

    return undo


def _sglang(module: ModuleType, cls: Any, recipe: EngineRecipe) -> None:
    parser = argparse.ArgumentParser()
    cls.add_cli_args(parser)
    argv = ["--model-path", recipe.model, *_cli_words(recipe, bool_negation=False)]
    if recipe.host:
        argv += ["--host", recipe.host]
    cls.from_cli_args(_parse(parser, argv))


def _trtllm(module: ModuleType, cls: Any, recipe: EngineRecipe) -> None:
    cls(model=recipe.model, **recipe.config)


_RUNNERS: dict[str, Callable[[ModuleType, Any, EngineRecipe], None]] = {
    "vllm": _vllm, "sglang": _sglang, "trtllm": _trtllm,
}


def check_with_engine(recipe: EngineRecipe) -> tuple[list[Finding], str | None, str | None]:
    """Feed ``recipe`` to the installed engine's own parser and config class.

    Returns
    -------
    (findings, checked, missing)
        ``checked`` names the class that ran; ``missing`` says why nothing ran (engine not
        installed, or its class not where this engine version keeps it).
    """
    rules = rules_for(recipe.engine)
    where = f"{rules.parser_module}.{rules.parser_class}"
    undo: Callable[[], None] | None = None
    try:
        try:
            if recipe.engine == "vllm":
                undo = _vllm_platform(recipe)
            module = importlib.import_module(rules.parser_module)
        except ImportError:
            return [], None, f"{rules.parser_module} is not installed here"
        except Exception as exc:  # noqa: BLE001 - an installed engine that fails to import (e.g. no CUDA)
            return [], None, (f"importing {rules.parser_module} failed ({type(exc).__name__}: "
                              f"{one_line(str(exc))[:200]})")
        cls = getattr(module, rules.parser_class, None)
        if cls is None:
            return [], None, f"{rules.parser_module} has no {rules.parser_class} (another engine version?)"
        try:
            _RUNNERS[recipe.engine](module, cls, recipe)
        except Exception as exc:  # noqa: BLE001 - whatever the engine's own argument classes raise is its refusal
            text = _engine_message(exc)
            return [Finding("error", rules.parser_class, f"the engine refuses the recipe: {text[:500]}",
                            f"installed {where}")], where, None
        return [], where, None
    finally:
        if undo is not None:
            undo()


def check(recipe: EngineRecipe, *, with_engine: bool = True) -> CheckReport:
    """Rules, then (``with_engine``) the installed engine's own classes."""
    findings = check_recipe(recipe)
    checked = missing = None
    if with_engine:
        more, checked, missing = check_with_engine(recipe)
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
