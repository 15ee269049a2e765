"""The reports of the bundled examples, gathered and drawn once per run for tests/report and
tests/gui/test_report_pages.py alike (import this module as ``tests.report.example_report``, so
that both share its one cache): gathering a report sweeps its cluster (~0.3 s of CPU for the 405B
example) and drawing its pictures costs as much again. What they return is read only (frozen
``ReportData``; the pictures are only drawn from)."""

from __future__ import annotations

import datetime as dt
import functools
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "presets" / "examples"
#: The date every shared report carries (its text must not change between runs).
FIXED_DATE = dt.datetime(2025, 3, 14, 9, 26)


@functools.cache
def example_data(name: str):
    """The report's figures of bundled example ``name`` as it is on disk, dated :data:`FIXED_DATE`."""
    from studio.io.project_file import load_project
    from studio.service.report.report_content import gather

    return gather(load_project(EXAMPLES / f"{name}.json"), now=FIXED_DATE)


@functools.cache
def example_pictures(name: str) -> dict:
    """The report's pictures of bundled example ``name`` (:func:`example_data`'s)."""
    from studio.gui.report.writer import render_pictures

    return render_pictures(example_data(name))
