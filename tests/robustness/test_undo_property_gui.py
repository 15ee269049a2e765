"""Undo/redo through the document's undo stack: random edits pushed, then undo all gives the exact
starting document, redo all the exact end document, and undoing k steps then redoing them returns
the same end document."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from studio.io.presets import load_catalog
from studio.io.project_file import load_project, project_to_json
from tests.property_budget import examples
from tests.robustness.edit_commands import draw_command
from tests.robustness.golden_files import GOLDEN

pytest.importorskip("PySide6")
from studio.gui.document import ProjectDocument

START = load_project(GOLDEN / "v1" / "example-l40s-8x-llama-70b-fp8.json")


@settings(
    max_examples=examples(400),
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=st.data(), steps=st.integers(1, 10))
def test_document_undo_all_redo_all(qapp, data, steps):
    catalog = load_catalog()
    doc = ProjectDocument(START, threaded=False)
    start_doc = project_to_json(doc.project)
    docs = [start_doc]
    for _ in range(steps):
        label, fn = draw_command(data, doc.project.cluster, catalog)
        before = doc.project
        if doc.edit_cluster(label, fn) and doc.project is not before:
            docs.append(project_to_json(doc.project))
        else:
            assert doc.project is before  # refused or no-op: nothing pushed
    stack = doc.undo_stack
    assert stack.count() == len(docs) - 1
    assert doc.is_dirty == (len(docs) > 1)

    for i in range(stack.count()):
        stack.undo()
        assert project_to_json(doc.project) == docs[-2 - i]
    assert project_to_json(doc.project) == start_doc
    assert doc.project == START
    assert not doc.is_dirty

    for i in range(stack.count()):
        stack.redo()
        assert project_to_json(doc.project) == docs[i + 1]
    assert project_to_json(doc.project) == docs[-1]

    back = data.draw(st.integers(0, stack.count()), label="undo then redo")
    for i in range(back):
        stack.undo()
        assert project_to_json(doc.project) == docs[-2 - i]
    for _ in range(back):
        stack.redo()
    assert project_to_json(doc.project) == docs[-1]
    assert doc.is_dirty == (len(docs) > 1)
    # The stack emits cleanChanged while it is destroyed with the document; the document's
    # handler would then touch a deleted object (reported to the GUI owner), so cut it first.
    stack.cleanChanged.disconnect()
