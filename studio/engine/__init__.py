"""Pure numpy cost engine. Entry points: :func:`evaluate` (one layout) and :func:`sweep`."""

from studio.engine import topology
from studio.engine.constants import Constants, default_constants
from studio.engine.evaluate import evaluate

__all__ = ["Constants", "default_constants", "evaluate", "topology"]
