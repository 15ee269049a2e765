"""The command line imports only what the command on the line uses (issue 14: start fast)."""

from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from studio import cli as cli_module

ROOT = Path(__file__).resolve().parents[2]

#: Runs the CLI in a fresh interpreter, then prints which of the watched modules it loaded.
PROBE = """
import contextlib, io, json, sys
from studio.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    code = main(sys.argv[1:])
watched = ("PySide6", "shiboken6", "pyqtgraph", "numpy", "yaml", "studio.")
print(json.dumps({"code": code, "modules": sorted(m for m in sys.modules if m.startswith(watched))}))
"""

QT = ("PySide6", "shiboken6", "pyqtgraph")


def loaded_by(*argv: str) -> list[str]:
    """Modules (of the watched families) a fresh ``layout-studio *argv`` process imported."""
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, *argv], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["code"] == 0
    return report["modules"]


def test_each_module_registers_exactly_its_commands():
    for module in cli_module.COMMAND_MODULES:
        parser = argparse.ArgumentParser()
        sub = parser.add_subparsers()
        importlib.import_module(module).register(sub)
        expected = sorted(name for name, mod in cli_module.COMMANDS.items() if mod == module)
        assert sorted(sub.choices) == expected, module


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        ([], []),
        (["--version"], []),
        (["sweep", "--json"], ["studio.commands.sweep"]),
        (["import-topo", "t.txt"], ["studio.commands.import_topo"]),
        (["snapshot", "-o", "a.png"], ["studio.commands.gui_cmd"]),
        (["--help"], cli_module.COMMAND_MODULES),
        (["frobnicate"], cli_module.COMMAND_MODULES),
        (["--bogus", "plan"], cli_module.COMMAND_MODULES),
    ],
)
def test_modules_for_picks_the_command_module(argv, expected):
    assert cli_module.modules_for(argv) == expected


def test_version_loads_no_command_engine_or_qt():
    mods = loaded_by("--version")
    assert not [m for m in mods if m.startswith(("studio.commands.", "studio.engine", "studio.io", "numpy", *QT))], mods
    assert "studio.core.architecture" not in mods  # studio.core's names load on first use


def test_plan_loads_no_qt_and_no_exporters():
    mods = loaded_by("plan", "--json")
    assert "studio.engine.plan.evaluate" in mods  # the probe sees what a command really loads
    assert not [m for m in mods if m.startswith(QT)], mods
    assert not [m for m in mods if m.startswith(("studio.io.export", "yaml", "studio.commands.export"))], mods


def test_sweep_loads_only_its_own_command():
    mods = loaded_by("sweep", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--json", "--top", "1")
    commands = sorted(m for m in mods if m in cli_module.COMMAND_MODULES)  # helpers such as output may load
    assert commands == ["studio.commands.sweep"]
    assert not [m for m in mods if m.startswith((*QT, "studio.io.export", "yaml"))], mods
    # no SLO asked for, a model preset: neither the SLO check nor the checkpoint size hints load
    assert not [m for m in mods if m in ("studio.service.slo", "studio.io.importers.checkpoint_size")], mods


def test_a_command_loads_only_the_helpers_it_imports():
    """A command imports its helpers from their own modules (no facade gathering all of them):
    ``presets`` prints tables and JSON, so it loads the output helpers and not the project flags,
    the layout flags or the project a command line describes."""
    mods = loaded_by("presets", "gpus", "--json")
    assert "studio.commands.output" in mods
    helpers = ("studio.commands.options.project_args", "studio.commands.options.project_flags", "studio.commands.options.layout_args",
               "studio.commands.options.arg_types")
    assert not [m for m in mods if m in helpers], mods


def test_help_still_lists_every_command(capsys):
    assert cli_module.main(["--help"]) == 0
    out = capsys.readouterr().out
    for name in cli_module.COMMANDS:
        assert name in out


def test_version_is_looked_up_only_when_asked(capsys, monkeypatch):
    calls: list[int] = []
    monkeypatch.setattr(cli_module, "_version", lambda: calls.append(1) or "9.9")
    cli_module.build_parser(["studio.commands.plan"]).parse_args(["plan"])
    assert calls == []
    assert cli_module.main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == "layout-studio 9.9"
    assert calls == [1]
