#!/usr/bin/env bash
# Layout Studio export for SGLang 0.5.23
# Project: Llama-3.1-405B on 2× DGX H100
# Model: Llama-3.1-405B-Instruct -> meta-llama/Llama-3.1-405B-Instruct
# Cluster: Llama-3.1-405B on 2× DGX H100 (16 GPUs on 2 nodes)
# Layout: TP8×PP2 = 16 GPUs; layers per stage 63,63; micro-batches 2
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
# What SGLang 0.5.23 runs differently from the plan:
#   - Node addresses: set HOST_0..HOST_1 at the top of the script (or in the environment); it refuses to start while one is unset. Or export again with the host names given.
#
# Usage: launch.sh NODE_INDEX [RECIPE]
#   NODE_INDEX: 0..1 (the node this script runs on)
#   RECIPE: native (default native)
#   node 0 (8 GPUs): DGX/HGX H100 (8× H100 SXM) #0, address $HOST_0
#   node 1 (8 GPUs): DGX/HGX H100 (8× H100 SXM) #1, address $HOST_1
set -euo pipefail

NODE_INDEX="${1:?usage: launch.sh NODE_INDEX [RECIPE]}"
RECIPE="${2:-native}"

# Addresses of the nodes (host names or IPs): set them here, or in the environment
# (e.g. HOST_0=10.0.0.1 HOST_1=10.0.0.2 ./launch.sh 0).
HOST_0="${HOST_0:-}"  # DGX/HGX H100 (8× H100 SXM) #0, 8 GPUs
HOST_1="${HOST_1:-}"  # DGX/HGX H100 (8× H100 SXM) #1, 8 GPUs
for var in HOST_0 HOST_1; do
    value="${!var}"
    if [ -z "$value" ]; then
        echo "launch.sh: $var is not set; write the address of its node at the top of this script or export $var" >&2
        exit 2
    fi
    if ! [[ "$value" =~ ^[A-Za-z0-9]([A-Za-z0-9.:-]*[A-Za-z0-9])?$ ]] || [[ "$value" == *..* ]]; then
        echo "launch.sh: $var is not a host name or IP address" >&2
        exit 2
    fi
done

# One command per node (the same server on every node)
recipe_native() {
    case "$1" in
    0)
python -m sglang.launch_server \
    --model-path meta-llama/Llama-3.1-405B-Instruct \
    --tp-size 8 \
    --pp-size 2 \
    --dp-size 1 \
    --mem-fraction-static 0.862 \
    --context-length 131072 \
    --kv-cache-dtype auto \
    --chunked-prefill-size 2111 \
    --cuda-graph-max-bs-decode 512 \
    --max-running-requests 64 \
    --host 0.0.0.0 \
    --dist-init-addr "${HOST_0}:20000" \
    --nnodes 2 \
    --node-rank 0
        ;;
    1)
python -m sglang.launch_server \
    --model-path meta-llama/Llama-3.1-405B-Instruct \
    --tp-size 8 \
    --pp-size 2 \
    --dp-size 1 \
    --mem-fraction-static 0.862 \
    --context-length 131072 \
    --kv-cache-dtype auto \
    --chunked-prefill-size 2111 \
    --cuda-graph-max-bs-decode 512 \
    --max-running-requests 64 \
    --host 0.0.0.0 \
    --dist-init-addr "${HOST_0}:20000" \
    --nnodes 2 \
    --node-rank 1
        ;;
    *) echo "NODE_INDEX must be 0..1, got $1" >&2; exit 2 ;;
    esac
}

case "$RECIPE" in
    native) recipe_native "$NODE_INDEX" ;;
    *) echo "RECIPE must be one of: native; got $RECIPE" >&2; exit 2 ;;
esac
