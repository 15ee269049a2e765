"""Autosave and recovery: snapshot, crash, restart, restore, compare."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from datetime import datetime, timezone
from pathlib import Path

import pytest

from studio.core.errors import StudioError
from studio.io.autosave import AutosaveStore, IdleTimer, new_session_id, user_data_dir
from studio.io.project_file import load_project, project_to_json
from tests.robustness.golden_files import GOLDEN

ROOT = Path(__file__).resolve().parents[2]
PLAN = GOLDEN / "v1" / "dgx-h100-2node.json"


@pytest.fixture()
def data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("LAYOUT_STUDIO_DATA_DIR", str(tmp_path / "data"))
    return tmp_path / "data"


def test_data_dir_honours_the_environment(data_dir):
    assert user_data_dir() == data_dir
    assert AutosaveStore().root == data_dir / "autosave"


def test_crash_then_restore_gives_back_the_exact_project(data_dir):
    """A separate process edits, autosaves and dies without cleaning up; a new start restores."""
    script = textwrap.dedent(
        f"""
        import os
        from studio.io.autosave import AutosaveStore
        from studio.io.project_file import load_project
        p = load_project({str(PLAN)!r})
        p = p.replace(name="unsaved afternoon of work", workload=p.workload.replace(isl=3000))
        AutosaveStore().save(p, "0123abcd", original_path={str(PLAN)!r})
        os._exit(1)  # crash: no discard, no clean exit
        """
    )
    env = {**os.environ, "LAYOUT_STUDIO_DATA_DIR": str(data_dir)}
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, timeout=60, capture_output=True)
    assert proc.returncode == 1, proc.stderr.decode()

    store = AutosaveStore()  # the next start
    found = store.sessions(exclude=new_session_id())
    assert [s.session_id for s in found] == ["0123abcd"]
    info = found[0]
    assert info.error is None
    assert info.original_path == str(PLAN)
    assert info.project_name == "unsaved afternoon of work"
    assert info.saved_at is not None and abs((datetime.now(timezone.utc) - info.saved_at).total_seconds()) < 120
    assert info.pid != os.getpid()

    restored = store.restore("0123abcd")
    expected = load_project(PLAN)
    expected = expected.replace(name="unsaved afternoon of work", workload=expected.workload.replace(isl=3000))
    assert restored == expected
    assert project_to_json(restored) == project_to_json(expected)

    store.discard("0123abcd")
    assert store.sessions() == []


def test_running_sessions_are_not_offered(data_dir):
    store = AutosaveStore()
    sid = new_session_id()
    store.save(load_project(PLAN), sid)
    assert store.sessions() == []  # this very process owns it
    assert [s.session_id for s in store.sessions(include_running=True)] == [sid]


def test_snapshot_is_skipped_when_nothing_changed(data_dir):
    store = AutosaveStore()
    sid = new_session_id()
    p = load_project(PLAN)
    path = store.save(p, sid)
    first = path.stat().st_mtime_ns
    os.utime(path, ns=(first - 10**9, first - 10**9))
    store.save(p, sid)
    assert path.stat().st_mtime_ns == first - 10**9
    store.save(p.replace(name="changed"), sid)
    assert json.loads(path.read_text())["project"]["name"] == "changed"


def test_sessions_are_listed_newest_first(data_dir):
    store = AutosaveStore()
    p = load_project(PLAN)
    store.save(p, "aa", now=datetime(2025, 1, 1, 9, 0, tzinfo=timezone.utc))
    store.save(p, "bb", now=datetime(2025, 1, 1, 10, 0, tzinfo=timezone.utc))
    ids = [s.session_id for s in store.sessions(include_running=True)]
    assert ids == ["bb", "aa"]


def test_damaged_snapshot_is_listed_with_its_error(data_dir):
    store = AutosaveStore()
    store.root.mkdir(parents=True)
    (store.root / "dead.json").write_bytes(b'{"format": "layout-studio-autosave", "version": 1, "project": {')
    (store.root / "beef.json").write_text(json.dumps({"format": "something-else"}))
    (store.root / "ace.json").write_text(json.dumps({"format": "layout-studio-autosave", "version": 9, "project": {}}))
    found = {s.session_id: s.error for s in store.sessions()}
    assert "not valid JSON" in found["dead"]
    assert found["beef"] == "not a Layout Studio autosave file"
    assert "newer Layout Studio (version 9)" in found["ace"]
    with pytest.raises(StudioError, match="not valid JSON"):
        store.restore("dead")
    store.discard("dead")
    assert "dead" not in {s.session_id for s in store.sessions()}


def test_hostile_snapshot_project_is_validated(data_dir):
    store = AutosaveStore()
    store.root.mkdir(parents=True)
    project = json.loads(PLAN.read_text())
    project["layout"]["tp"] = -1
    (store.root / "bad0.json").write_text(
        json.dumps({"format": "layout-studio-autosave", "version": 1, "pid": 0, "project": project})
    )
    with pytest.raises(StudioError, match="field 'layout.tp'"):
        store.restore("bad0")


@pytest.mark.parametrize("sid", ["", "../../etc/passwd", "a/b", "x" * 65, "ZZ"])
def test_session_ids_cannot_escape_the_folder(data_dir, sid):
    with pytest.raises(StudioError, match="invalid autosave session id"):
        AutosaveStore().path_of(sid)


def test_unwritable_data_folder_is_a_clear_error(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    store = AutosaveStore(blocker / "autosave")
    with pytest.raises(StudioError, match="cannot create the autosave folder"):
        store.save(load_project(PLAN), "abc")


def test_idle_timer():
    t = IdleTimer(idle_s=3.0, min_interval_s=30.0)
    assert not t.due(100.0)
    t.changed(100.0)
    assert not t.due(102.9)
    assert t.due(103.0)
    for now in range(104, 134):  # edits every second: never idle, but saved within 30 s
        t.changed(float(now))
        if t.due(float(now)):
            break
    assert now == 130
    t.saved()
    assert not t.due(1000.0)
    with pytest.raises(StudioError):
        IdleTimer(idle_s=0)
