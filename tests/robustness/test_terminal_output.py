"""Hostile text on its way to the terminal, and hostile output targets of the remaining commands
(issue 16): names with terminal escapes or bidirectional controls are printed as escapes by every
command (JSON stays JSON and decodes to the same name); bytes that are not UTF-8 on the command
line give one line, never a traceback; ``report -o`` / ``snapshot -o`` onto a FIFO, folder or
device link, or into a missing folder, exit 2 and leave the target as it was. Each case runs under
the hang guard of :mod:`tests.robustness.hostile`."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from studio.cli import main
from studio.terminal import TerminalText, terminal_safe
from tests.robustness.hostile import bounded, guarded

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "presets" / "examples" / "dgx-h100-2node-llama-405b.json"
NAME = "\x1b[31mRED\x1b[0m \u202eevil\x9b2J\u2028x"


@pytest.fixture
def hostile_project(tmp_path) -> Path:
    data = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    data["name"] = NAME
    data["description"] = "\x1b]0;window title\x07"
    path = tmp_path / "ansi.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_terminal_safe_escapes_controls_and_keeps_text():
    assert terminal_safe("plain text\n\tindented") == "plain text\n\tindented"
    assert terminal_safe("Llama — 8× H100 · µs") == "Llama — 8× H100 · µs"
    assert terminal_safe("\x1b[2J") == "\\u001b[2J"
    assert terminal_safe("a\u202eb\u200bc") == "a\\u202eb\\u200bc"
    assert terminal_safe("\U000e0041") == "\\udb40\\udc41"  # a tag character: a JSON surrogate pair
    assert terminal_safe("\udcff") == "\\udcff"  # a byte that was not UTF-8 on the command line
    assert (
        json.loads('"' + terminal_safe("\x1b\u202e\x85\U000e0041") + '"')
        == "\x1b\u202e\x85\U000e0041"
    )


def test_terminal_text_forwards_the_stream():
    import io

    buf = io.StringIO()
    out = TerminalText(buf)
    assert out.write("\x1bx") == 2
    out.writelines(["a\n", "\u202e"])
    assert buf.getvalue() == "\\u001bxa\n\\u202e"
    assert out.getvalue() == buf.getvalue() and out.wrapped is buf


@pytest.mark.parametrize(
    "argv",
    [
        ["plan"],
        ["plan", "--explain"],
        ["simulate", "--num-requests", "20"],
        ["sweep", "--top", "2"],
        ["export", "--engine", "vllm"],
    ],
)
def test_names_with_escapes_never_reach_the_terminal_raw(argv, hostile_project, capsys):
    code, err = guarded(lambda: main([*argv, str(hostile_project)]))
    assert err is None and code == 0
    out = capsys.readouterr()
    for text in (out.out, out.err):
        assert not any(ch in text for ch in "\x1b\x9b\x07\u202e\u2028"), text[:300]
    if argv[0] in ("plan", "simulate"):
        assert "\\u001b[31mRED" in out.out


@pytest.mark.parametrize("command", [["plan", "--json"], ["sweep", "--json", "--top", "1"]])
def test_json_output_of_a_hostile_project_stays_json(command, hostile_project, capsys):
    code, err = guarded(lambda: main([*command, str(hostile_project)]))
    assert err is None and code == 0
    text = capsys.readouterr().out
    assert "\x1b" not in text and "\u202e" not in text
    assert isinstance(json.loads(text), dict)  # escapes are JSON's own \uXXXX (see the first test)


def test_an_error_naming_hostile_text_is_one_escaped_line(capsys):
    code, err = guarded(lambda: main(["plan", "--model", "x\x1b[2J\u202e"]))
    assert err is None and code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "\x1b" not in lines[0] and "\u202e" not in lines[0]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX command-line bytes")
@pytest.mark.parametrize(
    "argv",
    [
        ["plan", "--model", b"llama\xff"],
        ["export", "--engine", "vllm", "--hosts", b"h\xff1,h2"],
        ["export", "--engine", "vllm", "--model-path", b"/models/\xff"],
        [
            "calibrate",
            "serving",
            str(ROOT / "tests/data/serving/trtllm-v0.17-h200-fp8-llama-3.1-8b.jsonl"),
            "--project",
            str(EXAMPLE),
            "--save-as",
            b"name\xff",
        ],
    ],
)
def test_bytes_that_are_not_utf8_on_the_command_line_are_one_line(argv, capsys):
    """Python hands such bytes over as lone surrogates (``\\udcff``)."""
    args = [os.fsdecode(a) if isinstance(a, bytes) else a for a in argv]
    code, err = guarded(lambda: main(args))
    assert err is None and code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "\udcff" not in lines[0], lines
    lines[0].encode("utf-8")  # printable on any UTF-8 terminal


def _target(kind: str, tmp_path: Path, suffix: str) -> Path:
    p = tmp_path / f"{kind}{suffix}"
    if kind == "fifo":
        os.mkfifo(p)
    elif kind == "zero":
        p.symlink_to("/dev/zero")
    elif kind == "folder":
        p.mkdir()
    elif kind == "missing":
        p = tmp_path / "no-such-folder" / f"out{suffix}"
    return p


@pytest.mark.parametrize("kind", ["fifo", "zero", "folder", "missing"])
@pytest.mark.parametrize(
    ("command", "suffix"), [("report", ".html"), ("report", ".pdf"), ("snapshot", ".png")]
)
def test_picture_and_report_targets_are_refused_and_left_alone(
    command, suffix, kind, tmp_path, capsys
):
    target = _target(kind, tmp_path, suffix)
    before = os.lstat(target).st_mode if os.path.lexists(target) else None
    code, err, peak = bounded(lambda: main([command, "-o", str(target)]))
    assert err is None and code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    after = os.lstat(target).st_mode if os.path.lexists(target) else None
    assert after == before
    if kind == "zero":
        assert stat.S_ISLNK(after)
    assert not (tmp_path / "no-such-folder").exists()
    assert peak < 64 * 2**20
