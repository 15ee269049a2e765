"""Pure numpy cost engine. Entry points: :func:`evaluate` (one layout) and :func:`sweep`.

The engine's rooms (see ``docs/architecture.md``): :mod:`studio.engine.step` (one iteration of a
replica), :mod:`studio.engine.fabric` (links and collectives), :mod:`studio.engine.serving`
(serving under load), :mod:`studio.engine.disagg` (disaggregated prefill/decode),
:mod:`studio.engine.search` (sweep, placement, calibration) and :mod:`studio.engine.plan` (one
layout's plan).
"""

from studio.engine.plan.evaluate import evaluate
from studio.engine.search.sweep import SweepResult, sweep
from studio.engine.step.constants import Constants, default_constants

__all__ = ["Constants", "SweepResult", "default_constants", "evaluate", "sweep"]
