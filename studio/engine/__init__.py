"""Pure numpy cost engine. Entry points: :func:`evaluate` (one layout) and :func:`sweep`."""

from studio.engine import topology
from studio.engine.constants import Constants, default_constants
from studio.engine.evaluate import evaluate
from studio.engine.sweep import SweepResult, sweep

__all__ = ["Constants", "SweepResult", "default_constants", "evaluate", "sweep", "topology"]
