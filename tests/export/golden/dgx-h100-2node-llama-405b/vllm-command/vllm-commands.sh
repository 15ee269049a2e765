# Layout Studio export for vLLM 0.33.0
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
# What vLLM 0.33.0 runs differently from the plan:
#   - Node addresses: replace <HOST_0>..<HOST_1> with the host names or IPs of the nodes (listed below), or export again with the host names given.

# === Multiprocessing backend: one command per node ===
# on node 0 (8 GPUs): DGX/HGX H100 (8× H100 SXM) #0, host <HOST_0>
vllm serve meta-llama/Llama-3.1-405B-Instruct \
    --tensor-parallel-size 8 \
    --pipeline-parallel-size 2 \
    --data-parallel-size 1 \
    --max-model-len 131072 \
    --gpu-memory-utilization 0.9 \
    --kv-cache-dtype auto \
    --max-num-seqs 64 \
    --max-num-batched-tokens 2111 \
    --max-cudagraph-capture-size 512 \
    --nnodes 2 \
    --node-rank 0 \
    --master-addr '<HOST_0>' \
    --master-port 29501
# on node 1 (8 GPUs): DGX/HGX H100 (8× H100 SXM) #1, host <HOST_1>
vllm serve meta-llama/Llama-3.1-405B-Instruct \
    --tensor-parallel-size 8 \
    --pipeline-parallel-size 2 \
    --data-parallel-size 1 \
    --max-model-len 131072 \
    --gpu-memory-utilization 0.9 \
    --kv-cache-dtype auto \
    --max-num-seqs 64 \
    --max-num-batched-tokens 2111 \
    --max-cudagraph-capture-size 512 \
    --nnodes 2 \
    --node-rank 1 \
    --master-addr '<HOST_0>' \
    --master-port 29501 \
    --headless

# === Ray backend: join the Ray cluster, then one serve command ===
# on node 0 (8 GPUs): DGX/HGX H100 (8× H100 SXM) #0, host <HOST_0>
ray start --head --port 6379
# on node 1 (8 GPUs): DGX/HGX H100 (8× H100 SXM) #1, host <HOST_1>
ray start --address '<HOST_0>:6379'
# on node 0 (8 GPUs): DGX/HGX H100 (8× H100 SXM) #0, host <HOST_0>
# after every node of this group has joined the Ray cluster
vllm serve meta-llama/Llama-3.1-405B-Instruct \
    --tensor-parallel-size 8 \
    --pipeline-parallel-size 2 \
    --data-parallel-size 1 \
    --max-model-len 131072 \
    --gpu-memory-utilization 0.9 \
    --kv-cache-dtype auto \
    --max-num-seqs 64 \
    --max-num-batched-tokens 2111 \
    --max-cudagraph-capture-size 512 \
    --distributed-executor-backend ray
