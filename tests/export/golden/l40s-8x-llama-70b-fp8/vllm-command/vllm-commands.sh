# Layout Studio export for vLLM 0.33.0
# Project: Llama-3.1-70B FP8 on 8× L40S (PCIe only)
# Model: Llama-3.1-70B -> meta-llama/Llama-3.1-70B
# Cluster: Llama-3.1-70B FP8 on 8× L40S (PCIe only) (8 GPUs on 1 node)
# Layout: TP8×PP1 = 8 GPUs; layers per stage 80; micro-batches 1
# Fits: yes
# Workload: 2048 input + 512 output tokens; batch 64 per replica
# Per-GPU memory (busiest GPU rank0): weights 30.0 GiB, KV cache 39.0 GiB, activations 2.0 GiB, overhead 1.0 GiB; total 72.0 GiB of 80.0 GiB (72.0 GiB usable)
# Engine memory: gpu-memory-utilization 0.9 x 80.0 GiB (the plan's device memory, busiest GPU rank0) = 72.0 GiB per GPU for weights, activations and KV cache
# KV cache: 400,000 tokens per replica; 156 sequences of 2560 tokens
# TTFT 350.0 ms; TPOT 24.50 ms; request 12,900.0 ms
# Throughput: 2,612.2 output tokens/s (326.5 per GPU, 40.8 per user)
# Cost: $20.00/h; $2.127 per million output tokens
# Assumptions:
#   - Decode is memory-bound.
# Warnings:
#   - [warning] TP_CROSSES_NODE: TP group spans nodes. Fix: Keep TP inside a node.

# === One command ===
# on node 0: 8× L40S PCIe server (8 GPUs)
vllm serve meta-llama/Llama-3.1-70B \
    --tensor-parallel-size 8 \
    --pipeline-parallel-size 1 \
    --data-parallel-size 1 \
    --max-model-len 131072 \
    --gpu-memory-utilization 0.9 \
    --kv-cache-dtype auto \
    --quantization fp8 \
    --max-num-seqs 64 \
    --max-num-batched-tokens 2111
