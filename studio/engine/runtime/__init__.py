"""The serving engine as part of the plan: vLLM, TensorRT-LLM and SGLang profiles.

* :mod:`.profile` — the typed profile (scheduler CPU cost, defaults, CUDA graphs, memory rule);
* :mod:`.loader` — reading ``presets/engines/<engine>.json`` and picking the profile of a version;
* :mod:`.setup` — what one plan assumes (:func:`engine_setup`, :func:`assumed_values` for exporters);
* :mod:`.step` — what the engine adds to one scheduler iteration (scheduler time, graph padding).
"""

from studio.engine.runtime.loader import ENGINE_NAMES, ENGINES, Resolved, engine_profiles, resolve
from studio.engine.runtime.setup import EngineSetup, assumed_values, engine_setup

__all__ = ["ENGINES", "ENGINE_NAMES", "EngineSetup", "Resolved", "assumed_values", "engine_profiles",
           "engine_setup", "resolve"]
