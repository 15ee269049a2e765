# Layout Studio export for TensorRT-LLM 1.4.0rc0 (PyTorch backend)
# Project: Llama-3.1-405B on 2× DGX H100
# Model: Llama-3.1-405B-Instruct -> meta-llama/Llama-3.1-405B-Instruct
# Cluster: Llama-3.1-405B on 2× DGX H100 (16 GPUs on 2 nodes)
# Layout: TP8×PP2 = 16 GPUs; layers per stage 63,63; micro-batches 2
# Fits: yes - fits: KV cache holds 204 sequences of 2,560 tokens per replica
# Workload: 2048 input + 512 output tokens; batch 204 per replica (auto)
# Per-GPU memory (busiest GPU n1/gpu0): weights 47.3 GiB, KV cache 15.7 GiB, activations 2.4 GiB, overhead 1.7 GiB; total 67.0 GiB of 74.5 GiB (67.1 GiB usable)
# KV cache: 523,073 tokens per replica; 204 sequences of 2560 tokens
# TTFT 82,504.4 ms; TPOT 89.23 ms; request 128,103.2 ms
# Throughput: 815.3 output tokens/s (51.0 per GPU, 11.2 per user)
# Cost: $48.00/h; $16.353 per million output tokens
# Assumptions:
#   - TTFT = time to prefill a batch of `batch` prompts that arrive together (the last one's first token)
#   - TPOT = one decode step of every sequence in the batch through the whole pipeline
#   - decode context averaged at isl + osl/2 = 2,304 tokens
#   - two TP all-reduces per layer; PP hands full hidden states from each TP rank to the next stage
# Warnings:
#   - [warning] BUBBLE_HIGH_INTERACTIVE: pipeline bubble 33% (P=2, M=2) is above 20% for an interactive workload Fix: use ≥ 4 micro-batches, or lower PP in favour of TP within NVLink
# What TensorRT-LLM 1.4.0rc0 runs differently from the plan:
#   - Addresses are the node names of the drawing; pass hosts (--hosts) with the real host names or IPs of the nodes.

# === MPI launch ===
# on node 0: DGX/HGX H100 (8× H100 SXM) #0 (8 GPUs)
# starts the ranks on every node of this server over MPI (ssh between the nodes)
mpirun -H 'DGX/HGX H100 (8× H100 SXM) #0:8,DGX/HGX H100 (8× H100 SXM) #1:8' -np 16 --allow-run-as-root \
    trtllm-llmapi-launch trtllm-serve meta-llama/Llama-3.1-405B-Instruct \
    --config trtllm-serve.yaml

# === Slurm launch ===
# on node 0: DGX/HGX H100 (8× H100 SXM) #0 (8 GPUs)
# inside a Slurm allocation holding these nodes
srun -N 2 --ntasks-per-node 8 --mpi=pmix -w 'DGX/HGX H100 (8× H100 SXM) #0,DGX/HGX H100 (8× H100 SXM) #1' \
    trtllm-llmapi-launch trtllm-serve meta-llama/Llama-3.1-405B-Instruct \
    --config trtllm-serve.yaml
