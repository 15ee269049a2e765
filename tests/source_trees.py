"""Syntax trees of the studio's modules, parsed once per test run.

Several checks scan the source of the headless packages with :mod:`ast` (the import contract in
tests/test_layering.py, the error and flag scans in tests/cli/test_error_flags.py); parsing the
~100 modules took ~0.5 s of CPU each time.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path


@functools.cache
def module_tree(path: Path) -> ast.Module:
    """The syntax tree of the Python file at ``path`` (read as UTF-8; not to be modified)."""
    return ast.parse(path.read_text(encoding="utf-8"), str(path))
