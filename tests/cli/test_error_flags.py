"""Errors below the commands name inputs by field; the command line maps each field to its flag."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from studio.commands.flags import FLAGS, cli_message
from studio.core.errors import StudioError

STUDIO = Path(__file__).resolve().parents[2] / "studio"
HEADLESS = ("core", "engine", "io", "service")
#: A command-line flag of ours inside a string (not an engine's flag such as vLLM's --port).
OUR_FLAG = re.compile(
    r"(?<![\w-])--(" + "|".join(re.escape(f[2:]) for f in FLAGS.values()) + r")\b"
)


def _strings_and_fields():
    for layer in HEADLESS:
        for path in (STUDIO / layer).rglob("*.py"):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "StudioError":
                    for kw in node.keywords:
                        if kw.arg == "field" and isinstance(kw.value, ast.Constant):
                            yield path, node.lineno, "field", kw.value.value
                    for arg in ast.walk(node):
                        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                            yield path, node.lineno, "text", arg.value


def test_every_field_named_below_the_commands_has_a_flag():
    fields = {value for _, _, kind, value in _strings_and_fields() if kind == "field"}
    assert fields, "no error names a field: the scan is broken"
    assert fields <= set(FLAGS), sorted(fields - set(FLAGS))


def test_no_cli_flag_in_headless_error_messages():
    hits = [
        f"{p.name}:{line}: {text!r}"
        for p, line, kind, text in _strings_and_fields()
        if kind == "text" and OUR_FLAG.search(text)
    ]
    assert hits == []


def test_cli_message_puts_the_flag_first():
    exc = StudioError(
        "the node count must be between 1 and 4096 (got 0)", "topo.txt", field="nodes"
    )
    assert (
        cli_message(exc) == "topo.txt: --nodes: the node count must be between 1 and 4096 (got 0)"
    )
    assert (
        str(exc) == "topo.txt: the node count must be between 1 and 4096 (got 0)"
    )  # the window's text
    assert cli_message(StudioError("plain")) == "plain"
    assert cli_message(StudioError("x", field="not-a-flag")) == "x"
