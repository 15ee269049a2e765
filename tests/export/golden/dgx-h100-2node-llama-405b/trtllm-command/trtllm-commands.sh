# Layout Studio export for TensorRT-LLM 1.4.0rc0 (PyTorch backend)
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
# What TensorRT-LLM 1.4.0rc0 runs differently from the plan:
#   - Addresses are the node names of the drawing; pass hosts (--hosts) with the real host names or IPs of the nodes.

# === MPI launch ===
# on any machine
# writes trtllm-serve.yaml (run it in the folder you launch from)
cat > trtllm-serve.yaml <<'TRTLLM_YAML_END'
tensor_parallel_size: 8
pipeline_parallel_size: 2
max_batch_size: 204
max_num_tokens: 2251
max_seq_len: 131072
kv_cache_config:
  free_gpu_memory_fraction: 0.678
  dtype: bfloat16
TRTLLM_YAML_END
# on node 0: DGX/HGX H100 (8× H100 SXM) #0 (8 GPUs)
# starts the ranks on every node of this server over MPI (ssh between the nodes)
mpirun -H 'DGX/HGX H100 (8× H100 SXM) #0:8,DGX/HGX H100 (8× H100 SXM) #1:8' -np 16 --allow-run-as-root \
    trtllm-llmapi-launch trtllm-serve meta-llama/Llama-3.1-405B-Instruct \
    --config trtllm-serve.yaml

# === Slurm launch ===
# on any machine
# writes trtllm-serve.yaml (run it in the folder you launch from)
cat > trtllm-serve.yaml <<'TRTLLM_YAML_END'
tensor_parallel_size: 8
pipeline_parallel_size: 2
max_batch_size: 204
max_num_tokens: 2251
max_seq_len: 131072
kv_cache_config:
  free_gpu_memory_fraction: 0.678
  dtype: bfloat16
TRTLLM_YAML_END
# on node 0: DGX/HGX H100 (8× H100 SXM) #0 (8 GPUs)
# inside a Slurm allocation holding these nodes
srun -N 2 --ntasks-per-node 8 --mpi=pmix -w 'DGX/HGX H100 (8× H100 SXM) #0,DGX/HGX H100 (8× H100 SXM) #1' \
    trtllm-llmapi-launch trtllm-serve meta-llama/Llama-3.1-405B-Instruct \
    --config trtllm-serve.yaml
