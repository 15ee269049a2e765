"""Serving under load: steady state of continuous batching, the request simulation, load curves."""
