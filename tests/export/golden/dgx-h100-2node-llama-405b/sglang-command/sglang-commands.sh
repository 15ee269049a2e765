# Layout Studio export for SGLang 0.5.23
# Project: Llama-3.1-405B on 2× DGX H100
# Model: Llama-3.1-405B-Instruct -> meta-llama/Llama-3.1-405B-Instruct
# Cluster: Llama-3.1-405B on 2× DGX H100 (16 GPUs on 2 nodes)
# Layout: TP8×PP2 = 16 GPUs; layers per stage 63,63; micro-batches 2
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
# What SGLang 0.5.23 runs differently from the plan:
#   - Node addresses: replace <HOST_0>..<HOST_1> with the host names or IPs of the nodes (listed below), or export again with --hosts.

# === One command per node (the same server on every node) ===
# on node 0: DGX/HGX H100 (8× H100 SXM) #0, host <HOST_0> (8 GPUs)
python -m sglang.launch_server \
    --model-path meta-llama/Llama-3.1-405B-Instruct \
    --tp-size 8 \
    --pp-size 2 \
    --dp-size 1 \
    --mem-fraction-static 0.862 \
    --context-length 131072 \
    --kv-cache-dtype auto \
    --max-running-requests 64 \
    --host 0.0.0.0 \
    --dist-init-addr '<HOST_0>:20000' \
    --nnodes 2 \
    --node-rank 0
# on node 1: DGX/HGX H100 (8× H100 SXM) #1, host <HOST_1> (8 GPUs)
python -m sglang.launch_server \
    --model-path meta-llama/Llama-3.1-405B-Instruct \
    --tp-size 8 \
    --pp-size 2 \
    --dp-size 1 \
    --mem-fraction-static 0.862 \
    --context-length 131072 \
    --kv-cache-dtype auto \
    --max-running-requests 64 \
    --host 0.0.0.0 \
    --dist-init-addr '<HOST_0>:20000' \
    --nnodes 2 \
    --node-rank 1
