"""Errors below the commands name inputs by field; the command line maps each field to its flag."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

from studio.commands.options.flags import FLAGS, cli_message
from studio.core.errors import StudioError
from tests.source_trees import module_tree as _tree

STUDIO = Path(__file__).resolve().parents[2] / "studio"
HEADLESS = ("core", "engine", "io", "service")
#: A command-line flag of ours inside a string (not an engine's flag such as vLLM's --port).
OUR_FLAG = re.compile(
    r"(?<![\w-])--(" + "|".join(re.escape(f[2:]) for f in FLAGS.values()) + r")\b"
)


@functools.cache
def _strings_and_fields() -> tuple[tuple[Path, int, str, str], ...]:
    return tuple(_scan_strings_and_fields())


def _scan_strings_and_fields():
    for layer in HEADLESS:
        for path in (STUDIO / layer).rglob("*.py"):
            tree = _tree(path)
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


@functools.cache
def _cli_flags() -> frozenset[str]:
    """Every ``--long`` option of every layout-studio command."""
    import argparse

    from studio.cli import build_parser

    out: set[str] = set()
    todo = [build_parser()]
    while todo:
        parser = todo.pop()
        for action in parser._actions:
            out.update(o for o in action.option_strings if o.startswith("--") and o != "--help")
            if isinstance(action, argparse._SubParsersAction):
                todo.extend(action.choices.values())
    return frozenset(out)


#: Strings that hold one of our flag names as another tool's flag (GenAI-Perf's --concurrency).
OTHER_TOOLS = {("evaluate.py", "--concurrency")}


def flag_hits(root: Path = STUDIO) -> list[str]:
    """``file:line: --flag`` for each flag of ours in a string (docstrings aside) of the headless
    packages under ``root``. ``io/export`` is left out: it writes the engines' own command lines,
    whose flags share names with ours (``--model``); so is a string that spells out a whole
    ``layout-studio …`` command for the reader to run (the report's pointer to every node's
    commands)."""
    flags = _cli_flags()
    pattern = re.compile(
        r"(?<![\w-])(" + "|".join(map(re.escape, sorted(flags, key=len, reverse=True))) + r")(?![\w-])"
    )
    hits = []
    for layer in HEADLESS:
        for path in sorted((root / layer).rglob("*.py")):
            if "export" in path.relative_to(root).parts:
                continue
            docstrings: set[int] = set()
            # one walk: it visits a module, class or function before the docstring in its body
            for node in ast.walk(_tree(path)):
                if isinstance(node, _WITH_DOCSTRING):
                    if node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant):
                        docstrings.add(id(node.body[0].value))
                elif (isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
                        and "layout-studio " not in node.value):  # a whole command to run is fine
                    hits += [
                        f"{path.name}:{node.lineno}: {m.group(0)}"
                        for m in pattern.finditer(node.value)
                        if (path.name, m.group(0)) not in OTHER_TOOLS
                    ]
    return hits


#: The nodes whose body may start with a docstring.
_WITH_DOCSTRING = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def test_no_cli_flag_in_any_headless_text():
    """Not only errors: warnings' fixes, notes and explanations below the commands name no flag of
    ours either (a window would tell its user to pass one)."""
    assert {"--disagg", "--cp", "--gpu"} <= _cli_flags(), "the parser scan is broken"
    assert flag_hits() == []


def test_a_flag_in_a_warning_fix_is_found(tmp_path):
    """The scan sees a flag inside an f-string part of a warning's fix, and not in a docstring."""
    engine = tmp_path / "engine"
    engine.mkdir()
    (engine / "rules.py").write_text(
        'def f(x):\n    """Use --cp here is fine."""\n    return f"set it (--cp, --cp-mode): {x}"\n',
        encoding="utf-8",
    )
    (engine / "report.py").write_text('X = "run `layout-studio export --engine vllm`"\n', encoding="utf-8")
    assert flag_hits(tmp_path) == ["rules.py:3: --cp", "rules.py:3: --cp-mode"]


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
