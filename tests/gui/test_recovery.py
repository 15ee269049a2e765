"""Autosave and crash recovery in the window: snapshots after idle time, gone after a clean save or
close, and after a real crash (a child process that ``os._exit``s) the next window restores the
exact project, unsaved and with its original file."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from studio.io.autosave import AutosaveStore, IdleTimer
from studio.io.project_file import load_project, project_to_json, save_project

ROOT = Path(__file__).resolve().parents[2]


def _window(qtbot, project, path=None):
    from studio.gui.document import ProjectDocument
    from studio.gui.window.main_window import MainWindow

    doc = ProjectDocument(project, path=path, evaluate=lambda p: None, threaded=False)
    win = MainWindow(doc, None, autosave=AutosaveStore())
    qtbot.addWidget(win)
    win.autosaver.idle = IdleTimer(idle_s=0.05, min_interval_s=5.0)
    win.ask_save = lambda: "discard"
    return win


def test_unsaved_work_is_snapshotted_after_idle_and_dropped_on_save(qtbot, project, tmp_path):
    win = _window(qtbot, project)
    saver = win.autosaver
    assert not saver.tick() and not saver.path.exists()  # clean: nothing to protect
    win.doc.edit("Rename plan", "project", lambda p: p.replace(name="Afternoon of work"))
    qtbot.waitUntil(saver.path.exists, timeout=30_000)
    assert AutosaveStore().restore(saver.session_id) == win.doc.project
    win.doc.save(tmp_path / "plan.json")
    assert not saver.path.exists()  # a clean save leaves nothing to recover
    win.doc.edit("Rename plan", "project", lambda p: p.replace(name="More work"))
    qtbot.waitUntil(saver.path.exists, timeout=30_000)
    win.doc.undo_stack.undo()  # back to the saved state: clean again
    assert not saver.path.exists()


def test_clean_close_deletes_the_snapshot(qtbot, project):
    win = _window(qtbot, project)
    win.doc.edit("Rename plan", "project", lambda p: p.replace(name="Closing"))
    assert win.autosaver.save_now()
    assert win.autosaver.path.exists()
    assert win.close()  # ask_save answers "discard"
    assert not win.autosaver.path.exists()
    assert AutosaveStore().sessions(include_running=True) == []


def test_autosave_failure_is_reported_and_the_window_keeps_working(qtbot, project, tmp_path):
    win = _window(qtbot, project)
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    win.autosaver.store = AutosaveStore(blocker / "autosave")
    messages = []
    win.doc.message.connect(messages.append)
    win.doc.edit("Rename plan", "project", lambda p: p.replace(name="Nowhere to go"))
    assert not win.autosaver.save_now()
    assert any(m.startswith("Autosave failed") and "not-a-folder" in m for m in messages)
    assert win.doc.project.name == "Nowhere to go"


CRASHING_CHILD = textwrap.dedent(
    """
    import os, sys
    from pathlib import Path
    from PySide6.QtCore import QEventLoop
    from studio.gui.window.app import build_window
    from studio.gui.toolkit.resources import application
    from studio.io.autosave import IdleTimer
    from studio.io.project_file import project_to_json

    original, expected = Path(sys.argv[1]), Path(sys.argv[2])
    app = application()
    win = build_window(path=original, threaded=False, autosave=True)
    win.autosaver.idle = IdleTimer(idle_s=0.05, min_interval_s=5.0)
    win.show()
    doc = win.doc
    doc.edit("Rename plan", "project", lambda p: p.replace(name="Unsaved afternoon"))
    doc.edit("Batch", "workload", lambda p: p.replace(workload=p.workload.replace(batch=24)))
    while not win.autosaver.path.exists():  # sleep until the idle timer (or anything) is due
        app.processEvents(QEventLoop.ProcessEventsFlag.WaitForMoreEvents)
    expected.write_text(project_to_json(doc.project), encoding="utf-8")
    os._exit(3)  # a crash: no close event, no cleanup
    """
)


def test_recovery_after_a_crash_restores_the_exact_project(qtbot, project, tmp_path, _private_data_dir):
    original = save_project(project, tmp_path / "cluster plan.json")
    expected_file = tmp_path / "expected.json"
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run(
        [sys.executable, "-c", CRASHING_CHILD, str(original), str(expected_file)],
        env=env, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 3, done.stderr
    expected = load_project(expected_file)
    assert expected != project and expected.name == "Unsaved afternoon"
    [left] = AutosaveStore().sessions()  # the crashed process is gone, so its snapshot is offered

    from studio.gui.window.app import build_window

    win = build_window(project, threaded=False, autosave=True)  # the next start, same data folder
    qtbot.addWidget(win)
    asked = []
    win.choose_recovery = lambda s: asked.append(s) or "restore"
    restored = win.offer_recovery()
    assert [s.session_id for s in asked] == [left.session_id] == [restored.session_id]
    assert asked[0].project_name == "Unsaved afternoon"
    assert asked[0].original_path == str(original)
    assert win.doc.project == expected
    assert project_to_json(win.doc.project) == project_to_json(expected)
    assert win.doc.path == original and win.doc.is_dirty
    assert win.isWindowModified()
    assert load_project(original) == project  # the file on disk is untouched until the user saves
    # The old snapshot is gone; the restored work is protected again under this window's session.
    assert [s.session_id for s in AutosaveStore().sessions(include_running=True)] == [win.autosaver.session_id]
    win.ask_save = lambda: "discard"


def test_recovery_question_names_the_plan_and_the_time(qtbot, project, _private_data_dir):
    from studio.gui.window.recovery import recovery_question

    store = AutosaveStore()
    store.save(project, "0123abcd", "/plans/a.json")
    [info] = store.sessions(include_running=True)
    text, detail = recovery_question(info)
    assert text == f"Restore unsaved work from {info.saved_at_text}?"
    assert "GUI test plan" in detail and "/plans/a.json" in detail


def test_discard_and_later(qtbot, project, monkeypatch, _private_data_dir):
    import studio.io.autosave as autosave

    monkeypatch.setattr(autosave, "_is_running", lambda pid, host: False)  # as if those windows crashed
    store = AutosaveStore()
    store.save(project.replace(name="keep for later"), "aaaa")
    store.save(project.replace(name="throw away"), "bbbb")
    (store.root / "cccc.json").write_text("{not json", encoding="utf-8")  # a damaged snapshot
    win = _window(qtbot, project)
    answers = {"keep for later": "later", "throw away": "discard", "": "discard"}
    seen = []
    win.choose_recovery = lambda s: seen.append(s.project_name) or answers[s.project_name]
    assert win.offer_recovery() is None
    assert sorted(seen) == ["", "keep for later", "throw away"]
    assert [s.session_id for s in store.sessions()] == ["aaaa"]
    assert win.doc.project == project and not win.doc.is_dirty


def test_no_question_without_crashed_sessions(qtbot, project):
    win = _window(qtbot, project)
    win.choose_recovery = lambda s: (_ for _ in ()).throw(AssertionError("asked"))
    assert win.offer_recovery() is None
