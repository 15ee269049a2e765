"""Fixtures of the report tests: the bundled example project, its gathered figures and one rendered
HTML and PDF (module-scoped: drawing the charts is the slow part)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from studio.commands.common import load_base_project
from studio.core.project import Project

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "presets" / "examples" / "dgx-h100-2node-llama-405b.json"
FIXED_DATE = dt.datetime(2025, 3, 14, 9, 26)


@pytest.fixture(scope="session")
def example() -> Project:
    return load_base_project(str(EXAMPLE))


@pytest.fixture(scope="session")
def data(example):
    from studio.gui.report import gather

    return gather(example, now=FIXED_DATE)


@pytest.fixture(scope="session")
def pictures(data):
    from studio.gui.report.writer import render_pictures

    return render_pictures(data)


@pytest.fixture(scope="session")
def html(data, pictures) -> str:
    from studio.gui.report.writer import report_html

    return report_html(data, pictures)


@pytest.fixture(scope="session")
def pdf_bytes(data, pictures, tmp_path_factory) -> bytes:
    from studio.gui.report.writer import write_pdf

    path = tmp_path_factory.mktemp("report") / "report.pdf"
    write_pdf(data, path, pictures)
    return path.read_bytes()
