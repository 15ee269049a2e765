# Layout Studio export for vLLM 0.33.0
# Project: Llama-3.1-70B on 8× H100 PCIe with NVLink bridge pairs
# Model: Llama-3.1-70B -> meta-llama/Llama-3.1-70B
# Cluster: Llama-3.1-70B on 8× H100 PCIe with NVLink bridge pairs (8 GPUs on 1 node)
# Layout: TP2×PP4 = 8 GPUs; layers per stage 20,20,20,20; micro-batches 4
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
# on node 0 (8 GPUs): 8× H100 PCIe with NVLink bridge pairs
vllm serve meta-llama/Llama-3.1-70B \
    --tensor-parallel-size 2 \
    --pipeline-parallel-size 4 \
    --data-parallel-size 1 \
    --max-model-len 131072 \
    --gpu-memory-utilization 0.9 \
    --kv-cache-dtype auto \
    --max-num-seqs 64 \
    --max-num-batched-tokens 2111 \
    --max-cudagraph-capture-size 512
