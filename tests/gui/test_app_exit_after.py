"""The headless smoke run that .ci/run uses: the studio opens the bundled example, computes the
plan, prints its headline and closes by itself."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


@pytest.mark.slow  # starts the studio in a fresh process
def test_studio_opens_bundled_example_and_exits_by_itself() -> None:
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", LAYOUT_STUDIO_EXIT_AFTER_MS="0",
               LAYOUT_STUDIO_NO_SETTINGS="1")
    done = subprocess.run(
        [sys.executable, "-c", "import sys; from studio.cli import main; sys.exit(main([]))"],
        env=env, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # no Qt warning (studio.gui.toolkit.qt_messages), nothing else
    line = next(ln for ln in done.stdout.splitlines() if ln.startswith("layout-studio:"))
    assert "TP8×PP2 on 16 GPUs, fits" in line
    assert "TTFT" in line and "tok/s" in line
    # the print is the plan's one summary (studio/service/plan_summary.py), as the status bar's
    from studio.commands.options.project_args import load_base_project
    from studio.engine.plan.evaluate import evaluate
    from studio.service.plan_summary import headline

    assert line.endswith(f": {headline(evaluate(load_base_project(None)))}")
