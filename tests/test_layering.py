"""Layering: the headless packages never load Qt (only ``studio.gui`` may)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
QT_MODULES = ("PySide6", "pyqtgraph", "shiboken6")

SCRIPT = """
import importlib, json, pkgutil, sys
import studio.core, studio.engine, studio.io, studio.cli
loaded = ["studio.core", "studio.engine", "studio.io", "studio.cli"]
for pkg in (studio.core, studio.engine, studio.io):
    for info in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."):
        importlib.import_module(info.name)
        loaded.append(info.name)
import studio.cli
studio.cli.build_parser()
qt = sorted(m for m in sys.modules if m.split(".")[0] in %r)
print(json.dumps({"loaded": loaded, "qt": qt}))
"""


def test_headless_packages_load_no_qt():
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT % (QT_MODULES,)],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert "studio.cli" in report["loaded"]
    assert report["qt"] == [], f"Qt modules loaded by headless packages: {report['qt']}"


def test_layering_check_detects_qt():
    """The check itself can fail: importing PySide6 shows up in sys.modules."""
    probe = "import sys, PySide6; print(any(m.startswith('PySide6') for m in sys.modules))"
    proc = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == "True"
