"""Context parallelism in an export: how each engine splits one long prompt over GPUs."""
