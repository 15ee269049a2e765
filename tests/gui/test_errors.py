"""Never crash on a file, never abort on a bug: bad project files, config.json files and topologies
give a dialog naming the file and the place while the open document stays as it was; StudioErrors
from actions become dialogs; unexpected exceptions in slots are logged and shown, and the window
keeps running. Also the signal-lifetime fixes (undo stack, sweep task) and hostile drag payloads."""

from __future__ import annotations

import json
import sys

import pytest
import shiboken6
from gui_helpers import DATA, dispose, make_project
from PySide6.QtCore import QMimeData, QTimer

from studio.core.errors import StudioError
from studio.io.project_file import project_to_json

HF_LLAMA = (DATA / "llama-3.1-70b.config.json").read_text(encoding="utf-8")


def _window(project):
    from studio.gui.document import ProjectDocument
    from studio.gui.window.main_window import MainWindow

    doc = ProjectDocument(project, evaluate=lambda p: None, threaded=False)
    w = MainWindow(doc, None)
    w.errors = []
    w.show_error = lambda title, text: w.errors.append((title, text))
    w.ask_save = lambda: "discard"
    return w


@pytest.fixture(scope="module")
def _opener(qapp, catalog, model):
    w = _window(make_project(catalog, model))
    yield w
    dispose(w)


@pytest.fixture
def opener(_opener, project):
    """One window for the module's refusals (bad project files, config.json files, topologies, a
    failing action, an exception in a slot), on a fresh document each time: what is refused
    changes nothing of the window (what each test checks), and ``replace_document`` (what
    File ▸ Open does) starts the document over: new project, no file, no undo history, no selection."""
    _opener.doc.replace_document(project, None)
    _opener.errors.clear()
    assert _opener.doc.undo_stack.count() == 0 and not _opener.doc.is_dirty and _opener.doc.path is None
    assert _opener.doc.project is project and not _opener.doc.selection
    return _opener


@pytest.fixture
def win(opener):
    return opener


def _dirty(win):
    win.doc.edit("Rename plan", "project", lambda p: p.replace(name="Work in progress"))
    return win.doc.project, win.doc.undo_stack.count()


BAD_PROJECTS = {
    "truncated.json": ('{"schema_version": 1, "name": "x", "cluster": {', "line 1"),
    "deep.json": ("[" * 100_000 + "]" * 100_000, "nest"),
    "newer.json": (None, "newer"),
    "wrong-field.json": (None, "serving.runtime"),
    "binary.json": (b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe", "UTF-8"),
    "nan.json": ('{"schema_version": NaN}', "NaN"),
}


@pytest.mark.parametrize("name", sorted(BAD_PROJECTS))
def test_bad_project_file_gives_a_dialog_and_keeps_the_document(opener, project, tmp_path, name):
    win = opener
    text, expect = BAD_PROJECTS[name]
    good = json.loads(project_to_json(project))
    if name == "newer.json":
        good["schema_version"] = 999
        text = json.dumps(good)
    elif name == "wrong-field.json":
        good.setdefault("serving", {})["runtime"] = "ollama"
        text = json.dumps(good)
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    before, steps = _dirty(win)
    assert not win.open_path(path, ask=False)
    [(title, message)] = win.errors
    assert title == "Cannot open project"
    assert str(path) in message and expect.lower() in message.lower()
    assert win.doc.project is before and win.doc.undo_stack.count() == steps and win.doc.is_dirty
    assert win.doc.path is None


def test_config_json_of_an_unknown_architecture_gives_a_dialog(win, tmp_path):
    cfg = json.loads(HF_LLAMA)
    cfg["architectures"] = ["MysteryForCausalLM"]
    cfg["model_type"] = "mystery"
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg), encoding="utf-8")
    model = win.doc.project.model
    assert not win.model_panel.load_config(str(path))
    [(title, message)] = win.errors
    assert title == "Cannot load config.json"
    assert str(path) in message and "mystery" in message.lower()
    assert win.doc.project.model == model and not win.doc.is_dirty


def test_broken_topology_is_refused_in_the_import_dialog(win, catalog, tmp_path):
    from studio.gui.calibration.topo_dialog import ImportTopologyDialog

    path = tmp_path / "topo.txt"
    path.write_text("\tGPU0\tGPU1\nGPU0\t X \tQQ\nGPU1\tNV18\t X\n", encoding="utf-8")
    cluster = win.doc.project.cluster
    dlg = ImportTopologyDialog(win.doc, catalog, win)
    dlg.open_path(path)
    assert dlg.cluster is None and dlg.error  # shown in the dialog, "Replace cluster" disabled
    assert "QQ" in dlg.error
    dlg.open_path(tmp_path / "missing.txt")
    assert "missing.txt" in dlg.error
    dlg.reject()
    assert win.doc.project.cluster is cluster


def test_topology_parse_error_names_the_file_it_came_from(win, catalog, tmp_path):
    from studio.gui.calibration.topo_dialog import ImportTopologyDialog

    path = tmp_path / "node-a.txt"
    bad = "\tGPU0\tGPU1\nGPU0\t X \tQQ\nGPU1\tNV18\t X\n"
    path.write_text(bad, encoding="utf-8")
    dlg = ImportTopologyDialog(win.doc, catalog, win)
    dlg.open_path(path)
    assert dlg.error.startswith(f"{path}: line 2")
    assert "pasted text" not in dlg.error
    dlg.set_text(bad.replace("GPU1\tNV18", "GPU1\tNV99"))  # edited after opening
    assert dlg.error.startswith(f"{path} (edited): line 2")
    dlg.reject()
    pasted = ImportTopologyDialog(win.doc, catalog, win)
    pasted.set_text(bad)
    assert pasted.error.startswith("pasted text: line 2")
    pasted.reject()


def test_studio_error_in_an_action_becomes_a_dialog(win):
    def refuse():
        raise StudioError("no such thing", "plan.json")

    assert win.guard("Export", refuse) is None
    assert win.errors == [("Export: cannot do that", "plan.json: no such thing")]


@pytest.mark.qt_no_exception_capture
def test_unexpected_exception_in_a_slot_shows_a_dialog_and_keeps_running(qtbot, win, tmp_path):
    from studio.gui.window.errors import GuiExceptHook

    log = tmp_path / "logs" / "layout-studio.log"
    hook = GuiExceptHook(lambda t, x: win.errors.append((t, x)), log).install()
    try:
        def broken_slot():
            raise ZeroDivisionError("a bug in a slot")

        QTimer.singleShot(0, broken_slot)
        qtbot.waitUntil(lambda: bool(win.errors), timeout=30_000)
        QTimer.singleShot(0, lambda: (_ for _ in ()).throw(StudioError("bad value", "field 'x'")))
        qtbot.waitUntil(lambda: len(win.errors) == 2, timeout=30_000)
    finally:
        hook.uninstall()
    assert sys.excepthook is not hook
    (title, text), (title2, text2) = win.errors
    assert title == "Unexpected error" and "ZeroDivisionError: a bug in a slot" in text and str(log) in text
    assert "broken_slot" in log.read_text(encoding="utf-8")  # the traceback is in the log
    assert (title2, text2) == ("Cannot do that", "field 'x': bad value")
    win.doc.edit("Rename plan", "project", lambda p: p.replace(name="still alive"))
    assert win.doc.project.name == "still alive"


def test_excepthook_survives_a_failing_dialog(tmp_path, capsys):
    from studio.gui.window.errors import GuiExceptHook

    def dialog(title, text):
        raise RuntimeError("no display")

    hook = GuiExceptHook(dialog, tmp_path / "x.log")
    try:
        raise ValueError("boom")
    except ValueError as exc:
        hook(type(exc), exc, exc.__traceback__)
    assert "no display" in capsys.readouterr().err


@pytest.mark.parametrize(
    "payload, message",
    [
        (b"[" * 200_000, "bytes"),  # too big, and deep enough to exhaust the stack
        (b"[" * 3000, "not JSON"),  # RecursionError inside json.loads
        (b'{"kind": ["gpu"], "id": "h100"}', "is not one of"),
        (b'{"kind": "gpu", "id": ""}', "is not one of"),
        (b"\xff\xfe{}", "not JSON"),
    ],
)
def test_hostile_drag_payloads_are_refused(payload, message, canvas):
    from gui_helpers import send_drop
    from PySide6.QtCore import QPointF

    from studio.gui.canvas.mime import MIME_TYPE, from_mime

    mime = QMimeData()
    mime.setData(MIME_TYPE, payload)
    with pytest.raises(StudioError, match=message):
        from_mime(mime)
    before = canvas.cluster_scene.doc.project
    entered, dropped = send_drop(canvas, mime, QPointF(-5000, -5000))
    assert not entered and not dropped
    assert canvas.cluster_scene.doc.project is before


def test_document_destroyed_with_unsaved_changes_emits_nothing_afterwards(qtbot, project):
    from studio.gui.document import ProjectDocument

    doc = ProjectDocument(project, evaluate=lambda p: None, threaded=False)
    seen = []
    doc.fileChanged.connect(lambda: seen.append("file"))
    doc.edit("Rename plan", "project", lambda p: p.replace(name="dirty"))
    assert seen == ["file"]  # cleanChanged still reaches fileChanged
    shiboken6.delete(doc)  # the undo stack emits cleanChanged from its destructor
    assert seen == ["file"]


def test_sweep_task_stops_quietly_when_its_window_is_gone(project):
    from studio.gui.worker import _Relay, _Task
    from studio.service.explore.explorer_work import explore_work
    from studio.service.scheduler import Job, Request

    calls = []

    def sweeper(p, progress, **kw):
        for i in range(5):
            calls.append(i)
            if not progress(i / 5):
                return None
        return "done"

    job = Job(Request(1, (project, {}, None), 1), explore_work(sweeper), "the sweep")
    task = _Task(job, _Relay())
    shiboken6.delete(task.relay)  # the window (and the relay) went away during the sweep
    task.run()
    assert calls == [0] and job.cancelled and job.finished.is_set()
