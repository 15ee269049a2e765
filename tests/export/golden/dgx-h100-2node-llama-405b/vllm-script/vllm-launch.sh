#!/usr/bin/env bash
# Layout Studio export for vLLM 0.33.0
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
# What vLLM 0.33.0 runs differently from the plan:
#   - Node addresses: set HOST_0..HOST_1 at the top of the script (or in the environment); it refuses to start while one is unset. Or export again with the host names given.
#
# Usage: launch.sh NODE_INDEX [RECIPE]
#   NODE_INDEX: 0..1 (the node this script runs on)
#   RECIPE: mp | ray (default mp)
#   node 0 (8 GPUs): DGX/HGX H100 (8× H100 SXM) #0, address $HOST_0
#   node 1 (8 GPUs): DGX/HGX H100 (8× H100 SXM) #1, address $HOST_1
set -euo pipefail

NODE_INDEX="${1:?usage: launch.sh NODE_INDEX [RECIPE]}"
RECIPE="${2:-mp}"

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

# Multiprocessing backend: one command per node
recipe_mp() {
    case "$1" in
    0)
vllm serve meta-llama/Llama-3.1-405B-Instruct \
    --tensor-parallel-size 8 \
    --pipeline-parallel-size 2 \
    --data-parallel-size 1 \
    --max-model-len 131072 \
    --gpu-memory-utilization 0.9 \
    --kv-cache-dtype auto \
    --max-num-seqs 64 \
    --max-num-batched-tokens 2111 \
    --max-cudagraph-capture-size 512 \
    --nnodes 2 \
    --node-rank 0 \
    --master-addr "${HOST_0}" \
    --master-port 29501
        ;;
    1)
vllm serve meta-llama/Llama-3.1-405B-Instruct \
    --tensor-parallel-size 8 \
    --pipeline-parallel-size 2 \
    --data-parallel-size 1 \
    --max-model-len 131072 \
    --gpu-memory-utilization 0.9 \
    --kv-cache-dtype auto \
    --max-num-seqs 64 \
    --max-num-batched-tokens 2111 \
    --max-cudagraph-capture-size 512 \
    --nnodes 2 \
    --node-rank 1 \
    --master-addr "${HOST_0}" \
    --master-port 29501 \
    --headless
        ;;
    *) echo "NODE_INDEX must be 0..1, got $1" >&2; exit 2 ;;
    esac
}

# Ray backend: join the Ray cluster, then one serve command
recipe_ray() {
    case "$1" in
    0)
ray start --head --port 6379
vllm serve meta-llama/Llama-3.1-405B-Instruct \
    --tensor-parallel-size 8 \
    --pipeline-parallel-size 2 \
    --data-parallel-size 1 \
    --max-model-len 131072 \
    --gpu-memory-utilization 0.9 \
    --kv-cache-dtype auto \
    --max-num-seqs 64 \
    --max-num-batched-tokens 2111 \
    --max-cudagraph-capture-size 512 \
    --distributed-executor-backend ray
        ;;
    1)
ray start --address "${HOST_0}:6379"
        ;;
    *) echo "NODE_INDEX must be 0..1, got $1" >&2; exit 2 ;;
    esac
}

case "$RECIPE" in
    mp) recipe_mp "$NODE_INDEX" ;;
    ray) recipe_ray "$NODE_INDEX" ;;
    *) echo "RECIPE must be one of: mp ray; got $RECIPE" >&2; exit 2 ;;
esac
