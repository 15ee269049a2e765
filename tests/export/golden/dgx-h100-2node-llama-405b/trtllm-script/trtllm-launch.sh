#!/usr/bin/env bash
# Layout Studio export for TensorRT-LLM 1.4.0rc0 (PyTorch backend)
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
# What TensorRT-LLM 1.4.0rc0 runs differently from the plan:
#   - max_num_tokens 2111 (one prompt of 2048 tokens next to a decode token of every other sequence) is below max_seq_len 131072: enable_chunked_prefill is on, so longer prompts are prefilled in chunks instead of refused.
#   - Node addresses: set HOST_0..HOST_1 at the top of the script (or in the environment); it refuses to start while one is unset. Or export again with the host names given.
#
# Usage: launch.sh NODE_INDEX [RECIPE]
#   NODE_INDEX: 0..1 (the node this script runs on)
#   RECIPE: mpirun | slurm (default mpirun)
#   node 0 (8 GPUs): DGX/HGX H100 (8× H100 SXM) #0, address $HOST_0
#   node 1 (8 GPUs): DGX/HGX H100 (8× H100 SXM) #1, address $HOST_1
set -euo pipefail

NODE_INDEX="${1:?usage: launch.sh NODE_INDEX [RECIPE]}"
RECIPE="${2:-mpirun}"

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

# MPI launch
recipe_mpirun() {
    case "$1" in
    0)
cat > trtllm-serve.yaml <<'TRTLLM_YAML_END'
tensor_parallel_size: 8
pipeline_parallel_size: 2
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
mpirun -H "${HOST_0}:8,${HOST_1}:8" -np 16 --allow-run-as-root \
    trtllm-llmapi-launch trtllm-serve meta-llama/Llama-3.1-405B-Instruct \
    --config trtllm-serve.yaml \
    --host 0.0.0.0
        ;;
    1)
cat > trtllm-serve.yaml <<'TRTLLM_YAML_END'
tensor_parallel_size: 8
pipeline_parallel_size: 2
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
        ;;
    *) echo "NODE_INDEX must be 0..1, got $1" >&2; exit 2 ;;
    esac
}

# Slurm launch
recipe_slurm() {
    case "$1" in
    0)
cat > trtllm-serve.yaml <<'TRTLLM_YAML_END'
tensor_parallel_size: 8
pipeline_parallel_size: 2
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
srun -N 2 --ntasks-per-node 8 --mpi=pmix \
    trtllm-llmapi-launch trtllm-serve meta-llama/Llama-3.1-405B-Instruct \
    --config trtllm-serve.yaml \
    --host 0.0.0.0
        ;;
    1)
cat > trtllm-serve.yaml <<'TRTLLM_YAML_END'
tensor_parallel_size: 8
pipeline_parallel_size: 2
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
        ;;
    *) echo "NODE_INDEX must be 0..1, got $1" >&2; exit 2 ;;
    esac
}

case "$RECIPE" in
    mpirun) recipe_mpirun "$NODE_INDEX" ;;
    slurm) recipe_slurm "$NODE_INDEX" ;;
    *) echo "RECIPE must be one of: mpirun slurm; got $RECIPE" >&2; exit 2 ;;
esac
