"""Layout Studio: plan multi-GPU LLM inference layouts.

The package is layered; dependencies point one way::

    studio.gui  ->  studio.io  ->  studio.engine  ->  studio.core

Only :mod:`studio.gui` imports Qt (PySide6 / pyqtgraph).
"""

__version__ = "0.1.0"
