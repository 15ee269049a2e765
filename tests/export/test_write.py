"""``export -o DIR`` and the dialog's Save write the files as a set: targets are checked before
anything is written, files land through a temporary folder, and nothing is left half-replaced."""

from __future__ import annotations

import os
import stat

import pytest

from studio.cli import main
from studio.core.errors import StudioError
from studio.io.export.write import write_files

FILES = {"a-serve.yaml": "x: 1\n", "a-launch.sh": "#!/usr/bin/env bash\necho hi\n"}


def _left(folder) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_writes_every_file_and_makes_scripts_executable(tmp_path):
    out = tmp_path / "new" / "folder"
    paths = write_files(FILES, out)
    assert [p.name for p in paths] == list(FILES)
    assert _left(out) == sorted(FILES)  # no temporary folder left
    assert (out / "a-serve.yaml").read_text() == "x: 1\n"
    assert os.stat(out / "a-launch.sh").st_mode & stat.S_IXUSR
    assert not os.stat(out / "a-serve.yaml").st_mode & stat.S_IXUSR


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_target_is_refused_before_anything_is_written(tmp_path):
    (tmp_path / "a-serve.yaml").write_text("mine")
    os.mkfifo(tmp_path / "a-launch.sh")
    with pytest.raises(StudioError, match="not a regular file; nothing was written"):
        write_files(FILES, tmp_path)
    assert (tmp_path / "a-serve.yaml").read_text() == "mine"
    assert stat.S_ISFIFO(os.lstat(tmp_path / "a-launch.sh").st_mode)
    assert _left(tmp_path) == ["a-launch.sh", "a-serve.yaml"]


def test_a_folder_target_or_a_file_as_folder_is_refused(tmp_path):
    (tmp_path / "a-serve.yaml").mkdir()
    with pytest.raises(StudioError, match="not a regular file"):
        write_files(FILES, tmp_path)
    assert _left(tmp_path) == ["a-serve.yaml"]
    f = tmp_path / "plain"
    f.write_text("keep")
    with pytest.raises(StudioError, match="must name a folder"):
        write_files(FILES, f)
    assert f.read_text() == "keep"


def test_a_failed_write_leaves_the_folder_as_it_was(tmp_path, monkeypatch):
    (tmp_path / "a-serve.yaml").write_text("mine")
    calls = []

    def full_disk(fd):
        calls.append(fd)
        if len(calls) == 2:  # the second file does not fit
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    with pytest.raises(StudioError, match="No space left on device"):
        write_files(FILES, tmp_path)
    monkeypatch.undo()
    assert _left(tmp_path) == ["a-serve.yaml"] and (tmp_path / "a-serve.yaml").read_text() == "mine"


def test_cli_output_onto_a_file_is_one_line_exit_2(tmp_path, capsys):
    f = tmp_path / "taken"
    f.write_text("keep")
    assert main(["export", "--engine", "vllm", "--format", "yaml", "-o", str(f)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "must name a folder" in err and f.read_text() == "keep"
    out = tmp_path / "out"
    assert main(["export", "--engine", "vllm", "--format", "yaml", "-o", str(out)]) == 0
    assert _left(out) == ["vllm-commands.sh", "vllm-serve.yaml"]
