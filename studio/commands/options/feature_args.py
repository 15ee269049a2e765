"""Engine-feature flags (``serving.features`` of the project; docs/export.md "Engine features"):
``--eplb [N]``, ``--dbo``, ``--all2all-backend``, ``--load-balance``, ``--api-server-count``,
``--kv-offload-gib``, ``--attention-dp-balance``, ``--ib-device``, and ``--routing-skew`` (costed, not exported)."""

from __future__ import annotations

import argparse

from studio.commands.options.arg_types import positive_float, positive_int
from studio.core.engine_features import EngineFeatures


def non_negative_int(text: str) -> int:
    """argparse type: an integer ≥ 0."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number ≥ 0, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number ≥ 0, got {value}")
    return value


def _skew(text: str) -> float:
    """argparse type: a number ≥ 1."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number ≥ 1, got {text!r}") from None
    if not 1.0 <= value <= 1024.0:
        raise argparse.ArgumentTypeError(f"expected a number from 1 to 1024, got {value:g}")
    return value


def add_feature_args(parser: argparse.ArgumentParser) -> None:
    """Add the engine-feature flags (applied by :func:`apply_feature_args`)."""
    g = parser.add_argument_group("engine features (written to the engines and versions that accept them)")
    g.add_argument("--eplb", nargs="?", const=0, type=non_negative_int, metavar="N",
                   help="expert-parallel load balancing, with N redundant experts per MoE layer (default 0)")
    g.add_argument("--dbo", action="store_true", default=None,
                   help="dual-batch overlap (vLLM --enable-dbo, SGLang --enable-two-batch-overlap)")
    g.add_argument("--all2all-backend", metavar="NAME",
                   help="the engine's MoE all-to-all backend (vLLM --all2all-backend, SGLang --moe-a2a-backend, "
                   "TensorRT-LLM moe_config.backend)")
    g.add_argument("--load-balance", metavar="MODE",
                   help="data-parallel load balancing: vLLM internal|hybrid|external, SGLang --load-balance-method")
    g.add_argument("--api-server-count", type=positive_int, metavar="N", help="front-end processes: vLLM --api-server-count, SGLang --tokenizer-worker-num; the plan "
                   "costs vLLM's wait for one at the request rate")
    g.add_argument("--kv-offload-gib", type=positive_float, metavar="G", help="vLLM KV-cache offloading to CPU, GiB")
    g.add_argument("--attention-dp-balance", action="store_true", default=None,
                   help="TensorRT-LLM attention_dp_config.enable_balance")
    g.add_argument("--ib-device", metavar="HCAS", help="SGLang --disaggregation-ib-device, e.g. mlx5_0,mlx5_1")
    g.add_argument("--routing-skew", type=_skew, metavar="S",
                   help="MoE routing skew: the hottest expert's tokens over the mean expert's (>= 1); the plan costs "
                   "the most loaded expert-parallel rank from it, with or without --eplb (not exported)")


def apply_feature_args(args: argparse.Namespace, features: EngineFeatures) -> EngineFeatures:
    """``features`` with the flags given on the command line (the same object when none is)."""
    changes: dict[str, object] = {}
    if getattr(args, "eplb", None) is not None:
        changes.update(eplb=True, redundant_experts=args.eplb)
    if getattr(args, "dbo", None):
        changes["dual_batch_overlap"] = True
    for flag, name in (("all2all_backend", "all2all_backend"), ("load_balance", "load_balance"),
                       ("api_server_count", "api_servers"), ("kv_offload_gib", "kv_offload_gib"),
                       ("ib_device", "ib_device"), ("routing_skew", "routing_skew")):
        value = getattr(args, flag, None)
        if value is not None:
            changes[name] = value
    if getattr(args, "attention_dp_balance", None):
        changes["attention_dp_balance"] = True
    return features.replace(**changes) if changes else features
