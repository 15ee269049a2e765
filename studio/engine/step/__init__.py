"""Step model: the cost of one iteration of a replica, from shapes, kernels and collectives."""
