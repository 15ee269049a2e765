"""The README tells the truth: its pictures and its engine table are what this code draws and
computes (``benchmarks/readme_figures.py --check``), and ``.ci/run`` runs the README's set-up
commands verbatim."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _figures_module():
    spec = importlib.util.spec_from_file_location("readme_figures", ROOT / "benchmarks" / "readme_figures.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_pictures_and_the_engine_table_are_not_stale():
    """Fails when the engine's numbers moved (or a picture was replaced by hand) since the pictures
    were drawn: rerun ``python benchmarks/readme_figures.py`` and commit what it writes."""
    figures = _figures_module()
    assert figures.check() == []
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for name in figures.pictures():  # every picture drawn is shown somewhere
        assert name in readme or any(name in p.read_text(encoding="utf-8") for p in (ROOT / "docs").glob("*.md")), name


def test_ci_runs_exactly_the_readmes_set_up_commands():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first_block = re.search(r"```bash\n(.*?)```", readme, re.S).group(1)
    commands = [ln.split("#")[0].strip() for ln in first_block.splitlines() if ln.strip()]
    assert commands == ['pip install . && layout-studio', 'pip install ".[test]" && pytest']
    venv = re.search(r"`(python3 -m venv \.venv && \. \.venv/bin/activate)`", readme).group(1)
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    steps = [ln.strip() for ln in ci.splitlines() if ln.strip() and not ln.lstrip().startswith(("#", "echo", "set ", "cd ", "export "))]
    assert steps == [venv, f"LAYOUT_STUDIO_EXIT_AFTER_MS=4000 bash -c '{commands[0]}'", commands[1]]
    assert "LAYOUT_STUDIO_EXIT_AFTER_MS=4000" in readme


def test_the_readme_names_only_what_an_installed_wheel_has():
    """Its command lines name files by bundled id, never by a checkout path (presets/...)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    lines = [ln for ln in readme.splitlines() if ln.startswith("layout-studio ")]
    assert len(lines) >= 10
    assert not [ln for ln in lines if "presets/" in ln or ".log" in ln or "topo.txt" in ln]
