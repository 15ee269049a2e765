# Layout Studio export for TensorRT-LLM 1.4.0rc0 (PyTorch backend)
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
# What TensorRT-LLM 1.4.0rc0 runs differently from the plan:
#   - max_num_tokens 2111 (one prompt of 2048 tokens next to a decode token of every other sequence) is below max_seq_len 131072: enable_chunked_prefill is on, so longer prompts are prefilled in chunks instead of refused.

# === One command ===
# on node 0 (8 GPUs): 8× H100 PCIe with NVLink bridge pairs
trtllm-serve meta-llama/Llama-3.1-70B \
    --config trtllm-serve.yaml \
    --host 0.0.0.0
