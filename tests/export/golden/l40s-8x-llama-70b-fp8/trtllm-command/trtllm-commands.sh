# Layout Studio export for TensorRT-LLM 1.4.0rc0 (PyTorch backend)
# Project: Llama-3.1-70B FP8 on 8× L40S (PCIe only)
# Model: Llama-3.1-70B -> meta-llama/Llama-3.1-70B
# Cluster: Llama-3.1-70B FP8 on 8× L40S (PCIe only) (8 GPUs on 1 node)
# Layout: TP8×PP1 = 8 GPUs; layers per stage 80; micro-batches 1
# Fits: yes - fits: KV cache holds 295 sequences of 2,560 tokens per replica
# Workload: 2048 input + 512 output tokens; batch 256 per replica (auto)
# Per-GPU memory (busiest GPU n0/gpu0): weights 8.5 GiB, KV cache 25.0 GiB, activations 1.2 GiB, overhead 1.7 GiB; total 36.4 GiB of 44.7 GiB (40.2 GiB usable)
# KV cache: 755,852 tokens per replica; 295 sequences of 2560 tokens
# TTFT 985.9 ms; TPOT 167.07 ms; request 86,359.9 ms
# Throughput: 453.1 output tokens/s (56.6 per GPU, 6.0 per user)
# Cost: $8.00/h; $4.905 per million output tokens
# Assumptions:
#   - steady-state continuous batching: stages overlap successive micro-batches
#   - TTFT = one new prompt prefilled alone through every stage + one decode round of the running batch
#   - TPOT = one decode round of every sequence: max(Σ stages, M × slowest stage)
#   - decode context averaged at isl + osl/2 = 2,304 tokens
#   - two TP all-reduces per layer; PP hands full hidden states from each TP rank to the next stage
# Warnings:
#   - [warning] TP_OVER_SLOW_LINK: TP all-reduce runs over pcie-gen4-xsocket (not NVLink): the slowest hop governs every layer Fix: use TP only across NVLink-joined GPUs; replicate (DP) or pipeline (PP) over PCIe
#   - [warning] TP_GT4_NO_NVSWITCH: TP=8 > 4 on GPUs not all joined by one NVSwitch: all-reduces go through slower hops Fix: keep TP ≤ 4 here, or use an NVSwitch system for TP=8
# What TensorRT-LLM 1.4.0rc0 runs differently from the plan:
#   - TensorRT-LLM takes the weight format from the checkpoint: point MODEL at a fp8 checkpoint (e.g. quantised with NVIDIA ModelOpt).

# === One command ===
# on any machine
# writes trtllm-serve.yaml (run it in the folder you launch from)
cat > trtllm-serve.yaml <<'TRTLLM_YAML_END'
tensor_parallel_size: 8
pipeline_parallel_size: 1
max_batch_size: 256
max_num_tokens: 2303
max_seq_len: 131072
kv_cache_config:
  free_gpu_memory_fraction: 0.865
  dtype: bfloat16
TRTLLM_YAML_END
# on node 0: 8× L40S PCIe server (8 GPUs)
trtllm-serve meta-llama/Llama-3.1-70B \
    --config trtllm-serve.yaml
