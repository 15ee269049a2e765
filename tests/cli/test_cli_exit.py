"""How a ``layout-studio`` process ends: a headless command skips the interpreter's teardown
(issue 14: start fast) and still flushes its output, keeps its exit code and runs the exit handlers
registered while it ran."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from studio import cli

ROOT = Path(__file__).resolve().parents[2]

#: Runs ``entry_point`` as the console script does. A handler registered while the command runs
#: must still run; an object freed only by the interpreter's teardown says so on stderr.
CHILD = """
import atexit, sys
from studio import cli

class Teardown:
    def __del__(self):
        sys.stderr.write("torn down\\n")

keep = Teardown()
main = cli.main

def main_then_register(argv=None):
    code = main(argv)
    atexit.register(lambda: sys.stderr.write("late handler ran\\n"))
    return code

cli.main = main_then_register
sys.argv = ["layout-studio", *sys.argv[1:]]
cli.entry_point()
"""


def run_child(*argv: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONWARNINGS", "PYTHONDEVMODE")}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run([sys.executable, "-c", CHILD, *argv], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)


def test_a_headless_command_flushes_its_output_and_keeps_its_code():
    proc = run_child("presets", "--json")
    assert proc.returncode == 0, proc.stderr
    assert set(json.loads(proc.stdout)) == {"gpus", "models", "links", "nodes", "workloads", "engines"}  # all of it, flushed
    assert "late handler ran" in proc.stderr
    assert "torn down" not in proc.stderr  # the teardown was skipped


def test_bad_input_still_exits_2_with_its_message():
    proc = run_child("sweep", "--model", "nosuch")
    assert proc.returncode == 2
    assert "layout-studio: error: unknown model 'nosuch'" in proc.stderr
    assert "late handler ran" in proc.stderr


@pytest.mark.parametrize("argv", [[], ["--debug"], ["open"], ["snapshot", "-o", "a.png"], ["--debug", "open"]])
def test_window_commands_end_the_usual_way(argv):
    assert not cli.fast_exit_allowed(argv)


def test_a_watched_process_ends_the_usual_way(monkeypatch):
    monkeypatch.setattr(sys, "gettrace", lambda: object())
    assert not cli.fast_exit_allowed(["sweep"])
    monkeypatch.undo()
    monkeypatch.setattr(sys, "warnoptions", ["error"])
    assert not cli.fast_exit_allowed(["sweep"])


def test_a_failed_flush_leaves_the_exit_to_the_interpreter(monkeypatch):
    class Closed:
        def flush(self):
            raise BrokenPipeError

    exits: list[int] = []
    monkeypatch.setattr(os, "_exit", exits.append)
    monkeypatch.setattr(sys, "stdout", Closed())
    cli._exit_now([0])
    cli._exit_now([])
    assert exits == []


def test_a_command_that_drew_with_qt_ends_the_usual_way(monkeypatch):
    exits: list[int] = []
    monkeypatch.setattr(os, "_exit", exits.append)
    monkeypatch.setitem(sys.modules, "PySide6.QtCore", object())
    cli._exit_now([0])
    assert exits == []

