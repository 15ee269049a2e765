"""Headless application layer between the domain (``studio.core``), the engine and the views.

Qt-free: the window and the CLI call the same functions here, and tests run them without a
display. Modules: :mod:`~studio.service.project_edits.hardware_edits` (a cluster edit that keeps a live plan),
:mod:`~studio.service.project_edits.link_compat` (which link kinds can physically join two endpoints).
"""
