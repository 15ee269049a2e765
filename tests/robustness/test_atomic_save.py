"""A save killed at any moment leaves the old file (or the new one), never a broken one."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from studio.core.errors import StudioError
from studio.io import project_file
from studio.io.project_file import backup_path, load_project, project_to_json, save_project
from tests.robustness.golden_files import golden_files


@pytest.fixture()
def two_versions(tmp_path):
    """A saved project file and an edited version of it."""
    old = load_project(golden_files()[0])
    new = old.replace(name="edited after lunch")
    target = tmp_path / "plan.json"
    save_project(old, target)
    return old, new, target


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def test_kill_at_the_final_rename_keeps_old_file(two_versions, monkeypatch):
    old, new, target = two_versions

    def killed(src, dst):
        raise KeyboardInterrupt("simulated kill before the rename")

    monkeypatch.setattr(project_file.os, "replace", killed)
    with pytest.raises(KeyboardInterrupt):
        save_project(new, target)
    monkeypatch.undo()
    assert load_project(target) == old
    assert _leftovers(target.parent) == []


def test_kill_during_write_keeps_old_file(two_versions, monkeypatch):
    old, new, target = two_versions

    def dies(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(project_file.os, "fsync", dies)
    with pytest.raises(StudioError, match=r"cannot save \(No space left on device\); the previous file is unchanged"):
        save_project(new, target)
    monkeypatch.undo()
    assert load_project(target) == old
    assert _leftovers(target.parent) == []


def test_every_interruption_point_leaves_a_loadable_file(two_versions, monkeypatch):
    """Interrupt each os-level step of the save in turn (link, copy, replace, fsync)."""
    old, new, target = two_versions
    calls: list[str] = []
    real = {name: getattr(os, name) for name in ("replace", "link", "fsync", "chmod")}

    def spy(name):
        def wrapped(*args, **kwargs):
            calls.append(name)
            return real[name](*args, **kwargs)

        return wrapped

    for name in real:
        monkeypatch.setattr(project_file.os, name, spy(name))
    save_project(new, target)
    monkeypatch.undo()
    steps = list(calls)
    assert "replace" in steps and "fsync" in steps
    for cut in range(len(steps)):
        save_project(old, target)
        seen = 0

        def maybe_die(name, cut=cut):
            def wrapped(*args, **kwargs):
                nonlocal seen
                if seen == cut:
                    raise KeyboardInterrupt(f"killed at step {cut} ({name})")
                seen += 1
                return real[name](*args, **kwargs)

            return wrapped

        for name in real:
            monkeypatch.setattr(project_file.os, name, maybe_die(name))
        with pytest.raises(KeyboardInterrupt):
            save_project(new, target)
        monkeypatch.undo()
        assert load_project(target) in (old, new), f"broken file after a kill at step {cut}"


def test_backup_holds_previous_version(two_versions):
    old, new, target = two_versions
    save_project(new, target)
    assert load_project(target) == new
    assert load_project(backup_path(target)) == old


def test_backup_by_copy_where_hard_links_fail(two_versions, monkeypatch):
    old, new, target = two_versions

    def no_links(src, dst):
        raise OSError(1, "Operation not permitted")

    monkeypatch.setattr(project_file.os, "link", no_links)
    save_project(new, target)
    assert load_project(backup_path(target)) == old
    assert not backup_path(target).samefile(target)


def test_permissions_of_existing_file_are_kept(two_versions):
    old, new, target = two_versions
    os.chmod(target, 0o640)
    save_project(new, target)
    assert (target.stat().st_mode & 0o777) == 0o640


def test_saving_through_a_symlink_updates_the_linked_file(two_versions, tmp_path):
    old, new, target = two_versions
    link = tmp_path / "link.json"
    link.symlink_to(target)
    save_project(new, link)
    assert link.is_symlink()
    assert load_project(target) == new


def test_missing_folder_is_a_clear_error(two_versions, tmp_path):
    old, _, _ = two_versions
    with pytest.raises(StudioError, match="the folder '.*missing-folder' does not exist"):
        save_project(old, tmp_path / "missing-folder" / "plan.json")
    assert not (tmp_path / "missing-folder").exists()


def test_unwritable_folder_is_a_clear_error(two_versions, tmp_path):
    old, _, _ = two_versions
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        if os.access(locked, os.W_OK):
            pytest.skip("running as root: a read-only folder is still writable")
        with pytest.raises(StudioError, match="cannot write in folder"):
            save_project(old, locked / "plan.json")
    finally:
        locked.chmod(0o700)


def test_process_killed_mid_save_leaves_old_file(two_versions, tmp_path):
    """A real process, SIGKILLed while it saves in a loop: the file always loads."""
    old, new, target = two_versions
    script = textwrap.dedent(
        f"""
        import os, signal, sys
        from studio.io.project_file import load_project, save_project
        a = load_project({str(target)!r})
        b = a.replace(name="edited after lunch")
        for i in range(10_000):
            save_project(b if i % 2 else a, {str(target)!r})
            if i == 25:
                os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run([sys.executable, "-c", script], cwd=root, timeout=60, capture_output=True)
    assert proc.returncode == -9, proc.stderr.decode()
    assert load_project(target) in (old, new)
    assert load_project(backup_path(target)) in (old, new)
    assert project_to_json(load_project(target)) in (project_to_json(old), project_to_json(new))
