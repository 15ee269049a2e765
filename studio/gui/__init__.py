"""The desktop studio (PySide6): canvas, panels, timeline, document with undo.

This is the only package that imports Qt. Entry points: :func:`studio.gui.app.run` and
:func:`studio.gui.snapshot.render_main_window`.
"""

from studio.gui.qtfix import protect_none_refcount

protect_none_refcount()
