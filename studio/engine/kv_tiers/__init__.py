"""Prefix caching and the KV-cache tiers beyond HBM (host DRAM, local NVMe)."""
