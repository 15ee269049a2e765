# Layout Studio export for TensorRT-LLM 1.4.0rc0 (PyTorch backend)
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
# What TensorRT-LLM 1.4.0rc0 runs differently from the plan:
#   - max_num_tokens 2111 (one prompt of 2048 tokens next to a decode token of every other sequence) is below max_seq_len 131072: enable_chunked_prefill is on, so longer prompts are prefilled in chunks instead of refused.
#   - Node addresses: replace <HOST_0>..<HOST_1> with the host names or IPs of the nodes (listed below), or export again with the host names given.

# === MPI launch ===
# on node 0 (8 GPUs): DGX/HGX H100 (8× H100 SXM) #0, host <HOST_0>
# writes trtllm-serve.yaml on this node (every node of the server reads it)
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
cuda_graph_config:
  max_batch_size: 128
TRTLLM_YAML_END
# on node 1 (8 GPUs): DGX/HGX H100 (8× H100 SXM) #1, host <HOST_1>
# writes trtllm-serve.yaml on this node (every node of the server reads it)
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
cuda_graph_config:
  max_batch_size: 128
TRTLLM_YAML_END
# on node 0 (8 GPUs): DGX/HGX H100 (8× H100 SXM) #0, host <HOST_0>
# starts the ranks on every node of this server over MPI (ssh between the nodes)
mpirun -H '<HOST_0>:8,<HOST_1>:8' -np 16 --allow-run-as-root \
    trtllm-llmapi-launch trtllm-serve meta-llama/Llama-3.1-405B-Instruct \
    --config trtllm-serve.yaml \
    --host 0.0.0.0

# === Slurm launch ===
# on node 0 (8 GPUs): DGX/HGX H100 (8× H100 SXM) #0, host <HOST_0>
# writes trtllm-serve.yaml on this node (every node of the server reads it)
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
cuda_graph_config:
  max_batch_size: 128
TRTLLM_YAML_END
# on node 1 (8 GPUs): DGX/HGX H100 (8× H100 SXM) #1, host <HOST_1>
# writes trtllm-serve.yaml on this node (every node of the server reads it)
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
cuda_graph_config:
  max_batch_size: 128
TRTLLM_YAML_END
# on node 0 (8 GPUs): DGX/HGX H100 (8× H100 SXM) #0, host <HOST_0>
# inside a Slurm allocation of exactly these nodes (give their Slurm names to export to pin them with srun -w)
srun -N 2 --ntasks-per-node 8 --mpi=pmix \
    trtllm-llmapi-launch trtllm-serve meta-llama/Llama-3.1-405B-Instruct \
    --config trtllm-serve.yaml \
    --host 0.0.0.0
