"""Side panels: model & workload, layout, live metrics, warnings."""
