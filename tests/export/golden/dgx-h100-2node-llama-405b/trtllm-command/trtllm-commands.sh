# Layout Studio export for TensorRT-LLM 1.4.0rc0 (PyTorch backend)
# Project: Llama-3.1-405B on 2× DGX H100
# Model: Llama-3.1-405B-Instruct -> meta-llama/Llama-3.1-405B-Instruct
# Cluster: Llama-3.1-405B on 2× DGX H100 (16 GPUs on 2 nodes)
# Layout: TP8×PP2 = 16 GPUs; layers per stage 63,63; micro-batches 2
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
#   - Node addresses: replace <HOST_0>..<HOST_1> with the host names or IPs of the nodes (listed below), or export again with --hosts.

# === MPI launch ===
# on any machine
# writes trtllm-serve.yaml (run it in the folder you launch from)
cat > trtllm-serve.yaml <<'TRTLLM_YAML_END'
tensor_parallel_size: 8
pipeline_parallel_size: 2
max_batch_size: 64
max_num_tokens: 2111
max_seq_len: 131072
enable_chunked_prefill: true
kv_cache_config:
  free_gpu_memory_fraction: 0.829
  dtype: auto
TRTLLM_YAML_END
# on node 0: DGX/HGX H100 (8× H100 SXM) #0, host <HOST_0> (8 GPUs)
# starts the ranks on every node of this server over MPI (ssh between the nodes)
mpirun -H '<HOST_0>:8,<HOST_1>:8' -np 16 --allow-run-as-root \
    trtllm-llmapi-launch trtllm-serve meta-llama/Llama-3.1-405B-Instruct \
    --config trtllm-serve.yaml \
    --host 0.0.0.0

# === Slurm launch ===
# on any machine
# writes trtllm-serve.yaml (run it in the folder you launch from)
cat > trtllm-serve.yaml <<'TRTLLM_YAML_END'
tensor_parallel_size: 8
pipeline_parallel_size: 2
max_batch_size: 64
max_num_tokens: 2111
max_seq_len: 131072
enable_chunked_prefill: true
kv_cache_config:
  free_gpu_memory_fraction: 0.829
  dtype: auto
TRTLLM_YAML_END
# on node 0: DGX/HGX H100 (8× H100 SXM) #0, host <HOST_0> (8 GPUs)
# inside a Slurm allocation holding these nodes
srun -N 2 --ntasks-per-node 8 --mpi=pmix -w '<HOST_0>,<HOST_1>' \
    trtllm-llmapi-launch trtllm-serve meta-llama/Llama-3.1-405B-Instruct \
    --config trtllm-serve.yaml \
    --host 0.0.0.0
