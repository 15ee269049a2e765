"""Disaggregated prefill/decode exports: the workers, router and KV transfer per engine."""
