"""Pure numpy cost engine. Entry points: :func:`evaluate` (one layout) and :func:`sweep`."""
