"""All of ``studio`` type-checks clean under mypy, the window included (config: ``[tool.mypy]`` in
pyproject.toml; pyqtgraph, which ships no type information, is ``Any``).

``mypy studio`` takes about 8 s of CPU from a cold cache (with the pydantic plugin; re-runs reuse
``.mypy_cache`` and take well under a second).
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: What is checked: every package of the studio, the GUI and the command line included.
PACKAGES = ("studio",)


def test_every_package_of_studio_is_checked():
    """The checked paths cover every package of ``studio`` (a new one cannot slip past mypy)."""
    parts = {p.name for p in (ROOT / "studio").iterdir() if (p / "__init__.py").is_file()}
    covered = {part for part in parts if any(f"studio/{part}".startswith(pkg) for pkg in PACKAGES)}
    assert covered == parts and {"gui", "commands"} <= parts


@pytest.mark.slow
@pytest.mark.skipif(
    importlib.util.find_spec("mypy") is None,
    reason="mypy is not installed (it is in the test extras: pip install '.[test]')",
)
def test_studio_type_checks():
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", *PACKAGES],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Success: no issues found" in proc.stdout
