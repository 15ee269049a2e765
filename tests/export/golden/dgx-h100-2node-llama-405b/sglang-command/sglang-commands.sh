# Layout Studio export for SGLang 0.5.23
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
# What SGLang 0.5.23 runs differently from the plan:
#   - Addresses are the node names of the drawing; pass hosts (--hosts) with the real host names or IPs of the nodes.

# === One command per node (the same server on every node) ===
# on node 0: DGX/HGX H100 (8× H100 SXM) #0 (8 GPUs)
python -m sglang.launch_server \
    --model-path meta-llama/Llama-3.1-405B-Instruct \
    --tp-size 8 \
    --pp-size 2 \
    --dp-size 1 \
    --mem-fraction-static 0.845 \
    --context-length 131072 \
    --kv-cache-dtype bf16 \
    --max-running-requests 204 \
    --dist-init-addr 'DGX/HGX H100 (8× H100 SXM) #0:20000' \
    --nnodes 2 \
    --node-rank 0
# on node 1: DGX/HGX H100 (8× H100 SXM) #1 (8 GPUs)
python -m sglang.launch_server \
    --model-path meta-llama/Llama-3.1-405B-Instruct \
    --tp-size 8 \
    --pp-size 2 \
    --dp-size 1 \
    --mem-fraction-static 0.845 \
    --context-length 131072 \
    --kv-cache-dtype bf16 \
    --max-running-requests 204 \
    --dist-init-addr 'DGX/HGX H100 (8× H100 SXM) #0:20000' \
    --nnodes 2 \
    --node-rank 1
