"""Readers of what users bring from outside: Hugging Face configs and checkpoints, topology text, NCCL logs, serving benchmarks, length histograms."""
