# Layout Studio export for SGLang 0.5.23
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
python -m sglang.launch_server \
    --model-path meta-llama/Llama-3.1-70B \
    --tp-size 2 \
    --pp-size 4 \
    --dp-size 1 \
    --mem-fraction-static 0.862 \
    --context-length 131072 \
    --kv-cache-dtype auto \
    --chunked-prefill-size 2111 \
    --cuda-graph-max-bs-decode 256 \
    --max-running-requests 64 \
    --host 0.0.0.0
