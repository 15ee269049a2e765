"""Pinned layouts that cannot run are refused when the file is loaded (issue 16), not when a report
or a comparison first evaluates them: one line naming the file, the field (``pinned[2].tp``), why,
and what is allowed (the rules of :mod:`studio.core.parallelism`); exit 2 in the CLI; in the
window a dialog that offers the project without them and never loses the open document."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from studio.cli import main
from studio.core.errors import StudioError
from studio.core.project import PinnedLayoutError, drop_unrunnable_pinned, pinned_problem
from studio.io.project_file import load_project, project_from_data, save_project
from tests.robustness.golden_files import GOLDEN
from tests.robustness.hostile import guarded

#: 2 × DGX H100 (16 GPUs) with Llama 3.1 70B (64 heads, 8 KV heads, 80 layers), two good pins.
BASE = GOLDEN / "v1" / "dgx-h100-2node.json"
GOOD = {"tp": 8, "pp": 1, "dp": 2}

#: (pinned layout, field named, words of the reason, what the message allows)
CASES = {
    "tp does not divide the GPUs": (
        {"tp": 3, "pp": 1, "dp": 5},
        "tp",
        "does not divide the 16 GPUs",
        "allowed TP: 1, 2, 4, 8, 16",
    ),
    "a pin that runs loads": ({"tp": 16, "pp": 1, "dp": 1, "micro_batches": 1}, None, None, None),
    "pp does not divide": (
        {"tp": 8, "pp": 3, "dp": 1},
        "pp",
        "does not divide the 16 GPUs",
        "allowed PP after TP=8: 1, 2",
    ),
    "dp does not fill": ({"tp": 8, "pp": 1, "dp": 1}, "dp", "the cluster has 16", "allowed DP: 2"),
    "ep on a dense model": (
        {"tp": 8, "pp": 1, "dp": 2, "ep": 2},
        "ep",
        "has no experts",
        "allowed EP: 1",
    ),
    "layer split": (
        {"tp": 8, "pp": 2, "dp": 1, "layers_per_stage": [40, 41]},
        "layers_per_stage",
        "hold 81 layers",
        "add up to 80",
    ),
    "unknown GPU": (
        {"tp": 16, "pp": 1, "dp": 1, "placement": [f"x{i}" for i in range(16)]},
        "placement[0]",
        "GPU 'x0' is not in the cluster",
        "names the cluster's GPUs",
    ),
}


def _file(tmp_path: Path, pinned: list[dict], name: str = "plan.json") -> Path:
    data = json.loads(BASE.read_text(encoding="utf-8"))
    data["pinned"] = pinned
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_pinned_layout_that_cannot_run_is_refused_at_load(case, tmp_path):
    lay, field, why, allowed = CASES[case]
    path = _file(tmp_path, [GOOD, {"tp": 4, "pp": 4, "dp": 1}, lay])
    project, err = guarded(lambda: load_project(path))
    if field is None:
        assert err is None and len(project.pinned) == 3
        return
    assert isinstance(err, PinnedLayoutError), err
    text = str(err)
    assert "\n" not in text
    assert text.startswith(f"{path}: field 'pinned[2].{field}': "), text
    assert why in text and allowed in text, text
    assert err.bad == (2,)
    assert err.without.pinned == err.project.pinned[:2]


def test_pydantic_and_layout_rules_name_the_same_field_style(tmp_path):
    """A value no layout can have (TP above 4,096) is a field error of the file as before."""
    path = _file(tmp_path, [{"tp": 8192}])
    _, err = guarded(lambda: load_project(path))
    assert isinstance(err, StudioError) and not isinstance(err, PinnedLayoutError)
    assert "field 'pinned.0.tp'" in str(err)


def test_every_bad_pin_is_counted_and_the_good_ones_kept(tmp_path):
    path = _file(tmp_path, [{"tp": 3, "pp": 1, "dp": 5}, GOOD, {"tp": 8, "pp": 1, "dp": 1}])
    with pytest.raises(PinnedLayoutError) as info:
        load_project(path)
    assert info.value.bad == (0, 2)
    assert "(1 more pinned layout cannot run either)" in str(info.value)
    assert [p.tp for p in info.value.without.pinned] == [8]


@pytest.mark.parametrize(
    "command", [["plan"], ["sweep"], ["export", "--engine", "vllm"], ["report", "-o", "{out}"]]
)
def test_cli_exits_2_with_one_line_before_writing_anything(command, tmp_path, capsys):
    path = _file(tmp_path, [CASES["dp does not fill"][0]])
    out = tmp_path / "r.html"
    argv = [a.format(out=out) for a in command] + [str(path)]
    code, err = guarded(lambda: main(argv))
    assert err is None and code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and f"{path}: field 'pinned[0].dp'" in lines[0], lines
    assert not out.exists()


def test_the_bundled_examples_and_golden_files_still_load():
    root = Path(__file__).resolve().parents[2]
    files = [
        *sorted((root / "presets" / "examples").glob("*.json")),
        *sorted(GOLDEN.rglob("*.json")),
    ]
    for f in files:
        load_project(f)


def test_autosave_recovery_keeps_the_work_without_the_bad_pins(tmp_path):
    from studio.io.autosave import AutosaveStore

    good = load_project(BASE)
    store = AutosaveStore(tmp_path / "autosave")
    store.save(good, "abc")
    snap = store.path_of("abc")
    data = json.loads(snap.read_text(encoding="utf-8"))
    data["project"]["pinned"].append(CASES["tp does not divide the GPUs"][0])
    snap.write_text(json.dumps(data), encoding="utf-8")
    restored = store.restore("abc")
    assert restored.pinned == good.pinned


def test_a_cluster_edit_drops_the_pins_the_new_cluster_cannot_run():
    from studio.service.project_edits.hardware_edits import follow_cluster

    p = load_project(BASE)
    one_node = p.cluster.replace(
        nodes=p.cluster.nodes[:1],
        links=tuple(
            lk
            for lk in p.cluster.links
            if not any(x.startswith(p.cluster.nodes[1].id) for x in (lk.a, lk.b))
        ),
    )
    new, _ = follow_cluster(p, one_node)
    assert new.cluster.num_gpus == 8
    assert all(pinned_problem(new, k) is None for k in range(len(new.pinned)))
    assert len(new.pinned) < len(p.pinned)
    assert drop_unrunnable_pinned(new) is new


def test_a_saved_file_always_opens_again(tmp_path):
    """What the window saves after a cluster edit opens again (the pins that could no longer run
    were dropped by the edit)."""
    from studio.service.project_edits.hardware_edits import follow_cluster

    p = load_project(BASE)
    n0 = p.cluster.nodes[0]
    new, _ = follow_cluster(
        p,
        p.cluster.replace(
            nodes=(n0,),
            links=tuple(
                lk for lk in p.cluster.links if lk.a.startswith(n0.id) and lk.b.startswith(n0.id)
            ),
        ),
    )
    path = save_project(new, tmp_path / "saved.json")
    assert load_project(path).pinned == new.pinned


def test_project_from_data_names_its_source():
    data = json.loads(BASE.read_text(encoding="utf-8"))
    data["pinned"] = [{"tp": 5, "pp": 1, "dp": 1}]
    with pytest.raises(PinnedLayoutError, match=r"^clipboard: field 'pinned\[0\]\.tp'"):
        project_from_data(data, "clipboard")


# ----------------------------------------------------------------------------- the window
@pytest.fixture
def win(qtbot):
    from studio.gui.document import ProjectDocument
    from studio.gui.window.main_window import MainWindow

    doc = ProjectDocument(
        load_project(BASE).replace(name="Work in progress"), evaluate=lambda p: None, threaded=False
    )
    w = MainWindow(doc, None)
    qtbot.addWidget(w)
    w.errors = []
    w.show_error = lambda title, text: w.errors.append((title, text))
    w.ask_save = lambda: "discard"
    return w


def _click_when_shown(qtbot, button_text: str) -> list[str]:
    """Click ``button_text`` in the next message box once it is on screen; returns its texts."""
    from PySide6.QtCore import Qt, QTimer
    from PySide6.QtWidgets import QApplication, QMessageBox

    seen: list[str] = []

    def poll() -> None:
        box = QApplication.activeModalWidget()
        if not isinstance(box, QMessageBox):
            QTimer.singleShot(20, poll)
            return
        seen.extend([box.text(), box.informativeText()])
        for b in box.buttons():
            if b.text() == button_text:
                qtbot.mouseClick(b, Qt.MouseButton.LeftButton)
                return
        box.reject()

    QTimer.singleShot(0, poll)
    return seen


def test_window_offers_the_project_without_the_bad_pins(win, qtbot, tmp_path):
    path = _file(tmp_path, [GOOD, CASES["tp does not divide the GPUs"][0]])
    before = path.read_bytes()
    seen = _click_when_shown(qtbot, "Open without it")
    assert win.open_path(path, ask=False)
    assert "1 pinned layout in this file cannot run" in seen[0]
    assert "field 'pinned[1].tp'" in seen[1] and "allowed TP: 1, 2, 4, 8, 16" in seen[1]
    assert [p.tp for p in win.doc.project.pinned] == [8]
    assert win.doc.path == path and win.doc.is_dirty  # saving writes it without the pin
    assert path.read_bytes() == before  # the file is left as it is
    assert win.errors == []


def test_window_cancel_keeps_the_open_document(win, qtbot, tmp_path):
    path = _file(tmp_path, [CASES["dp does not fill"][0], CASES["pp does not divide"][0]])
    project = win.doc.project
    seen = _click_when_shown(qtbot, "Cancel")
    assert not win.open_path(path, ask=False)
    assert "2 pinned layouts in this file cannot run" in seen[0]
    assert win.doc.project is project and win.doc.path is None
