"""Run the engine's own validation of a recipe in a separate Python process.

The engine (vLLM, SGLang, TensorRT-LLM) often lives in its own environment — it pulls in torch and
pins versions Layout Studio does not need. :func:`engine_verdict` picks the interpreter (one the
caller names, else ``LAYOUT_STUDIO_ENGINE_PYTHON``, else this one when the engine is importable
here), starts :mod:`.engine_worker` in it with a time limit, and returns the engine's verdict: its
own message when it refuses the recipe, never a traceback. What the engine prints on the way is
kept away from the user.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from studio.io.export.bundle import EngineRecipe
from studio.io.export.checks.rules import rules_for

#: Environment variable naming the Python interpreter of an environment that has the engine.
ENGINE_PYTHON_ENV = "LAYOUT_STUDIO_ENGINE_PYTHON"
#: Seconds the engine's validation may take (importing vLLM and torch takes 10-30 s).
DEFAULT_TIMEOUT_S = 180.0
#: Top-level package of each engine.
ENGINE_PACKAGES = {"vllm": "vllm", "sglang": "sglang", "trtllm": "tensorrt_llm"}
_WORKER = Path(__file__).with_name("engine_worker.py")


@dataclass(frozen=True)
class EngineVerdict:
    """What the engine's own validation said.

    Attributes
    ----------
    status:
        ``accepted``, ``refused`` (``message`` is the engine's own), or ``not_run`` (``message``
        says why: not installed, failed to import, timed out).
    message:
        The engine's message, or why the validation did not run.
    checked:
        What ran (parser, config classes, platform), when it ran.
    version:
        The engine version that ran (``""`` when none did).
    python:
        The interpreter that ran it (``""`` when none did).
    """

    status: str
    message: str = ""
    checked: str = ""
    version: str = ""
    python: str = ""


def choose_python(engine: str, python: str | None = None) -> str | None:
    """The interpreter to validate with: ``python``, else ``$LAYOUT_STUDIO_ENGINE_PYTHON``, else
    this interpreter when the engine is importable here; ``None`` when there is none."""
    chosen = python or os.environ.get(ENGINE_PYTHON_ENV) or None
    if chosen:
        return chosen
    try:
        found = importlib.util.find_spec(ENGINE_PACKAGES[engine]) is not None
    except (ImportError, ValueError):
        found = False
    return sys.executable if found else None


def _words(config: dict[str, object], bool_negation: bool) -> list[str]:
    """Config-file keys as command-line words (the engines' own config-file rules: a mapping is
    written as JSON, a list as several values, ``false`` as ``--no-KEY`` where the parser has it)."""
    words: list[str] = []
    for key, value in config.items():
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
            words += [flag, json.dumps(value)]
        elif value is not None:
            words += [flag, str(value)]
    return words


def request(recipe: EngineRecipe) -> dict[str, object]:
    """The worker's request for ``recipe``: the engine's parser class and the recipe's words."""
    from studio.io.export.features import frontend_keys

    rules = rules_for(recipe.engine)
    req: dict[str, object] = {
        "engine": recipe.engine, "model": recipe.model, "config": recipe.config,
        "parser_module": rules.parser_module, "parser_class": rules.parser_class,
        "gpus_per_node": recipe.gpus_per_node, "nodes": recipe.nodes, "hf_config": recipe.hf_config,
    }
    if recipe.disagg_config:
        req["disagg_config"] = recipe.disagg_config
    if recipe.engine == "vllm":
        front = frontend_keys("vllm") | {"host", "port"}  # parsed by vllm serve's API server, not by EngineArgs
        engine_only = replace(recipe, config={k: v for k, v in recipe.config.items() if k not in front})
        req["argv"] = ["--model", recipe.model, *_words(recipe.config, bool_negation=True)]
        req["engine_argv"] = ["--model", recipe.model, *_words(engine_only.config, bool_negation=True)]
    elif recipe.engine == "sglang":
        argv = ["--model-path", recipe.model, *_words(recipe.config, bool_negation=False)]
        req["argv"] = argv + (["--host", recipe.host] if recipe.host else [])
    return req


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""


def engine_verdict(recipe: EngineRecipe, *, python: str | None = None,
                   timeout_s: float = DEFAULT_TIMEOUT_S) -> EngineVerdict:
    """The engine's own validation of ``recipe``, run by ``python`` (see :func:`choose_python`)."""
    exe = choose_python(recipe.engine, python)
    if exe is None:
        return EngineVerdict("not_run", f"{ENGINE_PACKAGES[recipe.engine]} is not installed in this Python "
                             "environment, and no engine interpreter was named")
    env = {**os.environ, "VLLM_CONFIGURE_LOGGING": "0", "PYTHONUNBUFFERED": "1", "TOKENIZERS_PARALLELISM": "false"}
    if recipe.engine == "vllm":
        # no GPU is visible, as in a worker before its GPUs are assigned: vLLM then keeps Triton (and
        # the model runner it picks with it) as on a GPU host instead of falling back for want of a driver
        env["CUDA_VISIBLE_DEVICES"] = ""
        if recipe.hf_config is not None:  # the model is a local folder then: look nothing up on the Hub
            env["HF_HUB_OFFLINE"] = "1"
    with tempfile.TemporaryDirectory(prefix="studio-engine-check-") as tmp:
        out = Path(tmp) / "verdict.json"
        try:
            proc = subprocess.Popen([exe, str(_WORKER), str(out)], cwd=tmp, env=env, stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        except OSError as exc:
            return EngineVerdict("not_run", f"cannot start the engine interpreter {exe} ({exc.strerror or exc})",
                                 python=exe)
        req, stand_in = _local_disk_dir(request(recipe), recipe, Path(tmp))
        try:
            _, err = proc.communicate(json.dumps(req).encode(), timeout=timeout_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            return EngineVerdict("not_run", f"the engine's validation did not finish within {timeout_s:g} s",
                                 python=exe)
        try:
            got = json.loads(out.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            said = _last_line(err.decode(errors="replace"))
            return EngineVerdict("not_run", f"the engine interpreter {exe} ended (exit code {proc.returncode}) "
                                 f"without a verdict{': ' + said if said else ''}", python=exe)
    status = {"accepted": "accepted", "refused": "refused"}.get(str(got.get("status")), "not_run")
    checked = str(got.get("checked", ""))
    if stand_in and checked:
        checked += f"; {stand_in}"
    return EngineVerdict(status, str(got.get("message", "")), checked, str(got.get("version", "")), exe)


def _local_disk_dir(req: dict[str, object], recipe: EngineRecipe, scratch: Path) -> tuple[dict[str, object], str]:
    """``req`` with the NVMe KV directory (TensorRT-LLM ``disk_cache_path``, which its config validator
    requires to exist) replaced by a directory made under ``scratch``: the recipe creates the node's
    with ``mkdir -p`` before the server starts, and this machine need not have it. Returns the request
    and what was stood in ("" when nothing was)."""
    import copy

    from studio.io.export.features import feature_rules
    from studio.io.export.prefix_cache import disk_dir

    path = disk_dir(recipe.config, recipe.engine)
    if path is None:
        return req, ""
    local = scratch / "nvme-kv"
    local.mkdir(exist_ok=True)
    config = copy.deepcopy(recipe.config)
    node: object = config
    *parents, last = str(feature_rules()["kv_disk_tier"][recipe.engine]["path_key"]).split(".")
    for part in parents:
        node = node[part] if isinstance(node, dict) else None
    if isinstance(node, dict):
        node[last] = str(local)
    return {**req, "config": config}, (f"{path} (the recipe creates it on the node) stood in by a directory on this "
                                       "machine")

