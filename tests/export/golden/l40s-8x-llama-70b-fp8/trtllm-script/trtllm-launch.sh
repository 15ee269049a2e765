#!/usr/bin/env bash
# Layout Studio export for TensorRT-LLM 1.4.0rc0 (PyTorch backend)
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
# What TensorRT-LLM 1.4.0rc0 runs differently from the plan:
#   - max_num_tokens 2111 (one prompt of 2048 tokens next to a decode token of every other sequence) is below max_seq_len 131072: enable_chunked_prefill is on, so longer prompts are prefilled in chunks instead of refused.
#   - TensorRT-LLM takes the weight format from the checkpoint: point MODEL at a fp8 checkpoint (e.g. quantised with NVIDIA ModelOpt).
#
# Usage: launch.sh NODE_INDEX [RECIPE]
#   NODE_INDEX: 0..0 (the node this script runs on)
#   RECIPE: mpirun (default mpirun)
#   node 0 (8 GPUs): 8× L40S PCIe server
set -euo pipefail

NODE_INDEX="${1:?usage: launch.sh NODE_INDEX [RECIPE]}"
RECIPE="${2:-mpirun}"

# One command
recipe_mpirun() {
    case "$1" in
    0)
cat > trtllm-serve.yaml <<'TRTLLM_YAML_END'
tensor_parallel_size: 8
pipeline_parallel_size: 1
max_batch_size: 64
max_num_tokens: 2111
max_seq_len: 131072
enable_chunked_prefill: true
kv_cache_config:
  free_gpu_memory_fraction: 0.829
  dtype: auto
cuda_graph_config:
  max_batch_size: 128
TRTLLM_YAML_END
trtllm-serve meta-llama/Llama-3.1-70B \
    --config trtllm-serve.yaml \
    --host 0.0.0.0
        ;;
    *) echo "NODE_INDEX must be 0..0, got $1" >&2; exit 2 ;;
    esac
}

case "$RECIPE" in
    mpirun) recipe_mpirun "$NODE_INDEX" ;;
    *) echo "RECIPE must be one of: mpirun; got $RECIPE" >&2; exit 2 ;;
esac
