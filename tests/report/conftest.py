"""Fixtures of the report tests: the bundled example project, its gathered figures and the run's one
report build (session-scoped: drawing the charts, ~3 s, and encoding them as PNG, ~1.5 s, are the
slow part). Tests that write the example's report through the command line or the window ask for
``shared_build``, which hands them those same pictures instead of drawing them again."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from studio.commands.options.project_args import load_base_project
from studio.core.project import Project
from tests.report.example_report import EXAMPLES, example_data, example_pictures

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = EXAMPLES / "dgx-h100-2node-llama-405b.json"


@pytest.fixture(scope="session")
def example() -> Project:
    return load_base_project(str(EXAMPLE))


@pytest.fixture(scope="session")
def data(example):
    data = example_data(EXAMPLE.stem)  # shared with tests/gui/test_report_pages.py
    assert data.project == example
    return data


@pytest.fixture(scope="session")
def pictures(data):
    return example_pictures(EXAMPLE.stem)


@pytest.fixture(scope="session")
def png_cache() -> dict[int, bytes]:
    """PNG bytes of the shared pictures, by ``id`` of the image (each is encoded once)."""
    return {}


def _cached_png(pictures: dict, cache: dict[int, bytes], real: Callable) -> Callable:
    """``charts.png_bytes`` that encodes each shared picture once; other images as usual."""
    shared = {id(img) for img in pictures.values()}

    def png_bytes(img) -> bytes:
        if id(img) not in shared:
            return real(img)
        if id(img) not in cache:
            cache[id(img)] = real(img)
        return cache[id(img)]

    return png_bytes


@pytest.fixture(scope="session")
def html(data, pictures, png_cache) -> str:
    from studio.gui.report import charts
    from studio.gui.report.writer import report_html

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(charts, "png_bytes", _cached_png(pictures, png_cache, charts.png_bytes))
        return report_html(data, pictures)


@pytest.fixture
def shared_build(monkeypatch, data, pictures, png_cache) -> list:
    """Writing the report of the example (same project and objective) reuses the run's pictures and
    their PNGs; any other report is drawn as usual. Returns the reports that reused them."""
    from studio.gui.report import charts, writer

    real_render = writer.render_pictures
    reused: list = []

    def render_pictures(d):
        if d.project == data.project and d.objective == data.objective:
            reused.append(d)
            return pictures
        return real_render(d)

    monkeypatch.setattr(writer, "render_pictures", render_pictures)
    monkeypatch.setattr(charts, "png_bytes", _cached_png(pictures, png_cache, charts.png_bytes))
    return reused


@pytest.fixture(scope="session")
def pdf_bytes(data, pictures, tmp_path_factory) -> bytes:
    from studio.gui.report.writer import write_pdf

    path = tmp_path_factory.mktemp("report") / "report.pdf"
    write_pdf(data, path, pictures)
    return path.read_bytes()
