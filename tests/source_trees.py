"""Syntax trees of the studio's modules, parsed once per test run.

Several checks scan the source of the headless packages with :mod:`ast` (the import contract in
tests/test_layering.py, the error and flag scans in tests/cli/test_error_flags.py); parsing the
~100 modules took ~0.5 s of CPU each time. Their import statements are collected once as well: the
layering contract and the import-cycle check (tests/test_import_cycles.py) both read them, and each
walked every tree for them (~0.4 s of CPU each).
"""

from __future__ import annotations

import ast
import collections
import functools
from pathlib import Path


@functools.cache
def module_tree(path: Path) -> ast.Module:
    """The syntax tree of the Python file at ``path`` (read as UTF-8; not to be modified)."""
    return ast.parse(path.read_text(encoding="utf-8"), str(path))


#: What holds statements: an import is a statement, so it sits in a statement list of the module,
#: a statement (a body, an ``else``, a ``finally``), an ``except`` handler or a ``match`` case.
_HOLDERS = (ast.stmt, ast.excepthandler, ast.match_case)


@functools.cache
def import_nodes(path: Path) -> tuple[ast.Import | ast.ImportFrom, ...]:
    """The ``import`` and ``from … import`` statements of the file at ``path``, in :func:`ast.walk`
    order (not to be modified).

    Only statements are visited, breadth first in the order of their fields as :func:`ast.walk`
    does; the expressions below them, ~90 % of a tree's nodes and of a full walk's ~0.3 s of CPU
    over the studio, cannot hold an import."""
    found: list[ast.Import | ast.ImportFrom] = []
    todo: collections.deque[ast.AST] = collections.deque([module_tree(path)])
    while todo:
        node = todo.popleft()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        for _, value in ast.iter_fields(node):
            if isinstance(value, list):
                todo.extend(item for item in value if isinstance(item, _HOLDERS))
    return tuple(found)
