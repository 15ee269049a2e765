# Layout Studio export for vLLM 0.33.0
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

# === One command ===
# on node 0 (8 GPUs): 8× L40S PCIe server
vllm serve meta-llama/Llama-3.1-70B \
    --tensor-parallel-size 8 \
    --pipeline-parallel-size 1 \
    --data-parallel-size 1 \
    --max-model-len 131072 \
    --gpu-memory-utilization 0.9 \
    --kv-cache-dtype auto \
    --quantization fp8 \
    --max-num-seqs 64 \
    --max-num-batched-tokens 2111 \
    --max-cudagraph-capture-size 512
