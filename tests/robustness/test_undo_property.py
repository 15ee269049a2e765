"""Model-level edits are pure and deterministic: an edit never modifies its input (a refused edit
changes nothing), and replaying the same commands from the start gives every intermediate
document exactly. Undo and redo themselves go through the document's undo stack and are tested
there (``test_undo_property_gui.py``: undo all, redo all, and undo k then redo k)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from studio.core.errors import StudioError
from studio.core.hardware import Cluster
from studio.core.project import Project
from studio.io.presets import load_catalog
from studio.io.project_file import load_project, project_to_json
from tests.property_budget import examples
from tests.robustness.edit_commands import draw_command
from tests.robustness.golden_files import GOLDEN

START = load_project(GOLDEN / "v1" / "example-l40s-8x-llama-70b-fp8.json")


def _doc(cluster: Cluster) -> str:
    return project_to_json(START.replace(cluster=cluster))


@settings(max_examples=examples(600), deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), start_empty=st.booleans(), steps=st.integers(1, 12))
def test_edits_are_pure_and_replay_exactly(data, start_empty, steps):
    catalog = load_catalog()
    start = Cluster(name="empty") if start_empty else START.cluster
    start_doc = _doc(start)
    current = start
    applied = []
    docs = [start_doc]
    for _ in range(steps):
        label, fn = draw_command(data, current, catalog)
        before_doc = _doc(current)
        try:
            new = fn(current)
        except StudioError:
            assert _doc(current) == before_doc  # a refused edit changes nothing
            continue
        assert _doc(current) == before_doc, f"{label} modified its input"
        if new == current:
            continue
        applied.append((label, fn))
        current = new
        docs.append(_doc(current))
    end, end_doc = current, docs[-1]

    # The start value is untouched by everything applied to it.
    assert _doc(start) == start_doc

    # Replay: the same commands from the start reproduce every step exactly.
    current = start
    for i, (label, fn) in enumerate(applied):
        current = fn(current)
        assert _doc(current) == docs[i + 1], f"redo of {label} differs"
    assert current == end and _doc(current) == end_doc
    Project.model_validate_json(end_doc)  # the end document is a valid project file
