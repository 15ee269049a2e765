"""What the Explorer computes without Qt: sweeps, their analysis, engine comparison, recommendation."""
