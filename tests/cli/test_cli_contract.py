"""The command line's contract: exit codes, error messages without tracebacks, no Qt on import,
and the GUI commands dispatching to ``studio.gui``."""

from __future__ import annotations

import subprocess
import sys
import types
from pathlib import Path

import pytest

from studio import cli as cli_module
from studio.core.errors import StudioError

ROOT = Path(__file__).resolve().parents[2]


def test_importing_cli_loads_no_pyside():
    code = (
        "import sys, studio.cli; studio.cli.build_parser(); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('PySide6', 'pyqtgraph', 'shiboken6')))"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_console_script_runs_as_module():
    proc = subprocess.run(
        [sys.executable, "-m", "studio.cli", "plan", "--tp", "zero"],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 2
    assert "--tp" in proc.stderr and "Traceback" not in proc.stderr


def test_help_lists_every_command(cli):
    r = cli("--help")
    assert r.code == 0
    for name in ("open", "snapshot", "plan", "sweep", "presets"):
        assert name in r.out


def test_every_registered_module_sets_func():
    parser = cli_module.build_parser()
    for argv in (["plan"], ["sweep"], ["presets"], ["open"], ["snapshot", "-o", "x.png"]):
        assert callable(parser.parse_args(argv).func)


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["plan", "--tp", "0"], "--tp"),
        (["plan", "--batch", "many"], "--batch"),
        (["plan", "--weight-dtype", "fp7"], "fp8"),
        (["plan", "--layers-per-stage", "63,x"], "--layers-per-stage"),
        (["sweep", "--tp", "8"], "unrecognized arguments: --tp"),
        (["sweep", "--objective", "speed"], "throughput"),
        (["presets", "cpus"], "gpus"),
        (["snapshot", "-o", "a.png", "--size", "big"], "WIDTHxHEIGHT"),
        (["frobnicate"], "invalid choice"),
    ],
)
def test_usage_errors_exit_2_with_message(cli, argv, needle):
    r = cli(*argv)
    assert r.code == 2
    assert needle in r.err
    assert "Traceback" not in r.err


@pytest.mark.parametrize(
    ("argv", "prog", "unknown"),
    [
        (["sweep", "--tp", "8"], "layout-studio sweep", "--tp"),
        (["plan", "--bogus"], "layout-studio plan", "--bogus"),
        (["calibrate", "nccl", "x.txt", "--link-kind", "ib-ndr", "--bogus"], "layout-studio calibrate nccl", "--bogus"),
        (["--bogus"], "layout-studio", "--bogus"),
    ],
)
def test_an_unknown_flag_points_at_the_named_commands_help(cli, argv, prog, unknown):
    r = cli(*argv)
    assert r.code == 2
    assert r.err.strip() == f"{prog}: error: unrecognized arguments: {unknown} (see `{prog} --help`)"


def test_studio_error_exits_2_without_traceback(cli, monkeypatch):
    def boom(args):
        raise StudioError("field 'x': bad value; allowed: a, b", "p.json")

    monkeypatch.setattr("studio.commands.presets_cmd.run", boom)
    r = cli("presets")
    assert r.code == 2
    assert r.err.strip() == "layout-studio: error: p.json: field 'x': bad value; allowed: a, b"


def test_unexpected_error_exits_1_short_message(cli, monkeypatch):
    def boom(args):
        raise RuntimeError("kaboom")

    monkeypatch.setattr("studio.commands.presets_cmd.run", boom)
    r = cli("presets")
    assert r.code == 1
    assert "RuntimeError: kaboom" in r.err and "--debug" in r.err
    assert "Traceback" not in r.err
    r = cli("presets", "--debug")
    assert r.code == 1
    assert "Traceback" in r.err


def test_missing_project_file_exits_2(cli, tmp_path):
    r = cli("plan", str(tmp_path / "nope.json"))
    assert r.code == 2
    assert "nope.json" in r.err


def test_broken_project_file_names_the_file(cli, tmp_path):
    bad = tmp_path / "broken.json"
    bad.write_text("{not json", encoding="utf-8")
    r = cli("plan", str(bad), "--json")
    assert r.code == 2
    assert "broken.json" in r.err and "JSON" in r.err
    assert r.out == ""


# --------------------------------------------------------------------------- GUI dispatch
@pytest.fixture
def fake_gui(monkeypatch):
    """Record the calls the CLI makes into ``studio.gui`` (whose real code needs a display)."""
    calls: list[tuple] = []
    app = types.ModuleType("studio.gui.window.app")
    snap = types.ModuleType("studio.gui.window.snapshot")

    def run(path=None, **example):
        calls.append(("run", path, *example.values()))
        return 0

    def render_main_window(project, out, size=(1280, 800), view="main"):
        calls.append(("render", project, out, size, view))
        return out

    app.run = run
    snap.render_main_window = render_main_window
    monkeypatch.setitem(sys.modules, "studio.gui.window.app", app)
    monkeypatch.setitem(sys.modules, "studio.gui.window.snapshot", snap)
    return calls


def test_no_command_opens_gui_on_example(cli, fake_gui):
    assert cli().code == 0
    assert fake_gui == [("run", None)]


def test_open_file(cli, fake_gui, tmp_path):
    f = tmp_path / "p.json"
    f.write_text("{}", encoding="utf-8")
    assert cli("open", str(f)).code == 0
    assert fake_gui == [("run", str(f))]
    r = cli("open", str(tmp_path / "missing.json"))
    assert r.code == 2 and "missing.json" in r.err
    assert cli("open", "l40s-8x-llama-70b-fp8").code == 0  # a bundled example's id
    assert fake_gui[-1] == ("run", None, "l40s-8x-llama-70b-fp8")


def test_snapshot_dispatch(cli, fake_gui, tmp_path):
    out = tmp_path / "shot.png"
    r = cli("snapshot", "-o", str(out), "--size", "1600x900")
    assert r.code == 0
    assert fake_gui == [("render", None, out, (1600, 900), "main")]
    assert cli("snapshot", "-o", str(out), "--view", "explorer").code == 0
    assert fake_gui[-1] == ("render", None, out, (1280, 800), "explorer")
    assert cli("snapshot", "-o", str(tmp_path / "shot.jpg")).code == 2
    assert cli("snapshot", "-o", str(tmp_path / "no" / "shot.png")).code == 2
