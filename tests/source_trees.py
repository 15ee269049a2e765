"""Syntax trees of the studio's modules, parsed once per test run.

Several checks scan the source of the headless packages with :mod:`ast` (the import contract in
tests/test_layering.py, the error and flag scans in tests/cli/test_error_flags.py); parsing the
~100 modules took ~0.5 s of CPU each time. Their import statements are collected once as well: the
layering contract and the import-cycle check (tests/test_import_cycles.py) both read them, and each
walked every tree for them (~0.4 s of CPU each).
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path


@functools.cache
def module_tree(path: Path) -> ast.Module:
    """The syntax tree of the Python file at ``path`` (read as UTF-8; not to be modified)."""
    return ast.parse(path.read_text(encoding="utf-8"), str(path))


@functools.cache
def import_nodes(path: Path) -> tuple[ast.Import | ast.ImportFrom, ...]:
    """The ``import`` and ``from … import`` statements of the file at ``path``, in :func:`ast.walk`
    order (not to be modified)."""
    return tuple(node for node in ast.walk(module_tree(path)) if isinstance(node, (ast.Import, ast.ImportFrom)))
