"""Autosave and crash recovery in the window: snapshots after idle time, gone after a clean save or
close, and after a real crash (a child process that ``os._exit``s) the next window restores the
exact project, unsaved and with its original file."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

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


def _autosaver(qtbot, project):
    """The autosaver a window with an autosave store keeps (:class:`studio.gui.window.recovery.
    Autosaver` on its document, as ``MainWindow(..., autosave=AutosaveStore())`` makes it), without
    the window: the snapshot, failure and recovery-offer logic lives there and in
    :func:`studio.gui.window.recovery.offer_recovery`, which ``MainWindow.offer_recovery`` calls.
    The window's own part (an autosaver made, kept and fed by a real window, the snapshot deleted
    on a clean close, a crashed window's work restored through ``MainWindow.offer_recovery``) is
    tested with real windows below and in the crashing child."""
    from studio.gui.document import ProjectDocument
    from studio.gui.window.recovery import Autosaver

    qtbot.addWidget  # noqa: B018 - the qtbot fixture creates the QApplication the timer needs
    doc = ProjectDocument(project, evaluate=lambda p: None, threaded=False)
    return Autosaver(doc, AutosaveStore(), idle=IdleTimer(idle_s=0.05, min_interval_s=5.0))


def _offer_recovery(saver, choose):
    """What ``MainWindow.offer_recovery`` asks (every crashed session but the window's own, its
    error box failing the test) for a window whose autosaver is ``saver``."""
    from studio.gui.window.recovery import offer_recovery

    return offer_recovery(saver.doc, saver.store, choose, lambda title, text: pytest.fail(f"{title}: {text}"),
                          saver.session_id)


def test_unsaved_work_is_snapshotted_after_idle_and_dropped_on_save(qtbot, project, tmp_path):
    saver = _autosaver(qtbot, project)
    doc = saver.doc
    assert not saver.tick() and not saver.path.exists()  # clean: nothing to protect
    doc.edit("Rename plan", "project", lambda p: p.replace(name="Afternoon of work"))
    qtbot.waitUntil(saver.path.exists, timeout=30_000)
    assert AutosaveStore().restore(saver.session_id) == doc.project
    doc.save(tmp_path / "plan.json")
    assert not saver.path.exists()  # a clean save leaves nothing to recover
    doc.edit("Rename plan", "project", lambda p: p.replace(name="More work"))
    qtbot.waitUntil(saver.path.exists, timeout=30_000)
    doc.undo_stack.undo()  # back to the saved state: clean again
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
    saver = _autosaver(qtbot, project)
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    saver.store = AutosaveStore(blocker / "autosave")
    messages = []
    saver.doc.message.connect(messages.append)
    saver.doc.edit("Rename plan", "project", lambda p: p.replace(name="Nowhere to go"))
    assert not saver.save_now()
    assert any(m.startswith("Autosave failed") and "not-a-folder" in m for m in messages)
    assert saver.doc.project.name == "Nowhere to go"


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
    saver = _autosaver(qtbot, project)
    answers = {"keep for later": "later", "throw away": "discard", "": "discard"}
    seen = []
    assert _offer_recovery(saver, lambda s: seen.append(s.project_name) or answers[s.project_name]) is None
    assert sorted(seen) == ["", "keep for later", "throw away"]
    assert [s.session_id for s in store.sessions()] == ["aaaa"]
    assert saver.doc.project == project and not saver.doc.is_dirty


def test_no_question_without_crashed_sessions(qtbot, project):
    saver = _autosaver(qtbot, project)
    assert _offer_recovery(saver, lambda s: (_ for _ in ()).throw(AssertionError("asked"))) is None
