"""Regenerate the bundled example projects in ``presets/examples/`` from the presets.

Run from the repository root::

    python tools/make_examples.py

The output is deterministic: running it twice leaves the files byte-identical.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from studio.core.building.builders import build_cluster
from studio.core.layout import Layout
from studio.core.precision import DType
from studio.core.project import Project
from studio.core.settings.reuse import KVTiers, Reuse
from studio.core.workload import ServingConfig, Workload
from studio.io.presets import Catalog, load_catalog
from studio.io.project_file import save_project

EXAMPLES_DIR = Path(__file__).resolve().parents[1] / "presets" / "examples"


@dataclass(frozen=True)
class Example:
    """One example project: which template, how many nodes, which model, which layout."""

    stem: str
    title: str
    description: str
    template: str
    nodes: int
    model: str
    layout: Layout
    workload: Workload = Workload(isl=2048, osl=512, batch="auto")
    serving: ServingConfig = ServingConfig()


EXAMPLES = (
    Example(
        stem="dgx-h100-2node-llama-405b",
        title="Llama-3.1-405B on 2× DGX H100",
        description=(
            "Two DGX H100 nodes joined by InfiniBand NDR (8 rails) through one fabric, serving "
            "Llama-3.1-405B in BF16 with TP=8 inside each node and PP=2 across the nodes: a model "
            "that fits on 16 H100 but not on 8."
        ),
        template="dgx-h100",
        nodes=2,
        model="llama-3.1-405b",
        layout=Layout(tp=8, pp=2, micro_batches=2),
    ),
    Example(
        stem="l40s-8x-llama-70b-fp8",
        title="Llama-3.1-70B FP8 on 8× L40S (PCIe only)",
        description=(
            "One 8× L40S PCIe server serving Llama-3.1-70B with FP8 weights at TP=8: every "
            "AllReduce crosses PCIe switches, host bridges and the socket link, the classic "
            "anti-pattern; compare with TP=2 × PP=4 or DP replicas."
        ),
        template="l40s-8x-pcie",
        nodes=1,
        model="llama-3.1-70b",
        layout=Layout(tp=8),
        serving=ServingConfig(weight_dtype=DType.FP8),
    ),
    Example(
        stem="h100-pcie-bridge-llama-70b",
        title="Llama-3.1-70B on 8× H100 PCIe with NVLink bridge pairs",
        description=(
            "Eight H100 PCIe cards, bridged in pairs. TP=2 keeps each tensor-parallel group on "
            "one NVLink bridge; PP=4 spreads the BF16 weights over the four pairs."
        ),
        template="h100-pcie-8x-bridge",
        nodes=1,
        model="llama-3.1-70b",
        layout=Layout(tp=2, pp=4, micro_batches=4),
    ),
    Example(
        stem="gb200-nvl72-deepseek-v3",
        title="DeepSeek-V3 on one GB200 NVL72 rack",
        description=(
            "DeepSeek-V3 (block-FP8 checkpoint) on a GB200 NVL72 rack: 72 GPUs in one NVLink "
            "domain: nine replicas of TP=8, each replica's 256 routed experts spread over its "
            "8 GPUs (EP=8, 32 experts per GPU). 256 experts do not split evenly over 72 GPUs, "
            "so EP=72 is not offered."
        ),
        template="gb200-nvl72",
        nodes=1,
        model="deepseek-v3",
        layout=Layout(tp=8, dp=9, ep=8),
    ),
    Example(
        stem="dgx-h100-llama-70b-multiturn-chat",
        title="Multi-turn chat: Llama-3.1-70B on one DGX H100 with a host-DRAM KV tier",
        description=(
            "A chat service whose every request shares a 4,000-token system prompt and resends its "
            "conversation (12 turns, the history growing 1,800 tokens a turn, 60 s between turns). With "
            "prefix caching and 1 TiB of the node's 2 TB host memory as a KV tier, most of each "
            "16,000-token prompt is loaded instead of prefilled, and the best layout for throughput "
            "becomes TP4xPP2; with caching off it is TP2xPP4, with caching in HBM only TP1xPP8 "
            "(`layout-studio sweep dgx-h100-llama-70b-multiturn-chat` says why, `plan ... --explain` "
            "shows the hits; docs/cli.md)."
        ),
        template="dgx-h100",
        nodes=1,
        model="llama-3.1-70b",
        layout=Layout(tp=4, pp=2, micro_batches=2),
        workload=Workload(isl=16000, osl=500, batch="auto", reuse=Reuse(
            system_prompt_tokens=4000, turns=12, history_tokens_per_turn=1800, think_time_s=60.0)),
        serving=ServingConfig(kv_tiers=KVTiers(host_gib=1024.0)),
    ),
)


def build_example(example: Example, catalog: Catalog) -> Project:
    """The project of one example, built from the catalogue."""
    template = catalog.node(example.template)
    cluster = build_cluster(
        template, example.nodes, catalog.gpu(template.gpu_type), catalog.links, name=example.title
    )
    preset = catalog.model(example.model)
    return Project(
        name=example.title,
        description=example.description,
        cluster=cluster,
        model=preset.architecture,
        model_ref=preset.id,
        workload=example.workload,
        serving=example.serving,
        layout=example.layout,
    )


def main(argv: list[str] | None = None) -> int:
    """Write every example project; print one line per file."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=EXAMPLES_DIR, help="output folder")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    catalog = load_catalog()
    for example in EXAMPLES:
        project = build_example(example, catalog)
        path = save_project(project, args.out / f"{example.stem}.json", keep_backup=False)
        print(f"{path}: {project.cluster.num_gpus} GPUs, {project.model.name}, {project.layout.label}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
