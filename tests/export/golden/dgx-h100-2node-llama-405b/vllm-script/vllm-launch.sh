#!/usr/bin/env bash
# Layout Studio export for vLLM 0.33.0
# Project: Llama-3.1-405B on 2× DGX H100
# Model: Llama-3.1-405B-Instruct -> meta-llama/Llama-3.1-405B-Instruct
# Cluster: Llama-3.1-405B on 2× DGX H100 (16 GPUs on 2 nodes)
# Layout: TP8×PP2 = 16 GPUs; layers per stage 63,63; micro-batches 2
# Fits: yes - fits: KV cache holds 204 sequences of 2,560 tokens per replica
# Workload: 2048 input + 512 output tokens; batch 204 per replica (auto)
# Per-GPU memory (busiest GPU n1/gpu0): weights 47.3 GiB, KV cache 15.7 GiB, activations 2.4 GiB, overhead 1.7 GiB; total 67.0 GiB of 74.5 GiB (67.1 GiB usable)
# KV cache: 523,073 tokens per replica; 204 sequences of 2560 tokens
# TTFT 601.7 ms; TPOT 59.55 ms; request 31,029.9 ms
# Throughput: 1,220.4 output tokens/s (76.3 per GPU, 16.8 per user)
# Cost: $48.00/h; $10.926 per million output tokens
# Assumptions:
#   - steady-state continuous batching: stages overlap successive micro-batches
#   - TTFT = one new prompt prefilled alone through every stage + one decode round of the running batch
#   - TPOT = one decode round of every sequence: max(Σ stages, M × slowest stage)
#   - decode context averaged at isl + osl/2 = 2,304 tokens
#   - two TP all-reduces per layer; PP hands full hidden states from each TP rank to the next stage
# Warnings:
#   - [warning] BUBBLE_HIGH_INTERACTIVE: pipeline bubble 33% (P=2, M=2) is above 20% for an interactive workload Fix: use ≥ 4 micro-batches, or lower PP in favour of TP within NVLink
# What vLLM 0.33.0 runs differently from the plan:
#   - Addresses are the node names of the drawing; pass hosts (--hosts) with the real host names or IPs of the nodes.
#
# Usage: launch.sh NODE_INDEX [RECIPE]
#   NODE_INDEX: 0..1 (the node this script runs on)
#   RECIPE: mp | ray (default mp)
#   node 0: DGX/HGX H100 (8× H100 SXM) #0 (8 GPUs)
#   node 1: DGX/HGX H100 (8× H100 SXM) #1 (8 GPUs)
set -euo pipefail

NODE_INDEX="${1:?usage: launch.sh NODE_INDEX [RECIPE]}"
RECIPE="${2:-mp}"

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
    --kv-cache-dtype bfloat16 \
    --max-num-seqs 204 \
    --max-num-batched-tokens 2251 \
    --nnodes 2 \
    --node-rank 0 \
    --master-addr 'DGX/HGX H100 (8× H100 SXM) #0' \
    --master-port 29501
        ;;
    1)
vllm serve meta-llama/Llama-3.1-405B-Instruct \
    --tensor-parallel-size 8 \
    --pipeline-parallel-size 2 \
    --data-parallel-size 1 \
    --max-model-len 131072 \
    --gpu-memory-utilization 0.9 \
    --kv-cache-dtype bfloat16 \
    --max-num-seqs 204 \
    --max-num-batched-tokens 2251 \
    --nnodes 2 \
    --node-rank 1 \
    --master-addr 'DGX/HGX H100 (8× H100 SXM) #0' \
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
    --kv-cache-dtype bfloat16 \
    --max-num-seqs 204 \
    --max-num-batched-tokens 2251 \
    --distributed-executor-backend ray
        ;;
    1)
ray start --address 'DGX/HGX H100 (8× H100 SXM) #0:6379'
        ;;
    *) echo "NODE_INDEX must be 0..1, got $1" >&2; exit 2 ;;
    esac
}

case "$RECIPE" in
    mp) recipe_mp "$NODE_INDEX" ;;
    ray) recipe_ray "$NODE_INDEX" ;;
    *) echo "RECIPE must be one of: mp ray; got $RECIPE" >&2; exit 2 ;;
esac
