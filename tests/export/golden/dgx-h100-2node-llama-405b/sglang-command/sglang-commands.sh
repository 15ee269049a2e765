# Layout Studio export for SGLang 0.5.23
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
# What SGLang 0.5.23 runs differently from the plan:
#   - Node addresses: replace <HOST_0>..<HOST_1> with the host names or IPs of the nodes (listed below), or export again with the host names given.

# === One command per node (the same server on every node) ===
# on node 0 (8 GPUs): DGX/HGX H100 (8× H100 SXM) #0, host <HOST_0>
python -m sglang.launch_server \
    --model-path meta-llama/Llama-3.1-405B-Instruct \
    --tp-size 8 \
    --pp-size 2 \
    --dp-size 1 \
    --mem-fraction-static 0.862 \
    --context-length 131072 \
    --kv-cache-dtype auto \
    --chunked-prefill-size 2111 \
    --cuda-graph-max-bs-decode 512 \
    --max-running-requests 64 \
    --host 0.0.0.0 \
    --dist-init-addr '<HOST_0>:20000' \
    --nnodes 2 \
    --node-rank 0
# on node 1 (8 GPUs): DGX/HGX H100 (8× H100 SXM) #1, host <HOST_1>
python -m sglang.launch_server \
    --model-path meta-llama/Llama-3.1-405B-Instruct \
    --tp-size 8 \
    --pp-size 2 \
    --dp-size 1 \
    --mem-fraction-static 0.862 \
    --context-length 131072 \
    --kv-cache-dtype auto \
    --chunked-prefill-size 2111 \
    --cuda-graph-max-bs-decode 512 \
    --max-running-requests 64 \
    --host 0.0.0.0 \
    --dist-init-addr '<HOST_0>:20000' \
    --nnodes 2 \
    --node-rank 1
