"""Layering: the packages depend one way (core → engine → io → service → gui → commands → cli,
cli_parser, terminal), and everything below ``studio.gui`` runs without Qt.

Two checks:

* an import contract read from the source with :mod:`ast` (every ``import`` and ``from … import``,
  also those inside functions and under ``TYPE_CHECKING``): a package imports nothing from the
  packages above it;
* a fresh interpreter in which PySide6, shiboken6 and pyqtgraph cannot be imported (a meta-path
  finder refuses them, as on a machine without Qt) loads every headless module, imports every
  ``studio.service`` module and runs ``plan``, ``sweep`` and ``export``, then runs the
  application layer's tests (``tests/service``) under pytest.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.source_trees import import_nodes

ROOT = Path(__file__).resolve().parents[1]
STUDIO = ROOT / "studio"
QT_MODULES = ("PySide6", "pyqtgraph", "shiboken6")

#: The layers, lowest first: each may import the ones below it and none above. ``gui`` is the
#: window, ``commands`` the command line's commands (``open``/``snapshot``/``report`` start the
#: window, so they sit above it), and the top holds the entry point and its parser.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("core",), ("engine",), ("io",), ("service",), ("gui",), ("commands",), ("cli", "cli_parser", "terminal"),
)

#: What each layer must not import: every layer above it (and, for the top, nothing is above).
FORBIDDEN: dict[str, tuple[str, ...]] = {
    name: tuple(above for higher in LAYERS[i + 1:] for above in higher)
    for i, layer in enumerate(LAYERS) for name in layer
}
#: Layers that run without Qt (the window and the commands that open it import it inside functions).
HEADLESS = ("core", "engine", "io", "service")


def imported_modules(path: Path, root: Path = ROOT) -> list[tuple[int, str]]:
    """``(line, module)`` of every import in the file at ``path`` (relative imports resolved
    against its package under ``root``, the folder holding ``studio``)."""
    package = ".".join(path.relative_to(root).with_suffix("").parts[:-1])
    out: list[tuple[int, str]] = []
    for node in import_nodes(path):
        if isinstance(node, ast.Import):
            out += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            out.append((node.lineno, module))
            out += [(node.lineno, f"{module}.{alias.name}") for alias in node.names]
    return out


def _layer_files(root: Path, layer: str) -> list[Path]:
    """The source files of ``layer``: a package's modules, or the one module ``layer.py``."""
    if (root / layer).is_dir():
        return sorted((root / layer).rglob("*.py"))
    return [root / f"{layer}.py"] if (root / f"{layer}.py").is_file() else []


def contract_breaches(root: Path = STUDIO) -> list[str]:
    """``file:line imports module`` for every import that goes up the layers, and every Qt import
    of a headless layer."""
    breaches = []
    for layer, above in FORBIDDEN.items():
        for path in _layer_files(root, layer):
            for line, module in imported_modules(path, root.parent):
                parts = module.split(".")
                if len(parts) > 1 and parts[0] == "studio" and parts[1] in above:
                    breaches.append(f"{path.relative_to(root.parent)}:{line} imports {module}")
                if layer in HEADLESS and parts[0] in QT_MODULES:
                    breaches.append(f"{path.relative_to(root.parent)}:{line} imports {module} (Qt)")
    return sorted(set(breaches))


def test_every_part_of_studio_sits_in_a_layer():
    """A new top-level package or module of ``studio`` must be given its place in :data:`LAYERS`."""
    parts = {p.stem if p.is_file() else p.name for p in STUDIO.iterdir()
             if (p.is_dir() and (p / "__init__.py").is_file()) or (p.suffix == ".py" and p.stem != "__init__")}
    assert parts == set(FORBIDDEN)


def test_packages_import_one_way():
    assert contract_breaches() == []


def test_contract_check_can_fail(tmp_path):
    """The check itself sees an upward import, also inside a function and as a relative import, for
    every layer (the window may import Qt, not the commands; a command may open the window)."""
    for layer in FORBIDDEN:
        (tmp_path / "studio" / layer).mkdir(parents=True)
    (tmp_path / "studio" / "core" / "bad.py").write_text(
        "def f():\n    from studio.engine import evaluate\n", encoding="utf-8"
    )
    (tmp_path / "studio" / "io" / "bad.py").write_text(
        "from ..service import units\n", encoding="utf-8"
    )
    (tmp_path / "studio" / "service" / "bad.py").write_text("import PySide6\n", encoding="utf-8")
    (tmp_path / "studio" / "gui" / "bad.py").write_text(
        "import PySide6\nfrom studio.commands.plan import run\n", encoding="utf-8"
    )
    (tmp_path / "studio" / "commands" / "bad.py").write_text(
        "from studio.gui import app\nfrom studio.cli_parser import bounded_int\n", encoding="utf-8"
    )
    assert contract_breaches(tmp_path / "studio") == [
        "studio/commands/bad.py:2 imports studio.cli_parser",
        "studio/commands/bad.py:2 imports studio.cli_parser.bounded_int",
        "studio/core/bad.py:2 imports studio.engine",
        "studio/core/bad.py:2 imports studio.engine.evaluate",
        "studio/gui/bad.py:2 imports studio.commands.plan",
        "studio/gui/bad.py:2 imports studio.commands.plan.run",
        "studio/io/bad.py:1 imports studio.service",
        "studio/io/bad.py:1 imports studio.service.units",
        "studio/service/bad.py:1 imports PySide6 (Qt)",
    ]


#: A meta-path finder that refuses Qt, as an interpreter without PySide6 / pyqtgraph would.
BLOCK_QT = """
import importlib.abc, sys
class NoQt(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in %r:
            raise ModuleNotFoundError(f"No module named {name!r} (blocked by the test)", name=name)
        return None
sys.meta_path.insert(0, NoQt())
"""

SCRIPT = (
    BLOCK_QT
    + """
import contextlib, importlib, io, json, pkgutil, tempfile, traceback
try:
    import studio.core, studio.engine, studio.io, studio.service, studio.cli
    loaded = []
    for pkg in (studio.core, studio.engine, studio.io, studio.service):
        for info in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."):
            importlib.import_module(info.name)
            loaded.append(info.name)
    studio.cli.build_parser()
    runs = {}
    with tempfile.TemporaryDirectory() as out:
        for argv in (["plan", "--json"], ["sweep", "--top", "3", "--json"],
                     ["export", "--engine", "vllm", "--format", "script", "-o", out]):
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                runs[argv[0]] = studio.cli.main(argv)
    qt = sorted(m for m in sys.modules if m.split(".")[0] in %r)
    try:
        import PySide6  # noqa: F401
        blocked = False
    except ImportError:
        blocked = True
    report = {"loaded": loaded, "runs": runs, "qt": qt, "blocked": blocked}
except Exception:
    report = {"error": traceback.format_exc()}
print(%r + json.dumps(report), flush=True)
"""
)

#: The application layer's own tests, run by pytest in the same interpreter after :data:`SCRIPT`
#: (pytest-qt is switched off: it imports Qt when it loads). The process exits with pytest's code.
SERVICE_TESTS = """
import pytest
sys.exit(pytest.main(["-q", "-p", "no:pytest-qt", "-p", "no:cacheprovider",
                      "--durations=0", "--durations-min=3600", "tests/service"]))
"""

#: The line of the child's output that holds :data:`SCRIPT`'s report (JSON follows it).
REPORT = "HEADLESS-REPORT "


@pytest.fixture(scope="module")
def qt_free_child() -> tuple[subprocess.CompletedProcess[str], dict]:
    """One fresh interpreter where Qt cannot be imported: it loads every headless module and runs
    ``plan``, ``sweep`` and ``export`` (:data:`SCRIPT`, first, so its imports start from nothing),
    then runs tests/service under pytest (:data:`SERVICE_TESTS`). The two checks shared one child
    (~1 s of CPU spent once: the interpreter, the studio's imports, the catalog)."""
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT % (QT_MODULES, QT_MODULES, REPORT) + SERVICE_TESTS],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith(REPORT)]
    report = json.loads(lines[-1][len(REPORT):]) if lines else {"error": proc.stderr[-3000:]}
    return proc, report


def test_headless_packages_run_without_qt(qt_free_child):
    proc, report = qt_free_child
    assert "error" not in report, report.get("error")
    assert report["blocked"], "the finder did not block PySide6"
    assert report["qt"] == [], f"Qt modules loaded by headless packages: {report['qt']}"
    services = {m for m in report["loaded"] if m.startswith("studio.service.")}
    expected = {
        "studio." + ".".join(p.relative_to(STUDIO).with_suffix("").parts).removesuffix(".__init__")
        for p in (STUDIO / "service").rglob("*.py")
        if p.relative_to(STUDIO).parts != ("service", "__init__.py")
    }
    assert services == expected
    assert report["runs"] == {"plan": 0, "sweep": 0, "export": 0}, proc.stderr


def test_qt_block_refuses_qt():
    """The block itself works: with it, importing PySide6 fails (so the test above can fail)."""
    probe = (
        BLOCK_QT % (QT_MODULES,)
        + "\ntry:\n    import pyqtgraph\nexcept ImportError:\n    print('refused')\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert proc.stdout.strip() == "refused", proc.stderr


def test_service_tests_pass_without_qt(qt_free_child):
    """Every test of ``studio.service`` (tests/service) runs and passes with Qt refused."""
    proc, _ = qt_free_child
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert " passed" in proc.stdout and "skipped" not in proc.stdout, proc.stdout[-2000:]
