"""Disaggregated prefill/decode: two pools, the KV transfer between them, their search and views."""
