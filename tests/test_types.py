"""The headless packages type-check clean under mypy (config: ``[tool.mypy]`` in pyproject.toml).

``mypy studio/core studio/engine studio/io studio/service`` takes about 9 s of CPU from a cold
cache (with the pydantic plugin; re-runs reuse ``.mypy_cache`` and take about a second).
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("studio/core", "studio/engine", "studio/io", "studio/service")


@pytest.mark.slow
@pytest.mark.skipif(
    importlib.util.find_spec("mypy") is None,
    reason="mypy is not installed (it is in the test extras: pip install '.[test]')",
)
def test_headless_packages_type_check():
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", *PACKAGES],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Success: no issues found" in proc.stdout
