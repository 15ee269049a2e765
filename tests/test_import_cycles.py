"""No import circles anywhere in ``studio``: the graph of every ``import`` and ``from … import``
(at module level, inside functions and under ``TYPE_CHECKING`` alike) between the studio's own
modules has no cycle.

A circle hidden by a function-local import still ties the two modules into one: neither can be
read, tested or moved without the other. ``from package import name`` counts as an edge to the
submodule ``package.name`` when there is one, otherwise to the package itself.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.source_trees import import_nodes

ROOT = Path(__file__).resolve().parents[1]


def module_names(studio: Path) -> dict[str, Path]:
    """Dotted name → file of every module under ``studio`` (a package is its ``__init__``)."""
    names = {}
    for path in sorted(studio.rglob("*.py")):
        parts = path.relative_to(studio.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names[".".join(parts)] = path
    return names


def import_graph(studio: Path) -> dict[str, set[str]]:
    """Module → the studio modules it imports (relative imports resolved)."""
    names = module_names(studio)
    graph: dict[str, set[str]] = {}
    for name, path in names.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: set[str] = set()
        for node in import_nodes(path):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    module = ".".join(base + ([node.module] if node.module else []))
                else:
                    module = node.module or ""
                for alias in node.names:
                    sub = f"{module}.{alias.name}"
                    targets.add(sub if sub in names else module)
        graph[name] = {t for t in targets if t in names and t != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def test_no_import_circles_in_studio():
    assert cycles(import_graph(ROOT / "studio")) == []


def test_cycle_check_sees_a_circle_hidden_in_a_function(tmp_path):
    pkg = tmp_path / "studio" / "engine"
    pkg.mkdir(parents=True)
    (tmp_path / "studio" / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "a.py").write_text("from studio.engine import b\n", encoding="utf-8")
    (pkg / "b.py").write_text("def f():\n    from .c import g\n", encoding="utf-8")
    (pkg / "c.py").write_text("def g():\n    import studio.engine.a\n", encoding="utf-8")
    (pkg / "d.py").write_text("from studio.engine.a import x\n", encoding="utf-8")
    assert cycles(import_graph(tmp_path / "studio")) == [
        ["studio.engine.a", "studio.engine.b", "studio.engine.c"]
    ]
