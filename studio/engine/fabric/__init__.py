"""Fabric: the cluster's links and routes, and the time of collectives over them."""
