"""What the engine features of a plan (``serving.features``) do to its figures.

:func:`~studio.engine.features.effects.with_features` turns a project's features into what the step
model costs differently: the MoE routing skew and EPLB (:mod:`.routing`: the most loaded EP rank's
token-expert pairs and the redundant experts' weights), the all-to-all backend and dual-batch
overlap (:mod:`.alltoall`, :mod:`.overlap`), the data-parallel load-balancing mode (:mod:`.balance`)
and the API servers in front of the engine (:mod:`.frontend`). With every feature off nothing is
changed (the costs come back as the very same object). The public figures are in
``presets/engines/effects.json`` (:mod:`.data`).
"""
