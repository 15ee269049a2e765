"""The engine's own validation of one recipe, run as a script by the engine's Python interpreter.

``python engine_worker.py RESULT.json < REQUEST.json``: the request names the engine, its parser
module and class and the recipe's command-line words; the script imports the engine, parses the
words with the engine's own argument parser, builds the engine's config classes from them (their
validators are the engine's start-up checks that need no model weights and no GPU), and writes one
JSON object to RESULT.json::

    {"status": "accepted" | "refused" | "unavailable", "checked": "...", "message": "...",
     "version": "..."}

It imports nothing but the standard library and the engine, so it runs in an environment that has
the engine and not Layout Studio (:mod:`studio.io.export.checks.engine_run` starts it). Whatever the
engine prints goes to this process's stdout/stderr, which the caller keeps away from the user; only
the engine's own message reaches the report.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib
import io
import json
import sys
from pathlib import Path
from typing import Any

#: Distribution name of each engine (for its version).
DISTRIBUTIONS = {"vllm": "vllm", "sglang": "sglang", "trtllm": "tensorrt_llm"}


class Unavailable(Exception):
    """The engine (or the class this check needs) is not importable here."""


def engine_message(exc: BaseException) -> str:
    """The engine's own words: a pydantic validation error as its class and each error's field and
    message ("ParallelConfig: enable_expert_parallel must be True to use EPLB."), else the
    exception text."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        try:
            msgs = [_located(e) for e in errors()]
        except Exception:  # noqa: BLE001 - not pydantic's errors(): fall back to the text
            msgs = []
        if msgs:
            title = getattr(exc, "title", "")
            return (f"{title}: " if isinstance(title, str) and title else "") + "; ".join(msgs)
    return str(exc).strip() or type(exc).__name__


def _located(error: dict[str, Any]) -> str:
    """One pydantic error: its field path (when it has one), then its message."""
    loc = ".".join(str(part) for part in error.get("loc", ()))
    msg = str(error.get("msg", "")).removeprefix("Value error, ")
    return f"{loc}: {msg}" if loc else msg


def parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """``parser.parse_args(argv)``; the parser's own error line when it refuses them."""
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            return parser.parse_args(argv)
    except SystemExit:
        lines = [ln.strip() for ln in err.getvalue().splitlines() if ln.strip()]
        start = next((i for i, ln in enumerate(lines) if "error:" in ln), len(lines) - 1)
        said = [ln for ln in lines[start:] if not ln.startswith("For further information")]
        raise ValueError(" ".join(said) if said else "the argument parser refused the arguments") from None


def _module(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise Unavailable(f"{name} is not importable ({exc})") from None
    except Exception as exc:  # noqa: BLE001 - an installed engine that fails to import (e.g. no CUDA library)
        raise Unavailable(f"importing {name} failed ({type(exc).__name__}: {str(exc)[:200]})") from None


def _optional(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except Exception:  # noqa: BLE001 - a part that is missing or fails to import is left out
        return None


def _engine_class(req: dict[str, Any]) -> Any:
    module = _module(req["parser_module"])
    cls = getattr(module, req["parser_class"], None)
    if cls is None:
        raise Unavailable(f"{req['parser_module']} has no {req['parser_class']} (another engine version?)")
    return cls


# ----------------------------------------------------------------------------------------- vLLM
def vllm_platform(gpus_per_node: int) -> str:
    """Where vLLM finds no GPU platform, put in a platform stand-in that reports the recipe's GPUs
    per node (start-up rule ``vllm.check.no_device``): vLLM's parser builds ``VllmConfig``
    defaults, whose ``DeviceConfig('auto')`` raises 'Failed to infer device type' without one. The
    stand-in has device type ``cuda`` but is an out-of-tree platform, so vLLM imports none of its
    CUDA kernels (which fail to load without a GPU driver) and creates no device. Returns the
    platform the check ran under."""
    platforms = _optional("vllm.platforms")
    interface = _optional("vllm.platforms.interface")
    if platforms is None or interface is None:
        return "vLLM's own platform"
    try:
        found = getattr(platforms.current_platform, "device_type", "")
    except Exception:  # noqa: BLE001 - a platform plugin that fails to load: no usable platform
        found = ""
    if found:
        return f"vLLM's {found} platform"
    gpus = max(1, gpus_per_node)

    class CheckPlatform(interface.Platform):  # type: ignore[name-defined]
        _enum = interface.PlatformEnum.CUDA
        device_name = "cuda"
        device_type = "cuda"
        dispatch_key = "CUDA"

        @classmethod
        def device_count(cls) -> int:
            return gpus

    platforms._current_platform = CheckPlatform()
    return f"a CUDA platform stand-in with {gpus} GPU(s) per node (no device created)"


def _build(klass: Any, args: Any, more: dict[str, Any]) -> bool:
    """``klass(**fields)`` with every init field of the config dataclass that the engine arguments
    hold (not ``None``): its validators raise what vLLM refuses at start-up. False: not built."""
    if not (isinstance(klass, type) and dataclasses.is_dataclass(klass)):
        return False
    if klass.__name__ == "KVTransferConfig":
        value = getattr(args, "kv_transfer_config", None)
        if isinstance(value, dict):
            klass(**value)
            return True
        if value is not None and dataclasses.is_dataclass(value):
            return True  # already built (and validated) by the parser
        return False
    kwargs = {f.name: getattr(args, f.name) for f in dataclasses.fields(klass)
              if f.init and not f.name.startswith("_") and getattr(args, f.name, None) is not None}
    klass(**{**kwargs, **more})
    return True


def run_vllm(req: dict[str, Any]) -> list[str]:
    """vLLM's ``vllm serve`` parser (engine and API-server arguments) and ``from_cli_args``; then,
    with the model's ``config.json``, ``create_engine_config`` (every config class, the model's
    included, and ``VllmConfig``'s cross-checks), else the parallel, cache, scheduler and
    KV-transfer config classes built from the arguments."""
    ran = [vllm_platform(int(req.get("gpus_per_node", 1)))]
    cls = _engine_class(req)
    parser_cls: Any = argparse.ArgumentParser
    for where in ("vllm.utils.argparse_utils", "vllm.utils"):
        found = getattr(_optional(where), "FlexibleArgumentParser", None)
        if found is not None:
            parser_cls = found
            break
    serve = None
    for where in ("vllm.entrypoints.common.cli_args", "vllm.entrypoints.openai.cli_args"):
        serve = getattr(_optional(where), "make_arg_parser", None)
        if serve is not None:
            break
    if serve is not None:
        ns = parse(serve(parser_cls()), req["argv"])
        ran.append("the vllm serve argument parser")
    else:
        ns = parse(cls.add_cli_args(parser_cls()), req["engine_argv"])
        ran.append(f"{req['parser_class']}.add_cli_args")
    nodes = int(req.get("nodes", 1))
    if nodes > 1 and hasattr(ns, "nnodes"):
        ns.nnodes = nodes  # the recipe's other nodes start the same server (--nnodes on every node)
    model_dir = _model_folder(req) if hasattr(cls, "create_engine_config") else None
    if model_dir is not None:
        ns.model = model_dir
        if hasattr(ns, "model_tag"):
            ns.model_tag = None
    args = cls.from_cli_args(ns)
    ran.append(f"{req['parser_class']}.from_cli_args")
    if model_dir is not None and hasattr(args, "create_engine_config"):
        _no_modelinfo_cache()
        try:
            args.create_engine_config()
        except (ImportError, AttributeError) as exc:  # GPU kernels that do not load without a driver
            if isinstance(exc, AttributeError) and "_OpNamespace" not in str(exc):
                raise  # only a compiled torch op missing is the machine's doing, not the recipe's
            ran.append(f"create_engine_config stopped at an import of GPU kernels ({str(exc)[:160]}), so "
                       "only the config classes below ran")
        except Exception as exc:
            if not _needs_download(exc):
                raise
            ran.append("create_engine_config stopped where it reads another model from the Hugging Face Hub "
                       f"(the check downloads nothing: {engine_message(exc)[:160]}), so only the config classes "
                       "below ran")
        else:
            ran.append("create_engine_config (every config class and VllmConfig's cross-checks, with the "
                       "model's config.json and no weights)")
            return ran
    config = _optional("vllm.config")
    if config is not None:
        for name in ("ParallelConfig", "CacheConfig", "SchedulerConfig", "KVTransferConfig"):
            more: dict[str, Any] = {}
            if name == "ParallelConfig" and nodes > 1:
                more = {"nnodes": nodes}
            elif name == "SchedulerConfig":  # its init-only values come from the model's config
                more = {"max_model_len": getattr(args, "max_model_len", None) or 8192, "is_encoder_decoder": False}
            try:
                built = _build(getattr(config, name, None), args, more)
            except TypeError as exc:  # a field this version's class does not take: not a refusal
                ran.append(f"{name} not built ({exc})")
                continue
            if built:
                ran.append(name)
    return ran


def _needs_download(exc: BaseException) -> bool:
    """Whether ``exc`` comes from looking up a model on the Hugging Face Hub (a draft model named by
    its id): the check has no network and downloads nothing, so that is not the engine's verdict."""
    seen: BaseException | None = exc
    while seen is not None:
        if type(seen).__module__.startswith(("huggingface_hub", "requests", "urllib3", "httpx")):
            return True
        if "Invalid repository ID or local directory" in str(seen):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _no_modelinfo_cache() -> None:
    """Keep vLLM from writing its model-info cache: the model registry inspects the architecture in
    a child process (which succeeds without a GPU), but the cache writer imports the model loader,
    whose CUDA kernels do not load without a GPU driver. Nothing the check validates depends on it."""
    registry = _optional("vllm.model_executor.models.registry")
    lazy = getattr(registry, "_LazyRegisteredModel", None)
    if lazy is not None and hasattr(lazy, "_save_modelinfo_to_cache"):
        lazy._save_modelinfo_to_cache = lambda self, info, module_hash: None


def _model_folder(req: dict[str, Any]) -> str | None:
    """A folder holding only the model's ``config.json`` (no weights), when the request has it."""
    cfg = req.get("hf_config")
    if not isinstance(cfg, dict):
        return None
    folder = Path.cwd() / "model-config"
    folder.mkdir(exist_ok=True)
    (folder / "config.json").write_text(json.dumps(cfg), encoding="utf-8")
    req["_model_dir"] = str(folder)
    return str(folder)


# --------------------------------------------------------------------------------------- SGLang
def run_sglang(req: dict[str, Any]) -> list[str]:
    """SGLang's own ``ServerArgs`` parser, then ``from_cli_args`` (``ServerArgs.__post_init__``
    runs its argument checks)."""
    cls = _engine_class(req)
    parser = argparse.ArgumentParser()
    cls.add_cli_args(parser)
    cls.from_cli_args(parse(parser, req["argv"]))
    return [f"{req['parser_class']}.add_cli_args", f"{req['parser_class']}.from_cli_args"]


# --------------------------------------------------------------------------------- TensorRT-LLM
def run_trtllm(req: dict[str, Any]) -> list[str]:
    """TensorRT-LLM's LLM-API arguments built as ``trtllm-serve MODEL --config FILE`` builds them:
    the command line's arguments (the model, the PyTorch backend, the GPUs per node) merged with the
    config file's keys by ``update_llm_args_with_extra_dict`` (``tensorrt_llm/commands/serve.py``
    calls it for ``--config`` / ``--extra_llm_api_options``; in ``llm_args`` or, in older versions,
    ``llm_utils``) when the version has it, then the
    pydantic arguments class (``TorchLlmArgs``: its field types and validators), then the
    ``Mapping`` the LLM builds from ``parallel_config`` at start (world size, MoE TP x EP, CP
    checks). Without a GPU, ``gpus_per_node`` is the recipe's (``trtllm-serve`` reads it from the
    visible devices and refuses none)."""
    cls = _engine_class(req)
    merge = getattr(sys.modules[cls.__module__], "update_llm_args_with_extra_dict", None)
    if merge is None:  # older versions keep it in llm_utils (serve.py @ 00209af1 imports it from there)
        merge = getattr(_optional("tensorrt_llm.llmapi.llm_utils"), "update_llm_args_with_extra_dict", None)
    ran: list[str] = []
    if merge is not None:
        base = {"model": req["model"], "backend": "pytorch", "gpus_per_node": int(req.get("gpus_per_node") or 1)}
        kwargs = merge(base, dict(req["config"]), "trtllm-serve.yaml")
        ran.append("update_llm_args_with_extra_dict (trtllm-serve's merge of the --config file)")
    else:
        kwargs = {"model": req["model"], **req["config"]}
    args = cls(**kwargs)
    ran.append(f"{req['parser_class']} and its validators")
    parallel = getattr(args, "parallel_config", None)
    if parallel is not None and hasattr(parallel, "to_mapping"):
        mapping = parallel.to_mapping()
        ran.append("Mapping (parallel_config.to_mapping(), as the LLM builds it at start)")
        balancer: Any = getattr(getattr(args, "moe_config", None), "load_balancer", None)
        ep = getattr(mapping, "moe_ep_size", 1)
        if hasattr(balancer, "setup") and isinstance(ep, int) and ep > 1:
            # maybe_create_moe_load_balancer (_torch/modules/fused_moe/moe_load_balancer.py) at model
            # load, with expert parallelism: the slots must divide among the EP ranks
            balancer.setup(ep_rank=0, ep_size=ep)
            ran.append("MoeLoadBalancerConfig.setup (as the model load calls it with EP)")
    if req.get("disagg_config"):
        ran.append(_trtllm_disagg_config(req["disagg_config"]))
    return ran


def _trtllm_disagg_config(config: dict[str, Any]) -> str:
    """``trtllm-serve disaggregated -c disagg-config.yaml``'s parse of the router's file
    (``parse_disagg_config_file``, then the server urls it routes to); what ran, for the report."""
    utils = _optional("tensorrt_llm.llmapi.disagg_utils")
    parse = getattr(utils, "parse_disagg_config_file", None)
    if parse is None:
        return "disagg-config.yaml not parsed (this version has no tensorrt_llm.llmapi.disagg_utils)"
    path = Path.cwd() / "disagg-config.yaml"
    path.write_text(json.dumps(config), encoding="utf-8")  # JSON is YAML
    try:
        parsed = parse(str(path))
        urls = getattr(utils, "get_ctx_gen_server_urls", None)
        if urls is not None:
            urls(parsed.server_configs)
    except Exception as exc:  # the engine's refusal, said of the file it read
        raise ValueError(f"disagg-config.yaml: {engine_message(exc)}") from exc
    return "parse_disagg_config_file (trtllm-serve disaggregated -c disagg-config.yaml)"


RUNNERS = {"vllm": run_vllm, "sglang": run_sglang, "trtllm": run_trtllm}


def _version(engine: str) -> str:
    from importlib import metadata

    try:
        return metadata.version(DISTRIBUTIONS[engine])
    except Exception:  # noqa: BLE001 - a source checkout without metadata: the package's own version
        found = getattr(sys.modules.get(DISTRIBUTIONS[engine]), "__version__", None)
        return str(found) if found else "unknown version"


def validate(req: dict[str, Any]) -> dict[str, Any]:
    """Run the engine's own validation of the request; the verdict as a JSON-able mapping."""
    engine = req["engine"]
    try:
        ran = RUNNERS[engine](req)
    except Unavailable as exc:
        return {"status": "unavailable", "message": str(exc), "version": _version(engine), "checked": ""}
    except BaseException as exc:  # whatever the engine's own classes raise (SystemExit too) is its refusal
        if isinstance(exc, KeyboardInterrupt):
            raise
        message = engine_message(exc)
        if req.get("_model_dir"):
            message = message.replace(str(req["_model_dir"]), str(req["model"]))
        return {"status": "refused", "message": message, "version": _version(engine),
                "checked": f"{req['parser_module']}.{req['parser_class']}"}
    return {"status": "accepted", "message": "", "version": _version(engine), "checked": "; ".join(ran)}


def main(argv: list[str]) -> int:
    """Read the request from stdin, write the verdict to ``argv[0]``."""
    here = Path(__file__).resolve().parent
    sys.path[:] = [p for p in sys.path if not p or Path(p).resolve() != here]  # no sibling shadows a module
    req = json.loads(sys.stdin.read())
    result = validate(req)
    Path(argv[0]).write_text(json.dumps(result), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
