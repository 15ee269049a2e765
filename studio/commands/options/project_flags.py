"""The flags of every command that works on one project (PROJECT, model, cluster, layout,
workload, serving, context parallelism, load), added to a sub-command's parser; turning them into
a project is :mod:`studio.commands.options.project_args`."""

from __future__ import annotations

import argparse

from studio.commands.options.arg_types import (
    batch_value,
    int_list,
    non_negative_float,
    positive_float,
    positive_int,
)
from studio.core.precision import KV_DTYPES, WEIGHT_DTYPES

#: The example project used when no PROJECT file is given (see ``presets/examples/``).
DEFAULT_EXAMPLE = "dgx-h100-2node-llama-405b"


def add_project_args(parser: argparse.ArgumentParser, *, layout: bool) -> None:
    """Add the PROJECT argument and the model / cluster / layout / workload / serving flags.

    Parameters
    ----------
    parser:
        The sub-command's parser.
    layout:
        Add the layout flags (``--tp --pp --ep --dp --micro-batches --layers-per-stage``). Commands
        that enumerate layouts themselves (``sweep``) pass ``False``.
    """
    parser.add_argument(
        "project", nargs="?", metavar="PROJECT.json",
        help=f"project file, or a bundled example's id (`layout-studio examples`), to start from "
        f"(default: the bundled example '{DEFAULT_EXAMPLE}')",
    )
    g = parser.add_argument_group("model")
    m = g.add_mutually_exclusive_group()
    m.add_argument("--model", metavar="ID", help="model preset id (see `layout-studio presets models`)")
    m.add_argument("--model-config", metavar="PATH", help="a Hugging Face config.json, or a folder holding one")

    g = parser.add_argument_group("cluster")
    g.add_argument("--gpu", metavar="ID", help="GPU preset id; alone it picks that GPU's usual node template")
    g.add_argument("--node-template", metavar="ID", help="node template id (see `layout-studio presets nodes`)")
    g.add_argument("--nodes", type=positive_int, metavar="N", help="number of nodes, 1..4,096 (default 1 with --gpu/--node-template); at most 65,536 GPUs in all")
    g.add_argument("--gpus-per-node", type=positive_int, metavar="G", help="GPUs per node, 1..1,024 (changes the template's count); at most 65,536 GPUs in all")

    if layout:
        g = parser.add_argument_group("layout")
        g.add_argument("--tp", type=positive_int, metavar="T", help="tensor-parallel size")
        g.add_argument("--pp", type=positive_int, metavar="P", help="pipeline-parallel stages")
        g.add_argument("--ep", type=positive_int, metavar="E", help="expert-parallel size (MoE models)")
        g.add_argument("--dp", type=positive_int, metavar="D", help="data-parallel replicas (default: GPUs / (TP×PP))")
        g.add_argument("--micro-batches", type=positive_int, metavar="M", help="pipeline micro-batches")
        g.add_argument("--layers-per-stage", type=int_list, metavar="L1,L2,...", help="layers of each stage, e.g. 63,63")
        add_cp_args(g)

    g = parser.add_argument_group("workload")
    g.add_argument("--isl", type=positive_int, metavar="N", help="input (prompt) tokens")
    g.add_argument("--osl", type=positive_int, metavar="N", help="output tokens")
    g.add_argument("--batch", type=batch_value, metavar="N|auto", help="concurrent sequences per replica, or auto")
    g.add_argument("--max-batch", type=positive_int, metavar="N", help="cap of batch auto")
    g.add_argument("--ttft-ms", type=positive_float, metavar="X", help="time-to-first-token target, ms")
    g.add_argument("--tpot-ms", type=positive_float, metavar="Y", help="time-per-output-token target, ms")

    g = parser.add_argument_group("serving")
    g.add_argument("--weight-dtype", choices=WEIGHT_DTYPES, help="quantise linear layers to this format")
    g.add_argument("--kv-dtype", choices=KV_DTYPES, help="KV-cache format")
    g.add_argument("--gpu-memory-utilization", type=positive_float, metavar="F", help="fraction of GPU memory the runtime may use (0.05..1]")
    g.add_argument("--price-per-gpu-hour", type=non_negative_float, metavar="USD", help="price of one GPU-hour (default: each GPU preset's)")
    g.add_argument("--calibration", metavar="NAME", help="calibration profile stored in the project")
    from studio.commands.options.feature_args import add_feature_args
    from studio.commands.options.load_args import add_spec_args

    add_spec_args(parser)
    add_feature_args(parser)
    from studio.commands.options.reuse_args import add_reuse_args

    add_reuse_args(parser)


def add_lengths_arg(group: argparse._ActionsContainer) -> None:
    """Add ``--lengths ID``: input and output length distributions together, from a bundled workload
    (``layout-studio presets workloads``) or ``random:ISL:OSL[:RATIO]`` (vLLM's random dataset)."""
    group.add_argument("--lengths", metavar="ID",
                       help="request lengths of a bundled workload (see `layout-studio presets workloads`) or "
                            "random:ISL:OSL[:RATIO] (vLLM bench serve random, range ratio RATIO); sets ISL/OSL "
                            "to their means and the load's length distributions")


def add_runtime_args(parser: argparse.ArgumentParser) -> None:
    """Add ``--runtime`` and ``--runtime-version``: the serving engine the plan runs on (its profile
    in ``presets/engines/<engine>.json``; see docs/engine.md "Engine profiles")."""
    g = parser.add_argument_group("serving engine (see docs/engine.md, Engine profiles)")
    g.add_argument("--runtime", choices=("vllm", "trtllm", "sglang"),
                   help="serving engine: its scheduler cost, defaults, CUDA graphs and KV-cache sizing "
                        "(without --gpu-memory-utilization the engine's default memory fraction)")
    g.add_argument("--runtime-version", metavar="V",
                   help="engine version, e.g. 0.6.3 (default: the newest profile); an unknown version uses the "
                        "nearest profile and says so")


def add_cp_args(group: argparse._ActionsContainer) -> None:
    """Add ``--cp`` and ``--cp-mode`` (context parallelism; see docs/engine.md)."""
    group.add_argument("--cp", type=positive_int, metavar="C",
                       help="context-parallel size: the KV cache of each sequence split C ways along the sequence")
    group.add_argument("--cp-mode", choices=("decode", "prefill"),
                       help="decode: inside the TP group (vLLM --decode-context-parallel-size, default); "
                            "prefill: ring attention over C DP replicas")


def add_load_args(parser: argparse.ArgumentParser) -> None:
    """Add the load flags (``plan``, ``sweep``, ``simulate``): how the plan is served — a request
    rate, a closed loop of users or an offline batch — and the request-length spread. Applied by
    :func:`project_from_args` (see :func:`apply_load_args`)."""
    g = parser.add_argument_group("load (how the plan is served; see docs/load.md)")
    mode = g.add_mutually_exclusive_group()
    mode.add_argument("--rate", type=positive_float, metavar="R", help="open loop: R requests per second over all replicas")
    mode.add_argument("--concurrency", type=positive_int, metavar="N", help="closed loop: N users over all replicas")
    mode.add_argument("--offline", action="store_true", default=None, help="all requests queued at t = 0 (trtllm-bench)")
    g.add_argument("--arrival", choices=("poisson", "constant"), help="arrivals of --rate (default poisson)")
    g.add_argument("--num-requests", type=positive_int, metavar="N", help="requests simulated (default 1000)")
    g.add_argument("--seed", type=int, metavar="S", help="random seed of the simulation (0..2147483647)")
    g.add_argument("--max-num-batched-tokens", type=positive_int, metavar="N", help="token budget of one scheduler iteration")
    add_lengths_arg(g)
    for which in ("isl", "osl"):
        lengths = g.add_mutually_exclusive_group()
        lengths.add_argument(f"--{which}-spread", type=non_negative_float, metavar="F",
                             help=f"{which.upper()} uniform on mean × (1 ± F), 0 ≤ F < 1 (0 = fixed)")
        lengths.add_argument(f"--{which}-histogram", metavar="FILE",
                             help=f"{which.upper()} from a CSV/JSON histogram of (length, weight)")
