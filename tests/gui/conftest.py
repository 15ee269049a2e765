"""Fixtures of the GUI tests: a small real project (2 × DGX H100 from the bundled presets,
Llama-3.1-70B from its Hugging Face config.json in tests/data/gui) and a document around it."""

from __future__ import annotations

import pytest
from gui_helpers import DATA, make_project

from studio.core.project import Project
from studio.io.hf_config import load_model_config
from studio.io.presets import load_catalog


@pytest.fixture(scope="session")
def catalog():
    return load_catalog()


@pytest.fixture(scope="session")
def model():
    return load_model_config(DATA / "llama-3.1-70b.config.json")


@pytest.fixture
def project(catalog, model) -> Project:
    return make_project(catalog, model)


@pytest.fixture
def doc(qtbot, project):
    """A synchronous document (engine on the GUI thread after the debounce) around the project."""
    from studio.gui.document import ProjectDocument

    d = ProjectDocument(project, evaluate=engine_evaluate_or_none(), threaded=False)
    qtbot.addWidget  # noqa: B018 - the qtbot fixture creates the QApplication
    yield d
    d.wait_idle()


def engine_evaluate_or_none():
    import studio.engine as engine

    return getattr(engine, "evaluate", None)


@pytest.fixture
def canvas(qtbot, doc, catalog):
    """Scene + view around ``doc``, shown offscreen at a fixed size and fitted."""
    from studio.gui.canvas import CanvasView, ClusterScene

    scene = ClusterScene(doc, catalog)
    view = CanvasView(scene)
    qtbot.addWidget(view)
    view.resize(1000, 700)
    view.show()
    qtbot.waitExposed(view)
    view.fit()
    return view


@pytest.fixture(autouse=True)
def _private_data_dir(tmp_path, monkeypatch):
    """Autosave snapshots and error logs of GUI tests go to a temporary folder, never the user's."""
    data = tmp_path / "data-dir"
    monkeypatch.setenv("LAYOUT_STUDIO_DATA_DIR", str(data))
    return data
