# Layout Studio export for vLLM 0.33.0
# Project: Llama-3.1-70B on 8× H100 PCIe with NVLink bridge pairs
# Model: Llama-3.1-70B -> meta-llama/Llama-3.1-70B
# Cluster: Llama-3.1-70B on 8× H100 PCIe with NVLink bridge pairs (8 GPUs on 1 node)
# Layout: TP2×PP4 = 8 GPUs; layers per stage 20,20,20,20; micro-batches 4
# Fits: yes - fits: KV cache holds 471 sequences of 2,560 tokens per replica
# Workload: 2048 input + 512 output tokens; batch 256 per replica (auto)
# Per-GPU memory (busiest GPU n0/gpu6): weights 16.9 GiB, KV cache 25.0 GiB, activations 2.4 GiB, overhead 1.7 GiB; total 46.0 GiB of 74.5 GiB (67.1 GiB usable)
# KV cache: 1,207,285 tokens per replica; 471 sequences of 2560 tokens
# TTFT 564.3 ms; TPOT 80.69 ms; request 41,794.9 ms
# Throughput: 1,811.4 output tokens/s (226.4 per GPU, 12.4 per user)
# Cost: $19.20/h; $2.944 per million output tokens
# Assumptions:
#   - steady-state continuous batching: stages overlap successive micro-batches
#   - TTFT = one new prompt prefilled alone through every stage + one decode round of the running batch
#   - TPOT = one decode round of every sequence: max(Σ stages, M × slowest stage)
#   - decode context averaged at isl + osl/2 = 2,304 tokens
#   - two TP all-reduces per layer; PP hands full hidden states from each TP rank to the next stage
# Warnings:
#   - [warning] BUBBLE_HIGH_INTERACTIVE: pipeline bubble 43% (P=4, M=4) is above 20% for an interactive workload Fix: use ≥ 13 micro-batches, or lower PP in favour of TP within NVLink

# === One command ===
# on node 0: 8× H100 PCIe with NVLink bridge pairs (8 GPUs)
vllm serve meta-llama/Llama-3.1-70B \
    --config vllm-serve.yaml
