# Layout Studio export for SGLang 0.5.23
# Project: Llama-3.1-70B on 8× H100 PCIe with NVLink bridge pairs
# Model: Llama-3.1-70B -> meta-llama/Llama-3.1-70B
# Cluster: Llama-3.1-70B on 8× H100 PCIe with NVLink bridge pairs (8 GPUs on 1 node)
# Layout: TP2×PP4 = 8 GPUs; layers per stage 20,20,20,20; micro-batches 4
# Fits: yes
# Workload: 2048 input + 512 output tokens; batch 64 per replica
# Per-GPU memory (busiest GPU rank0): weights 30.0 GiB, KV cache 39.0 GiB, activations 2.0 GiB, overhead 1.0 GiB; total 72.0 GiB of 80.0 GiB (72.0 GiB usable)
# Engine memory: mem-fraction-static 0.862 x 80.0 GiB (the plan's device memory, busiest GPU rank0) = 69.0 GiB per GPU for weights and the KV-cache pool
# KV cache: 400,000 tokens per replica; 156 sequences of 2560 tokens
# TTFT 350.0 ms; TPOT 24.50 ms; request 12,900.0 ms
# Throughput: 2,612.2 output tokens/s (326.5 per GPU, 40.8 per user)
# Cost: $20.00/h; $2.127 per million output tokens
# Assumptions:
#   - Decode is memory-bound.
# Warnings:
#   - [warning] TP_CROSSES_NODE: TP group spans nodes. Fix: Keep TP inside a node.

# === One command ===
# on node 0: 8× H100 PCIe with NVLink bridge pairs (8 GPUs)
python -m sglang.launch_server \
    --model-path meta-llama/Llama-3.1-70B \
    --config sglang-serve.yaml \
    --host 0.0.0.0
