"""Energy per output token of the power model (presets/power.json) against public measurements.
Run ``PYTHONPATH=. python benchmarks/energy_calibration.py`` from the checkout; the table goes into
docs/calibration.md ("Energy per token").

Each measurement is a server kept full at a fixed batch (``max_num_seqs``) with GPU energy read from
NVML over the steady state (ML.ENERGY Benchmark v3, vLLM 0.11.1); the model runs the same closed
loop (:func:`studio.engine.fleet.power.power_at_batch`). ``memory_activity`` was fitted on the first
row; the others are held out.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from studio.cli import build_parser  # noqa: E402
from studio.commands.options.project_args import project_from_args  # noqa: E402
from studio.engine.fleet.power import power_at_batch  # noqa: E402
from studio.engine.fleet.replica import replica_setup, replica_shape  # noqa: E402
from studio.io.fleet_presets import power_params  # noqa: E402

QWEN3_32B = str(ROOT / "tests" / "data" / "hf" / "Qwen--Qwen3-32B-FP8.config.json")
LONGITUDINAL = "ml-energy/blog docs/posts/llm-energy-over-time.md (2026-02-09)"
V3 = "ml-energy/blog docs/posts/ml-energy-leaderboard-v3.0.md (2026-01-13), Qwen 3 32B case study"

#: (what, flags, batch, measured J per output token, source, role)
POINTS = [
    ("Llama-3.1-8B BF16, 1x H100 SXM, batch 64, chat",
     ["--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--isl", "634", "--osl", "717"], 64, 0.12, LONGITUDINAL,
     "fitted"),
    ("Qwen3-32B BF16, 1x B200, batch 128, text conversation",
     ["--gpu", "b200", "--model-config", QWEN3_32B, "--weight-dtype", "bf16", "--isl", "634", "--osl", "627"], 128,
     0.209, V3, "held out"),
    ("Qwen3-32B BF16, 1x B200, batch 512 (max), text conversation",
     ["--gpu", "b200", "--model-config", QWEN3_32B, "--weight-dtype", "bf16", "--isl", "634", "--osl", "627"], 512,
     0.151, V3, "held out"),
]


def main() -> None:
    params, _ = power_params()
    print("| measurement | batch | measured J/token | model J/token | error | model W/GPU | role | source |")
    print("|---|---|---|---|---|---|---|---|")
    for what, flags, batch, measured, source, role in POINTS:
        argv = ["simulate", *flags, "--gpus-per-node", "1", "--tp", "1", "--max-batch", str(batch)]
        project = project_from_args(build_parser(["studio.commands.simulate"]).parse_args(argv))
        s, shape = replica_setup(project), replica_shape(project)
        pt = power_at_batch(s, shape, params, batch)
        err = pt.j_per_output_token / measured - 1.0
        note = f" (KV cache holds {s.running_cap})" if s.running_cap < batch else ""
        print(f"| {what} | {batch}{note} | {measured:.3f} | {pt.j_per_output_token:.3f} | {err * 100:+.1f} % | "
              f"{pt.watts / shape.gpus:.0f} | {role} | {source} |")


if __name__ == "__main__":
    main()
