#!/usr/bin/env bash
# Layout Studio export for SGLang 0.5.23
# Project: Llama-3.1-70B FP8 on 8× L40S (PCIe only)
# Model: Llama-3.1-70B -> meta-llama/Llama-3.1-70B
# Cluster: Llama-3.1-70B FP8 on 8× L40S (PCIe only) (8 GPUs on 1 node)
# Layout: TP8×PP1 = 8 GPUs; layers per stage 80; micro-batches 1
# Fits (plan figures)
# Workload: 2048 input + 512 output tokens; batch 64 per replica
# Per-GPU memory (plan figures)
# Engine memory (plan figures)
# KV cache (plan figures)
# TTFT (plan figures)
# Throughput (plan figures)
# Cost (plan figures)
# Assumptions (plan figures)
# Warnings (plan figures)
#
# Usage: launch.sh NODE_INDEX [RECIPE]
#   NODE_INDEX: 0..0 (the node this script runs on)
#   RECIPE: native (default native)
#   node 0 (8 GPUs): 8× L40S PCIe server
set -euo pipefail

NODE_INDEX="${1:?usage: launch.sh NODE_INDEX [RECIPE]}"
RECIPE="${2:-native}"

# One command
recipe_native() {
    case "$1" in
    0)
python -m sglang.launch_server \
    --model-path meta-llama/Llama-3.1-70B \
    --tp-size 8 \
    --pp-size 1 \
    --dp-size 1 \
    --mem-fraction-static 0.862 \
    --context-length 131072 \
    --kv-cache-dtype auto \
    --quantization fp8 \
    --chunked-prefill-size 2111 \
    --cuda-graph-max-bs-decode 160 \
    --max-running-requests 64 \
    --host 0.0.0.0
        ;;
    *) echo "NODE_INDEX must be 0..0, got $1" >&2; exit 2 ;;
    esac
}

case "$RECIPE" in
    native) recipe_native "$NODE_INDEX" ;;
    *) echo "RECIPE must be one of: native; got $RECIPE" >&2; exit 2 ;;
esac
