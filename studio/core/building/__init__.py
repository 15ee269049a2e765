"""Building hardware from templates: expand one node template into its GPUs, switches and links
(:mod:`.templates`), and join N identical nodes into a whole cluster through a fabric
(:mod:`.builders`). Pure functions over the frozen values of :mod:`studio.core.hardware`."""
