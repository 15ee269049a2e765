# Layout Studio export for TensorRT-LLM 1.4.0rc0 (PyTorch backend)
# Project: Llama-3.1-70B on 8× H100 PCIe with NVLink bridge pairs
# Model: Llama-3.1-70B -> meta-llama/Llama-3.1-70B
# Cluster: Llama-3.1-70B on 8× H100 PCIe with NVLink bridge pairs (8 GPUs on 1 node)
# Layout: TP2×PP4 = 8 GPUs; layers per stage 20,20,20,20; micro-batches 4
# Fits: yes
# Workload: 2048 input + 512 output tokens; batch 64 per replica
# Per-GPU memory (busiest GPU rank0): weights 30.0 GiB, KV cache 39.0 GiB, activations 2.0 GiB, overhead 1.0 GiB; total 72.0 GiB of 80.0 GiB (72.0 GiB usable)
# Engine memory: kv_cache_config.free_gpu_memory_fraction 0.829 x 47.0 GiB (memory left after weights, activations and overhead, busiest GPU rank0) = 39.0 GiB per GPU for the KV cache
# KV cache: 400,000 tokens per replica; 156 sequences of 2560 tokens
# TTFT 350.0 ms; TPOT 24.50 ms; request 12,900.0 ms
# Throughput: 2,612.2 output tokens/s (326.5 per GPU, 40.8 per user)
# Cost: $20.00/h; $2.127 per million output tokens
# Assumptions:
#   - Decode is memory-bound.
# Warnings:
#   - [warning] TP_CROSSES_NODE: TP group spans nodes. Fix: Keep TP inside a node.
# What TensorRT-LLM 1.4.0rc0 runs differently from the plan:
#   - max_num_tokens 2111 (one prompt of 2048 tokens next to a decode token of every other sequence) is below max_seq_len 131072: enable_chunked_prefill is on, so longer prompts are prefilled in chunks instead of refused.

# === One command ===
# on node 0: 8× H100 PCIe with NVLink bridge pairs (8 GPUs)
trtllm-serve meta-llama/Llama-3.1-70B \
    --config trtllm-serve.yaml \
    --host 0.0.0.0
