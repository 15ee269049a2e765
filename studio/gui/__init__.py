"""The desktop studio (PySide6): canvas, panels, timeline, document with undo.

This is the only package that imports Qt. Entry points: :func:`studio.gui.window.app.run` and
:func:`studio.gui.window.snapshot.render_main_window`.
"""

from studio.gui.toolkit.qtfix import protect_none_refcount

protect_none_refcount()
