"""Search: layouts swept over a cluster, placement of groups on GPUs, defaults, calibration fits."""
